package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"time"
)

// recovery triggers a fan-out to the RecoveryRuns subscribers of their
// topic, kills herald serve (SIGKILL) once half of the messages arrived,
// restarts it on the same data directory (and the same NATS process), and
// waits until every subscriber received its message. It reports the time
// from the restart to the last subscriber's first message against
// RecoveryAckWait + 5 s, and fails when a subscriber got none or more than
// one. Duplicates are watched for until RecoveryAckWait + 2 s after the
// restart at least, when the work the killed process held has been
// delivered again.
func (r *runner) recovery(ctx context.Context, rc *RecoveryResult) error {
	n := rc.Runs
	tag := fmt.Sprintf("recovery-%s-%d-%d", r.sync, n, time.Now().UnixNano())
	c := newCollector(tag, false, -1)
	c.distinctTarget = n
	c.firstID = map[string]string{}
	r.w.collector.Store(c)
	defer r.w.collector.Store(nil)
	start := time.Now()
	// The trigger goes to the first process; the kill may cut its answer.
	var answered atomic.Bool
	var postErr atomic.Pointer[error]
	t, body := r.t, map[string]any{"workflowId": r.sendWorkflow(), "to": map[string]any{"topics": []string{topicKey(n)}},
		"payload": map[string]any{"tag": tag}, "transactionId": tag}
	go func() {
		if err := t.call(ctx, "POST", "/v1/events", body, nil, http.StatusAccepted); err != nil {
			postErr.Store(&err)
			return
		}
		answered.Store(true)
	}()
	stop := ticker(time.Second, func() {
		got, _ := c.snapshot()
		r.progress("recovery %d: %d messages in the sink after %.0f s", n, got, time.Since(start).Seconds())
	})
	defer stop()
	// Half-way: kill.
	for {
		if got, _ := c.snapshot(); got >= n/2 {
			break
		}
		select {
		case <-c.allThere:
			return errors.New("every message arrived before the kill: raise the recovery runs")
		case <-ctx.Done():
			got, _ := c.snapshot()
			if e := postErr.Load(); e != nil {
				return fmt.Errorf("trigger: %w", *e)
			}
			return fmt.Errorf("%d of %d messages before the kill: %w", got, n, ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
	r.killing.Store(true)
	killed := r.srv
	cpuAtKill := killed.cpuTime()
	rc.KilledPeakRSSBytes = killed.peak()
	killed.kill()
	r.cpuCarry += cpuAtKill
	rc.KilledAtMessages, _ = c.snapshot()
	rc.KilledAtMs = ms(time.Since(start))
	rc.PostAnswered = answered.Load()
	r.progress("recovery %d: killed herald serve (pid %d) with %d messages in the sink after %.2f s; restarting",
		n, killed.pid(), rc.KilledAtMessages, rc.KilledAtMs/1000)
	restarted := time.Now()
	natsURL := ""
	if r.nats != nil {
		natsURL = r.nats.addr
	}
	if err := r.startServe(ctx, natsURL); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	r.srv.resetPeak()
	rc.ReadyMs = ms(time.Since(restarted))
	// Every subscriber's first message.
	for waiting := true; waiting; {
		select {
		case <-c.allThere:
			waiting = false
		case <-ctx.Done():
			got, _ := c.snapshot()
			_, distinct := c.check()
			return fmt.Errorf("%d messages to %d of %d subscribers after the restart: %w", got, distinct, n, ctx.Err())
		case <-time.After(50 * time.Millisecond):
			if !r.srv.alive() {
				return fmt.Errorf("the restarted herald serve exited; see %s", r.logPath)
			}
		}
	}
	c.mu.Lock()
	rc.RecoveryMs = ms(c.distinctAt.Sub(restarted))
	c.mu.Unlock()
	rc.AckWaitMs = ms(r.cfg.RecoveryAckWait)
	rc.BoundMs = ms(r.cfg.RecoveryAckWait + 5*time.Second)
	rc.WithinBound = rc.RecoveryMs <= rc.BoundMs
	r.progress("recovery %d: every subscriber had its message %.2f s after the restart (ready after %.2f s; bound AckWait + 5 s = %.1f s); watching for duplicates",
		n, rc.RecoveryMs/1000, rc.ReadyMs/1000, rc.BoundMs/1000)
	// Duplicates: a redelivered run that sends again comes within AckWait
	// of the restart.
	until := restarted.Add(r.cfg.RecoveryAckWait + 2*time.Second)
	if t := time.Now().Add(time.Second); t.After(until) {
		until = t
	}
	select {
	case <-time.After(time.Until(until)):
	case <-ctx.Done():
		return ctx.Err()
	}
	c.mu.Lock()
	rc.Messages, rc.SameMessageID, rc.OtherMessageID = c.count, c.sameID, c.otherID
	var dupOf []string
	for to, k := range c.recips {
		if k > 1 {
			dupOf = append(dupOf, to)
		}
	}
	c.mu.Unlock()
	rc.Duplicates, rc.Distinct = c.check()
	rc.Missing = n - rc.Distinct
	r.progress("recovery %d: %d messages to %d distinct subscribers, %d duplicates (%d with the first copy's Message-ID), %d missing; recovery %.2f s (bound %.1f s: %s)",
		n, rc.Messages, rc.Distinct, rc.Duplicates, rc.SameMessageID, rc.Missing, rc.RecoveryMs/1000, rc.BoundMs/1000,
		map[bool]string{true: "within", false: "OVER"}[rc.WithinBound])
	if rc.Duplicates > 0 || rc.Missing > 0 {
		slices.Sort(dupOf)
		return fmt.Errorf("exactly-once broken after the kill: %d duplicates (%d with the first copy's Message-ID, %d with another; to %v), %d subscribers without a message",
			rc.Duplicates, rc.SameMessageID, rc.OtherMessageID, dupOf[:min(len(dupOf), 10)], rc.Missing)
	}
	return nil
}
