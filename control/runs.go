package control

import (
	"context"
	"encoding/json"
	"unicode/utf8"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/runstate"
)

// MaxPendingSignals bounds the signals a run holds unconsumed; one more
// is refused with 409 too_many_signals.
const MaxPendingSignals = 100

// maxEventChars bounds a signal's event name, in characters.
const maxEventChars = 256

// ValidRunID reports whether id has the form the engine gives every run
// (engine.RunID): "run_" and 24 lowercase hex digits. Anything else names
// no run.
func ValidRunID(id string) bool {
	if len(id) != len("run_")+24 || id[:4] != "run_" {
		return false
	}
	for i := 4; i < len(id); i++ {
		if c := id[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// RunStatuses are the statuses a run can be in, as GET /v1/runs filters
// them.
var RunStatuses = []string{string(runstate.Running), string(runstate.Sleeping), string(runstate.Waiting),
	string(runstate.Completed), string(runstate.Failed), string(runstate.Cancelled), string(runstate.Digested)}

// StatusCancelled is the status of a cancelled run.
const StatusCancelled = string(runstate.Cancelled)

// SignalCommand is an external event for a run.
type SignalCommand struct {
	// Event names the event a waitForEvent waits for. Required.
	Event string
	// Payload is raw JSON: an object, or absent or null. The wait that
	// takes the signal resumes with it as its output (null when absent).
	Payload json.RawMessage
}

// errRunNotFound names the run; "" (an id not of the minted form, not
// echoed back) says "no such run".
func errRunNotFound(runID string) error {
	if runID == "" {
		return apierr.New(apierr.CodeRunNotFound, "no such run")
	}
	return apierr.New(apierr.CodeRunNotFound, "no run "+runID)
}

func errRunFinished(runID string) error {
	return apierr.New(apierr.CodeRunFinished, "run "+runID+" is finished")
}

func errTooManySignals(runID string) error {
	return apierr.Errorf(apierr.CodeTooManySignals, "run %s already holds %d unconsumed signals",
		runID, MaxPendingSignals)
}

// Signal buffers an external event for a run and wakes it. A waitForEvent
// takes the oldest unconsumed signal of its name, even one that arrived
// before the run reached the wait.
//
// Errors: a *apierr.ValidationError naming event or payload; 404
// run_not_found; 409 run_finished; 409 too_many_signals when the run holds
// MaxPendingSignals unconsumed.
func (c *Control) Signal(ctx context.Context, tenant, runID string, cmd SignalCommand) error {
	var p apierr.Problems
	data := cmd.check(&p)
	if err := p.Err(); err != nil {
		return err
	}
	return c.signalRun(ctx, tenant, runID, data)
}

// check adds cmd's problems to p and returns its event's data.
func (cmd SignalCommand) check(p *apierr.Problems) events.SignalReceivedData {
	if cmd.Event == "" {
		p.Add("event", "is required")
	} else if utf8.RuneCountInString(cmd.Event) > maxEventChars {
		p.Add("event", "must be at most %d characters", maxEventChars)
	}
	payload := payloadObject("payload", cmd.Payload, p)
	if payload == nil {
		payload = json.RawMessage("null")
	}
	return events.SignalReceivedData{Event: cmd.Event, Payload: payload}
}

// signalRun appends a checked signal to a run and wakes it.
func (c *Control) signalRun(ctx context.Context, tenant, runID string, data events.SignalReceivedData) error {
	seq, err := c.appendToLiveRun(ctx, tenant, runID, events.SignalReceived,
		data, func(st *runstate.State) error {
			if len(st.Signals) >= MaxPendingSignals {
				return errTooManySignals(runID)
			}
			return nil
		})
	if err != nil {
		return err
	}
	return c.rt.Wake(ctx, tenant, runID, seq)
}

// Cancel ends a run that is not finished and removes its pending timer;
// actor (the API key's prefix) is recorded as who asked.
//
// Errors: 404 run_not_found; 409 run_finished.
func (c *Control) Cancel(ctx context.Context, tenant, runID, actor string) error {
	return c.cancel(ctx, tenant, runID, events.RunCancelledData{Actor: actor})
}

// cancel is Cancel for data's reason and actor.
func (c *Control) cancel(ctx context.Context, tenant, runID string, data events.RunCancelledData) error {
	if _, err := c.appendToLiveRun(ctx, tenant, runID, events.RunCancelled, data, nil); err != nil {
		return err
	}
	return c.rt.Cancelled(ctx, tenant, runID)
}

// appendToLiveRun appends to a run that exists and is not finished, as
// appendToRun does. check, when set, may refuse the append on the run's
// state.
func (c *Control) appendToLiveRun(ctx context.Context, tenant, runID, typ string, data any,
	check func(*runstate.State) error) (uint64, error) {
	return c.appendToRun(ctx, tenant, runID, typ, func(st *runstate.State) (any, error) {
		if st.Status.Finished() {
			return nil, errRunFinished(runID)
		}
		if check != nil {
			if err := check(st); err != nil {
				return nil, err
			}
		}
		return data, nil
	})
}

// appendToRun appends an event of type typ to a run that exists,
// expecting the run subject's last sequence, waits until the projections
// applied it, and returns its sequence. data returns the event's data
// from the run's state, or refuses the append; it is called again, on the
// state read afresh, when another writer went first.
func (c *Control) appendToRun(ctx context.Context, tenant, runID, typ string,
	data func(*runstate.State) (any, error)) (uint64, error) {
	if !ValidRunID(runID) {
		return 0, errRunNotFound("")
	}
	subject := eventlog.Subject(tenant, eventlog.AggRun, runID)
	var seq uint64
	err := retry(ctx, func() error {
		evs, err := c.log.History(ctx, subject, 0)
		if err != nil {
			return err
		}
		st, err := runstate.Fold(evs)
		if err != nil {
			return err
		}
		if st.RunID == "" {
			return errRunNotFound(runID)
		}
		d, err := data(st)
		if err != nil {
			return err
		}
		seq, err = c.log.Append(ctx, eventlog.Record{Subject: subject, Type: typ, Tenant: tenant, Data: d,
			Expect: true, ExpectSeq: st.LastSeq})
		return err
	})
	if err != nil {
		return 0, err
	}
	return seq, c.store.WaitFor(ctx, seq)
}
