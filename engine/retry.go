package engine

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/events"
)

// fail ends the run with a terminal failure.
func (t *turn) fail(ctx context.Context, stepID, code, message string) (verdict, error) {
	if err := t.record(ctx, events.RunFailed, events.RunFailedData{StepID: stepID, Code: code, Message: message}); err != nil {
		return verdict{}, err
	}
	t.e.logger.Info("run failed", "tenant", t.tenant, "run", t.st.RunID, "step", stepID, "code", code)
	return finished, nil
}

// retry records a failed try of a step and makes the run's next turn
// happen at the next try (see timer), or fails the run once the step has
// used its MaxAttempts.
func (t *turn) retry(ctx context.Context, stepID, typ, code, message string) (verdict, error) {
	attempt := 1
	if p := t.st.Pending(); p != nil && (stepID == "" || p.StepID == "" || p.StepID == stepID) {
		attempt = p.Attempts + 1
	}
	if attempt >= t.e.cfg.MaxAttempts {
		return t.fail(ctx, stepID, apierr.CodeAttemptsExhausted,
			fmt.Sprintf("step %s failed %d times; last: %s: %s", stepID, attempt, code, message))
	}
	at := t.e.now().Add(backoff(t.e.cfg.RetryBase, attempt, randomJitter())).UTC()
	if err := t.record(ctx, events.StepFailed, events.StepFailedData{StepID: stepID, Type: typ, Attempt: attempt,
		Code: code, Message: message, RetryAt: at}); err != nil {
		return verdict{}, err
	}
	return t.e.timer(ctx, t.st, at)
}
