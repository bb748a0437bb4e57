package engine

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/runstate"
)

// fail ends the run with a terminal failure of the step stepID: "", the
// call to the Bridge (runstate.BridgeStep). The failure records the
// step's type when the turn knows it: the step the Bridge answered.
func (t *turn) fail(ctx context.Context, stepID, code, message string) (verdict, error) {
	d := events.RunFailedData{StepID: stepID, Code: code, Message: message}
	switch {
	case stepID == "":
		d.StepID, d.Type = runstate.BridgeStep, runstate.BridgeStep
	case t.answered != nil && t.answered.StepID == stepID:
		d.Type = string(t.answered.Type)
	}
	if err := t.record(ctx, events.RunFailed, d); err != nil {
		return verdict{}, err
	}
	t.e.logger.Info("run failed", "tenant", t.tenant, "run", t.st.RunID, "step", d.StepID, "code", code)
	return finished, nil
}

// retry records a failed try of a step and makes the run's next turn
// happen at the next try (see timer), or fails the run once the step has
// used its MaxAttempts.
//
// A failure of no named step is the call to the Bridge's
// (runstate.BridgeStep), whose tries the step the Bridge names next
// goes on counting, as the run's state does.
func (t *turn) retry(ctx context.Context, stepID, typ, code, message string) (verdict, error) {
	name := stepID
	if stepID == "" {
		name, typ = runstate.BridgeStep, runstate.BridgeStep
	}
	attempt := 1
	if p := t.st.Pending(); p != nil && (p.StepID == name || p.Bridge()) {
		attempt = p.Attempts + 1
	}
	if attempt >= t.e.cfg.MaxAttempts {
		return t.fail(ctx, stepID, apierr.CodeAttemptsExhausted,
			fmt.Sprintf("step %s failed %d times; last: %s: %s", name, attempt, code, message))
	}
	at := t.e.now().Add(backoff(t.e.cfg.RetryBase, attempt, randomJitter())).UTC()
	if err := t.record(ctx, events.StepFailed, events.StepFailedData{StepID: name, Type: typ, Attempt: attempt,
		Code: code, Message: message, RetryAt: at}); err != nil {
		return verdict{}, err
	}
	return t.e.timer(ctx, t.st, at)
}
