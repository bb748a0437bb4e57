package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/runstate"
)

// Work that fails on an infrastructure error (the log unreachable, a
// timeout) is retried with backoff, WorkRetryBase doubling up to
// WorkRetryMax; a run's work at most MaxWorkFailures times in a row, then
// it is dead: the run fails with apierr.CodeInfrastructureExhausted. Work that fails on a permanent error (an
// event the log refuses whatever the attempt: too large, a subject the
// server refuses) is dead at once: a run fails with apierr.CodeInvalidStep,
// since what it could not record is what its Bridge answered; other work
// is dropped with an error in the log.

// permanentErrs are the errors no retry can cure.
var permanentErrs = []error{
	nats.ErrMaxPayload,
	nats.ErrBadSubject,
	eventlog.ErrBadToken,
	eventlog.ErrBadSubject, // ErrSubjectTooLong matches it too
}

// permanentAPICodes are the JetStream API errors no retry can cure.
var permanentAPICodes = map[jetstream.ErrorCode]bool{
	jetstream.JSErrCodeStreamMessageExceedsMaximum: true,
	jetstream.JSErrCodeSchedulePatternInvalid:      true,
	jetstream.JSErrCodeScheduleTargetInvalid:       true,
	jetstream.JSErrCodeScheduleTTLInvalid:          true,
	jetstream.JSErrCodeScheduleRollupInvalid:       true,
	jetstream.JSErrCodeScheduleSourceInvalid:       true,
}

// permanent reports whether err is a failure that repeating the work
// cannot cure.
func permanent(err error) bool {
	for _, p := range permanentErrs {
		if errors.Is(err, p) {
			return true
		}
	}
	if apiErr, ok := errors.AsType[*jetstream.APIError](err); ok {
		return permanentAPICodes[apiErr.ErrorCode]
	}
	return false
}

// failures counts each piece of work's infrastructure failures in a row
// (by run, or by work subject), in this process. The count is only a
// bound: a process that restarts starts it again.
type failures struct {
	mu sync.Mutex
	n  map[string]int
}

// maxFailureKeys bounds the work failures tracks; beyond, it forgets all.
const maxFailureKeys = 1 << 16

func (f *failures) add(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == nil || len(f.n) >= maxFailureKeys {
		f.n = map[string]int{}
	}
	f.n[key]++
	return f.n[key]
}

func (f *failures) clear(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.n, key)
}

// succeeded forgets m's failures; it costs no parsing while nothing is
// failing.
func (f *failures) succeeded(m jetstream.Msg) {
	f.mu.Lock()
	none := len(f.n) == 0
	f.mu.Unlock()
	if !none {
		f.clear(workKey(m))
	}
}

// workBackoff is the pause before work that failed n times in a row comes
// back.
func (e *Engine) workBackoff(n int) time.Duration {
	d := e.cfg.WorkRetryBase
	for i := 1; i < n && d < e.cfg.WorkRetryMax; i++ {
		d *= 2
	}
	return min(d, e.cfg.WorkRetryMax)
}

// runOf returns the run a work message advances, if it is run work.
func runOf(m jetstream.Msg) (tenant, runID string, ok bool) {
	if m.Subject() == eventlog.WorkWake {
		tenant, runID, _, err := parseWake(m.Data())
		return tenant, runID, err == nil
	}
	tenant, runID, err := parseWork(m.Subject(), eventlog.WorkRunPrefix)
	return tenant, runID, err == nil
}

// workKey names a work message's failures: its run, else its subject.
func workKey(m jetstream.Msg) string {
	if _, runID, ok := runOf(m); ok {
		return runID
	}
	return m.Subject()
}

// failed settles a work message whose handler failed with err (not a
// stop of the engine): it comes back after a backoff, or it is dead (see
// the top of this file). Work other than a run's (a fan-out, a tick) has
// no run to show its death: it is dropped only on a permanent error, and
// otherwise keeps coming back at the longest pause.
func (e *Engine) failed(ctx context.Context, m jetstream.Msg, err error) {
	key := workKey(m)
	n := e.failures.add(key)
	perm := permanent(err)
	attrs := append(workAttrs(m.Subject(), m.Data()), "err", err, "failures", n)
	tenant, runID, isRun := runOf(m)
	if !perm && (n < e.cfg.MaxWorkFailures || !isRun) {
		d := e.workBackoff(n)
		if n < e.cfg.MaxWorkFailures {
			e.logger.Warn("work failed; will retry", append(attrs, "in", d)...)
		} else {
			e.logger.Error("work keeps failing; will retry", append(attrs, "in", d)...)
		}
		_ = m.NakWithDelay(d)
		return
	}
	if !isRun {
		e.logger.Error("dropping work that cannot succeed", append(attrs, "permanent", perm)...)
		e.failures.clear(key)
		_ = m.Ack()
		return
	}
	code := apierr.CodeInfrastructureExhausted
	msg := fmt.Sprintf("the service failed to advance the run %d times in a row and gave up", n)
	if perm {
		code = apierr.CodeInvalidStep
		msg = "the run's next step could not be recorded: it is over the event log's limits"
	}
	if ferr := e.deadLetter(ctx, tenant, runID, code, msg); ferr != nil {
		// Even the failure cannot be written (the log is down): try again
		// later, with the longest pause.
		e.logger.Error("run cannot go on and cannot be failed; will retry",
			append(attrs, "code", code, "fail_err", ferr)...)
		_ = m.NakWithDelay(e.cfg.WorkRetryMax)
		return
	}
	e.logger.Error("run failed: its work cannot succeed", append(attrs, "code", code, "permanent", perm)...)
	e.failures.clear(key)
	_ = m.Ack()
}

// deadLetter fails a run that is not finished with code and message (the
// step in progress, if any, fails with it). A finished or unknown run is
// left as it is.
func (e *Engine) deadLetter(ctx context.Context, tenant, runID, code, message string) error {
	unlock := e.states.lock(runID)
	defer unlock()
	e.states.drop(runID)
	subject := eventlog.Subject(tenant, eventlog.AggRun, runID)
	return eventlog.RetryConflicts(ctx, func() error {
		evs, err := e.log.History(ctx, subject, 0)
		if err != nil {
			return err
		}
		st, err := runstate.Fold(evs)
		if err != nil {
			return err
		}
		if st.RunID == "" || st.Status.Finished() {
			return nil
		}
		d := events.RunFailedData{Code: code, Message: message}
		if p := st.Pending(); p != nil {
			d.StepID, d.Type = p.StepID, p.Type
		}
		if _, err := e.log.Append(ctx, eventlog.Record{Subject: subject, Type: events.RunFailed, Tenant: tenant, Data: d,
			Expect: true, ExpectSeq: st.LastSeq, At: e.now().UTC()}); err != nil {
			return err
		}
		return e.log.Cancel(ctx, eventlog.SchedSubject(tenant, "run", runID))
	})
}
