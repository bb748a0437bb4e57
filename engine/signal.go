package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/runstate"
)

// SignalRequest is POST /v1/events/{runId}/signal.
type SignalRequest struct {
	Event   string          `json:"event"`
	Payload json.RawMessage `json:"payload"`
}

// SignalResult is the answer to a signal.
type SignalResult struct {
	RunID    string `json:"runId"`
	Event    string `json:"event"`
	Accepted bool   `json:"accepted"`
}

// MaxPendingSignals bounds the signals a run holds unconsumed; one more
// is refused with 409 too_many_signals.
const MaxPendingSignals = 100

// Signal buffers an external event for a run and wakes it. A waitForEvent
// takes the oldest unconsumed signal of its name, even one that arrived
// before the run reached the wait.
func (e *Engine) Signal(ctx context.Context, tenant, runID string, req SignalRequest) (SignalResult, error) {
	var p apierr.Problems
	if req.Event == "" {
		p.Add("event", "is required")
	} else if utf8.RuneCountInString(req.Event) > 256 {
		p.Add("event", "must be at most 256 characters")
	}
	// A signal without a payload carries {}: a wait's null means timeout.
	payload := json.RawMessage("{}")
	if len(req.Payload) > 0 && !bytes.Equal(req.Payload, []byte("null")) {
		var c bytes.Buffer
		if req.Payload[0] != '{' || json.Compact(&c, req.Payload) != nil {
			p.Add("payload", "must be a JSON object")
		} else if c.Len() > MaxPayloadBytes {
			p.Add("payload", "must be at most %d bytes", MaxPayloadBytes)
		}
		payload = c.Bytes()
	}
	if err := p.Err(); err != nil {
		return SignalResult{}, err
	}
	st, err := e.appendToLiveRun(ctx, tenant, runID, events.SignalReceived,
		events.SignalReceivedData{Event: req.Event, Payload: payload}, func(st *runstate.State) error {
			if len(st.Signals) >= MaxPendingSignals {
				return errTooManySignals(runID)
			}
			return nil
		})
	if err != nil {
		return SignalResult{}, err
	}
	if err := e.enqueue(ctx, st); err != nil {
		return SignalResult{}, err
	}
	return SignalResult{RunID: runID, Event: req.Event, Accepted: true}, nil
}

// Cancel ends a run that is not finished and removes its pending timer.
func (e *Engine) Cancel(ctx context.Context, tenant, runID string) error {
	st, err := e.appendToLiveRun(ctx, tenant, runID, events.RunCancelled, events.RunCancelledData{}, nil)
	if err != nil {
		return err
	}
	e.states.drop(runID)
	return e.log.Cancel(ctx, eventlog.SchedSubject(tenant, "run", st.RunID))
}

// appendToLiveRun appends to a run that exists and is not finished,
// expecting the run subject's last sequence, and returns the state it
// checked (with the new sequence). check, when set, may refuse the append
// on the state.
func (e *Engine) appendToLiveRun(ctx context.Context, tenant, runID, typ string, data any,
	check func(*runstate.State) error) (*runstate.State, error) {
	if !ValidRunID(runID) {
		return nil, errRunNotFound("")
	}
	subject := eventlog.Subject(tenant, eventlog.AggRun, runID)
	for range 8 {
		evs, err := e.log.History(ctx, subject, 0)
		if err != nil {
			return nil, err
		}
		st, err := runstate.Fold(evs)
		if err != nil {
			return nil, err
		}
		if st.RunID == "" {
			return nil, errRunNotFound(runID)
		}
		if st.Status.Finished() {
			return nil, errRunFinished(runID)
		}
		if check != nil {
			if err := check(st); err != nil {
				return nil, err
			}
		}
		seq, err := e.log.Append(ctx, eventlog.Record{Subject: subject, Type: typ, Tenant: tenant, Data: data,
			Expect: true, ExpectSeq: st.LastSeq})
		if errors.Is(err, eventlog.ErrConflict) {
			continue
		}
		if err != nil {
			return nil, err
		}
		st.LastSeq = seq
		return st, e.store.WaitFor(ctx, seq)
	}
	return nil, fmt.Errorf("%w: run %s", apierr.ErrBusy, runID)
}
