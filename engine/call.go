package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/bridgeclient"
	"github.com/heraldhq/herald/events"
)

// execute calls the Bridge for the next step and records what it
// answered; a woken turn steps aside with the answer instead.
func (t *turn) execute(ctx context.Context) (verdict, error) {
	url, secret, err := t.e.binding(ctx, t.tenant, false)
	if errors.Is(err, apierr.ErrNotFound) {
		return t.fail(ctx, "", apierr.CodeBridgeNotConfigured, "no Bridge is registered for the tenant")
	}
	if err != nil {
		return verdict{}, err
	}
	payload, err := t.e.payload(ctx, t.tenant, t.st.TransactionID)
	if err != nil {
		return verdict{}, err
	}
	if t.sub == nil {
		if t.sub, err = t.subscriber(); err != nil {
			return verdict{}, err
		}
	}
	if t.due != 0 {
		t.e.noteLate(t.due)
		t.due = 0
	}
	req := wire.ExecuteRequest{WorkflowID: t.st.WorkflowID, RunID: t.st.RunID, Payload: payload, Subscriber: t.sub}
	if req.Controls, req.Locale, err = t.controls(); err != nil {
		return verdict{}, err
	}
	if req.Links, err = t.e.links(t.tenant, req.WorkflowID, t.sub); err != nil {
		return verdict{}, err
	}
	for _, s := range t.st.CompletedSteps() {
		req.Steps = append(req.Steps, wire.CompletedStep{StepID: s.StepID, Type: wire.StepType(s.Type), Output: s.Output})
	}
	out, err := t.e.client.Execute(ctx, url, secret, req)
	if err != nil {
		return verdict{}, err
	}
	if out.Kind == bridgeclient.OutcomeTerminal && out.Code == apierr.CodeBridgeUnauthorized {
		// The secret may have rotated since this process last looked:
		// refused with an old secret is not refused with the newest.
		if url2, secret2, err := t.e.binding(ctx, t.tenant, true); err == nil && (secret2 != secret || url2 != url) {
			if out, err = t.e.client.Execute(ctx, url2, secret2, req); err != nil {
				return verdict{}, err
			}
		}
	}
	if t.woke {
		t.woke, t.out = false, &out
		return steppedAside(t), nil
	}
	return t.answer(ctx, out)
}

// answer records what the Bridge answered.
func (t *turn) answer(ctx context.Context, out bridgeclient.Outcome) (verdict, error) {
	t.answered = out.Step
	// The run's writes keep their order: the completion the call
	// followed, and the frozen subscriber, go before whatever the answer
	// leads to (a delivery, a digest). A `run` step leads to nothing but
	// its record, which takes the frozen subscriber along, and the run's
	// end takes the completion along (see record).
	if out.Kind != bridgeclient.OutcomeCompleted &&
		(t.resumed != nil || out.Kind != bridgeclient.OutcomeStep || out.Step.Type != wire.StepRun) {
		if err := t.flush(ctx); err != nil {
			return verdict{}, err
		}
	}
	switch out.Kind {
	case bridgeclient.OutcomeCompleted:
		return goOn, t.record(ctx, events.RunCompleted, events.RunCompletedData{})
	case bridgeclient.OutcomeTerminal:
		return t.fail(ctx, t.pendingID(out.StepID), out.Code, out.Message)
	case bridgeclient.OutcomeRetryable:
		return t.retry(ctx, t.pendingID(out.StepID), "", out.Code, out.Message)
	}
	return t.stepAnswer(ctx, out.Step)
}

// pendingID names the step a failure belongs to: the Bridge's, else the
// step in progress; "" for the call to the Bridge (no step in progress,
// or the call to the Bridge is).
func (t *turn) pendingID(id string) string {
	if id != "" {
		return id
	}
	if p := t.st.Pending(); p != nil && !p.Bridge() {
		return p.StepID
	}
	return ""
}

// The default bounds of one run (Config.MaxRunSteps and
// Config.MaxRunOutputBytes), on top of each answer's (see
// bridgeclient.MaxOutputBytes).
const (
	// DefaultMaxRunSteps bounds the steps of a run.
	DefaultMaxRunSteps = 1000
	// DefaultMaxRunOutputBytes bounds the recorded outputs of a run's
	// steps together: every execute request carries them all, and a Bridge
	// refuses a request over 10 MiB by default.
	DefaultMaxRunOutputBytes = 8 << 20
)

// runBounds reports whether recording s would take the run over one of
// its bounds.
func (t *turn) runBounds(s *wire.Step) error {
	done := t.st.CompletedSteps()
	if len(done) >= t.e.cfg.MaxRunSteps {
		return fmt.Errorf("the run already has %d steps, the most a run may have", len(done))
	}
	total := len(s.Output)
	for _, st := range done {
		total += len(st.Output)
	}
	if total > t.e.cfg.MaxRunOutputBytes {
		return fmt.Errorf("the step would take the run's outputs to %d bytes, over %d", total, t.e.cfg.MaxRunOutputBytes)
	}
	return nil
}

// stepAnswer records a step the Bridge ran or describes.
func (t *turn) stepAnswer(ctx context.Context, s *wire.Step) (verdict, error) {
	if err := t.runBounds(s); err != nil {
		return t.fail(ctx, s.StepID, apierr.CodeInvalidStep, err.Error())
	}
	now := t.e.now()
	switch s.Type {
	case wire.StepRun:
		return goOn, t.record(ctx, events.StepCompleted, events.StepCompletedData{StepID: s.StepID, Type: string(s.Type), Output: s.Output})
	case wire.StepSend:
		return t.send(ctx, s)
	case wire.StepDelay:
		until := s.ResumeAt(now)
		if s.LocalTime != "" {
			until = t.nextLocal(s.LocalTime, now)
		}
		if !until.After(now) {
			return goOn, t.record(ctx, events.StepCompleted, events.StepCompletedData{StepID: s.StepID, Type: string(s.Type), Output: jsonNull})
		}
		return goOn, t.record(ctx, events.RunSleeping, events.RunSleepingData{StepID: s.StepID, Until: until.UTC()})
	case wire.StepWaitForEvent:
		d := events.RunWaitingData{StepID: s.StepID, Event: s.Event}
		if s.Timeout != nil {
			at := now.Add(s.Timeout.Duration()).UTC()
			d.TimeoutAt = &at
		}
		return goOn, t.record(ctx, events.RunWaiting, d)
	case wire.StepDigest:
		return t.digest(ctx, s)
	case wire.StepThrottle:
		if s.Limit == nil || s.Window == nil {
			return t.fail(ctx, s.StepID, apierr.CodeInvalidStep, "a throttle step without its limit or window")
		}
		return t.throttle(ctx, s)
	}
	return t.fail(ctx, s.StepID, apierr.CodeUnsupportedStep, fmt.Sprintf("step type %q is not supported", s.Type))
}
