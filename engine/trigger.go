package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
	"github.com/heraldhq/herald/runstate"
	"github.com/nats-io/nats.go/jetstream"
)

// Limits of a trigger.
const (
	MaxTopics       = 100
	MaxPayloadBytes = 256 << 10
	MaxTxnIDChars   = 128
	// MaxWorkflowIDChars caps workflow ids (they end up in subjects).
	MaxWorkflowIDChars = 128
	fanoutChunk        = 1000
)

// TriggerRequest is POST /v1/events.
type TriggerRequest struct {
	WorkflowID    string          `json:"workflowId"`
	To            *TriggerTarget  `json:"to"`
	Payload       json.RawMessage `json:"payload"`
	TransactionID *string         `json:"transactionId"`
}

// TriggerTarget is a trigger's `to`: exactly one of SubscriberID and
// Topics.
type TriggerTarget struct {
	SubscriberID *string   `json:"subscriberId"`
	Topics       *[]string `json:"topics"`
}

// RunRef is one run a trigger started (or failed to).
type RunRef struct {
	RunID        string `json:"runId,omitempty"`
	SubscriberID string `json:"subscriberId"`
	Status       string `json:"status"`
}

// TriggerResult is the answer to a trigger.
type TriggerResult struct {
	TransactionID string   `json:"transactionId"`
	Runs          []RunRef `json:"runs"`
}

// RunID derives the id of the run of one subscriber in one transaction:
// a fan-out resumed after a crash finds the same ids and starts nothing
// twice.
func RunID(tenant, txn, subscriberID string) string {
	h := sha256.Sum256([]byte(tenant + "\x00" + txn + "\x00" + subscriberID))
	return "run_" + hex.EncodeToString(h[:12])
}

// ValidRunID reports whether id has the form RunID gives every run:
// "run_" and 24 lowercase hex digits. Anything else names no run.
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

// ValidTransactionID reports whether id is a valid transactionId: 1 to
// MaxTxnIDChars printable characters.
func ValidTransactionID(id string) bool { return validTxnID(id) }

// validate checks a trigger and returns it as accepted.
func (r TriggerRequest) validate() (events.TriggerAcceptedData, error) {
	var p control.Problems
	var acc events.TriggerAcceptedData
	if r.WorkflowID == "" {
		p.Add("workflowId", "is required")
	} else if !bridge.ValidWorkflowID(r.WorkflowID) || len(r.WorkflowID) > MaxWorkflowIDChars {
		p.Add("workflowId", "must match ^([a-zA-Z]|_[a-zA-Z0-9])[a-zA-Z0-9_]*$ and be at most %d characters", MaxWorkflowIDChars)
	}
	switch {
	case r.To == nil:
		p.Add("to", "is required: give exactly one of subscriberId and topics")
	case (r.To.SubscriberID == nil) == (r.To.Topics == nil):
		p.Add("to", "must have exactly one of subscriberId and topics")
	case r.To.SubscriberID != nil:
		if !control.ValidExternalID(*r.To.SubscriberID) {
			p.Add("to.subscriberId", "must be 1 to %d printable characters", control.MaxExternalIDChars)
		}
		acc.To.SubscriberID = r.To.SubscriberID
	default:
		topics := *r.To.Topics
		if len(topics) == 0 {
			p.Add("to.topics", "must name at least one topic")
		}
		if len(topics) > MaxTopics {
			p.Add("to.topics", "must name at most %d topics", MaxTopics)
		}
		for i, k := range topics {
			if !control.ValidTopicKey(k) {
				p.Add(fmt.Sprintf("to.topics[%d]", i), "must be 1 to %d characters of A-Z, a-z, 0-9, '.', '_', ':' and '-'", control.MaxTopicKeyChars)
			}
		}
		acc.To.Topics = topics
	}
	acc.Payload = json.RawMessage("{}")
	if len(r.Payload) > 0 && !bytes.Equal(r.Payload, []byte("null")) {
		if r.Payload[0] != '{' {
			p.Add("payload", "must be a JSON object")
		} else if len(r.Payload) > MaxPayloadBytes {
			p.Add("payload", "must be at most %d bytes", MaxPayloadBytes)
		} else {
			var c bytes.Buffer
			if err := json.Compact(&c, r.Payload); err != nil {
				p.Add("payload", "must be a JSON object")
			}
			acc.Payload = c.Bytes()
		}
	}
	if r.TransactionID != nil {
		if !validTxnID(*r.TransactionID) {
			p.Add("transactionId", "must be 1 to %d printable characters", MaxTxnIDChars)
		}
		acc.TransactionID = *r.TransactionID
	} else {
		acc.TransactionID = eventlog.NewID("txn_")
	}
	acc.WorkflowID = r.WorkflowID
	if err := p.Err(); err != nil {
		return acc, err
	}
	digest, err := requestDigest(acc)
	if err != nil {
		return acc, err
	}
	acc.RequestDigest = digest
	return acc, nil
}

// requestDigest returns the hex SHA-256 of a trigger's canonical request:
// its workflow id, its target (a subscriber id, or topics in the order
// given) and its payload re-encoded with sorted keys (numbers kept as
// written), so that the same request spelled with its keys in another
// order or other spacing is the same request.
func requestDigest(acc events.TriggerAcceptedData) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(acc.Payload))
	dec.UseNumber()
	var payload any
	if err := dec.Decode(&payload); err != nil {
		return "", fmt.Errorf("engine: canonical payload: %w", err)
	}
	canonical, err := json.Marshal(struct {
		WorkflowID string        `json:"workflowId"`
		To         events.Target `json:"to"`
		Payload    any           `json:"payload"`
	}{acc.WorkflowID, acc.To, payload})
	if err != nil {
		return "", fmt.Errorf("engine: canonical request: %w", err)
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:]), nil
}

// sameRequest reports whether a repeat of a transaction id carries the
// request the transaction was accepted with.
func sameRequest(first, repeat events.TriggerAcceptedData) (bool, error) {
	want := first.RequestDigest
	if want == "" { // written before digests were stored
		var err error
		if want, err = requestDigest(first); err != nil {
			return false, err
		}
	}
	return want == repeat.RequestDigest, nil
}

func validTxnID(s string) bool {
	n := utf8.RuneCountInString(s)
	if n < 1 || n > MaxTxnIDChars || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// Trigger starts one run per resolved subscriber and answers once the
// fan-out is finished. A repeated transaction id answers the first
// trigger's runs and starts nothing new.
func (e *Engine) Trigger(ctx context.Context, tenant string, req TriggerRequest) (TriggerResult, error) {
	acc, err := req.validate()
	if err != nil {
		return TriggerResult{}, err
	}
	if err := e.bridgeConfigured(ctx, tenant); err != nil {
		return TriggerResult{}, err
	}
	subject := eventlog.Subject(tenant, eventlog.AggTransaction, acc.TransactionID)
	_, err = e.log.Append(ctx, eventlog.Record{Subject: subject, Type: events.TriggerAccepted, Tenant: tenant,
		Data: acc, Expect: true})
	if errors.Is(err, eventlog.ErrConflict) {
		// The transaction exists: finish its fan-out if it is not finished
		// (idempotent), and answer its runs.
		first, ok, ferr := e.log.First(ctx, subject)
		if ferr != nil || !ok {
			return TriggerResult{}, errors.Join(err, ferr)
		}
		var accepted events.TriggerAcceptedData
		if err := first.Decode(&accepted); err != nil {
			return TriggerResult{}, err
		}
		// The same id with another request: refused, never answered
		// with the first request's runs.
		if same, err := sameRequest(accepted, acc); err != nil {
			return TriggerResult{}, err
		} else if !same {
			return TriggerResult{}, errTransactionMismatch
		}
		return e.fanout(ctx, tenant, accepted)
	}
	if err != nil {
		return TriggerResult{}, err
	}
	// The backstop: if this process dies mid fan-out, a fan-out worker
	// finishes it once this timer fires.
	sched := eventlog.SchedSubject(tenant, "fanout", acc.TransactionID)
	if err := e.log.Schedule(ctx, sched, eventlog.WorkFanout(tenant, acc.TransactionID),
		e.now().Add(e.cfg.FanoutBackstop), nil); err != nil {
		return TriggerResult{}, err
	}
	res, err := e.fanout(ctx, tenant, acc)
	if err != nil {
		return res, err
	}
	if err := e.log.Cancel(ctx, sched); err != nil {
		e.logger.Warn("could not cancel a fan-out backstop; it will find the fan-out done", "err", err)
	}
	return res, nil
}

// bridgeConfigured checks the tenant registered a Bridge. A miss in the
// local projections is checked again once they caught up with the stream,
// so a registration made through another process a moment ago counts.
func (e *Engine) bridgeConfigured(ctx context.Context, tenant string) error {
	_, err := e.store.Bridge(tenant)
	if errors.Is(err, projections.ErrNotFound) {
		if err := e.store.WaitCaughtUp(ctx, e.log); err != nil {
			return err
		}
		_, err = e.store.Bridge(tenant)
	}
	if errors.Is(err, projections.ErrNotFound) {
		return errBridgeNotConfigured
	}
	return err
}

// handleFanout finishes a fan-out whose trigger did not (a crash).
func (e *Engine) handleFanout(ctx context.Context, m jetstream.Msg) error {
	tenant, txn, err := parseWork(m.Subject(), eventlog.WorkFanoutPrefix)
	if err != nil {
		e.logger.Error("dropping malformed work message", "subject", m.Subject(), "err", err)
		return nil
	}
	first, ok, err := e.log.First(ctx, eventlog.Subject(tenant, eventlog.AggTransaction, txn))
	if err != nil || !ok {
		return err
	}
	var acc events.TriggerAcceptedData
	if err := first.Decode(&acc); err != nil {
		return err
	}
	if _, err = e.fanout(ctx, tenant, acc); err != nil {
		return err
	}
	e.logger.Info("finished an interrupted fan-out", "tenant", tenant, "transaction", txn)
	// The fan-out is done: the backstop that fanout kept ahead has nothing
	// left to take over.
	if err := e.log.Cancel(ctx, eventlog.SchedSubject(tenant, "fanout", txn)); err != nil {
		e.logger.Warn("could not cancel a fan-out backstop; it will find the fan-out done", "err", err)
	}
	return nil
}

// fanout starts the runs of a transaction that are not started yet, in
// chunks: the ingress rows of a chunk are written (received) before its
// runs are submitted, then moved to dispatched or failed. It is safe to
// run again and concurrently: run ids are derived, a run's start expects
// an empty subject, and rows keep their first state.
func (e *Engine) fanout(ctx context.Context, tenant string, acc events.TriggerAcceptedData) (TriggerResult, error) {
	defer e.keepBackstop(ctx, tenant, acc.TransactionID)()
	subject := eventlog.Subject(tenant, eventlog.AggTransaction, acc.TransactionID)
	history, err := e.log.History(ctx, subject, 0)
	if err != nil {
		return TriggerResult{}, err
	}
	done := map[string]events.Dispatch{}
	var completed bool
	for _, ev := range history {
		switch ev.Type {
		case events.NotificationsDispatched:
			var d events.NotificationsDispatchedData
			if err := ev.Decode(&d); err != nil {
				return TriggerResult{}, err
			}
			for _, r := range d.Runs {
				done[r.SubscriberID] = r
			}
		case events.FanoutCompleted:
			completed = true
		}
	}
	var recipients []string
	if completed {
		recipients = dispatchedOrder(history)
	} else if recipients, err = e.recipients(ctx, tenant, acc); err != nil {
		return TriggerResult{}, err
	}
	var todo []string
	for _, s := range recipients {
		if _, ok := done[s]; !ok {
			todo = append(todo, s)
		}
	}
	for start := 0; start < len(todo); start += fanoutChunk {
		chunk := todo[start:min(start+fanoutChunk, len(todo))]
		dispatched, err := e.dispatch(ctx, tenant, acc, chunk)
		if err != nil {
			return TriggerResult{}, err
		}
		for _, d := range dispatched {
			done[d.SubscriberID] = d
		}
	}
	if !completed {
		if _, err := e.log.Append(ctx, eventlog.Record{Subject: subject, Type: events.FanoutCompleted, Tenant: tenant,
			Data: events.FanoutCompletedData{Count: len(recipients)}, MsgID: tenant + ":" + acc.TransactionID + ":fanout-completed"}); err != nil {
			return TriggerResult{}, err
		}
	}
	res := TriggerResult{TransactionID: acc.TransactionID, Runs: make([]RunRef, 0, len(recipients))}
	for _, s := range recipients {
		d := done[s]
		res.Runs = append(res.Runs, RunRef{RunID: d.RunID, SubscriberID: s, Status: d.Status})
	}
	return res, nil
}

// keepBackstop keeps a transaction's fan-out backstop (see Trigger) at
// least two thirds of FanoutBackstop ahead while this process works on its
// fan-out, until the returned stop is called: a fan-out worker takes the
// fan-out over only once this process stopped working on it (it died),
// not while one of its steps (resolving the audience, a chunk) outlasts
// FanoutBackstop, which would have two processes do the same chunks at
// once. stop returns once no re-arm is in flight, so a Cancel after it
// stays cancelled.
func (e *Engine) keepBackstop(ctx context.Context, tenant, txn string) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(e.cfg.FanoutBackstop / 3)
		defer t.Stop()
		sched := eventlog.SchedSubject(tenant, "fanout", txn)
		for {
			select {
			case <-t.C:
				if err := e.log.Schedule(ctx, sched, eventlog.WorkFanout(tenant, txn),
					e.now().Add(e.cfg.FanoutBackstop), nil); err != nil && ctx.Err() == nil {
					e.logger.Warn("could not keep a fan-out backstop ahead", "tenant", tenant, "transaction", txn, "err", err)
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() { cancel(); <-done }
}

// chunkID names a fan-out chunk by its transaction and recipients.
func chunkID(tenant, txn string, subs []string) string {
	h := sha256.New()
	for _, s := range append([]string{tenant, txn}, subs...) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return "chunk_" + hex.EncodeToString(h.Sum(nil)[:16])
}

// prime puts a run just started into the state cache, so its first turn
// needs no read of its history. Not while the cache holds PrimeLimit
// states: a large fan-out starts runs far faster than they advance, and
// ~400 bytes primed for each of 100,000 runs would wait in memory for
// minutes; such a run reads its one event at its first turn.
func (e *Engine) prime(rec eventlog.Record, seq uint64) {
	if seq == 0 || e.states.size() >= e.cfg.PrimeLimit {
		return
	}
	data, err := json.Marshal(rec.Data)
	if err != nil {
		return
	}
	var st runstate.State
	if st.Apply(eventlog.Event{Type: rec.Type, TenantID: rec.Tenant, At: rec.At, Data: data, Seq: seq, Subject: rec.Subject}) == nil {
		e.states.put(&st)
	}
}

// dispatchedOrder lists the subscribers of a finished fan-out in the order
// they were dispatched.
func dispatchedOrder(history []eventlog.Event) []string {
	var out []string
	seen := map[string]bool{}
	for _, ev := range history {
		if ev.Type != events.NotificationsDispatched {
			continue
		}
		var d events.NotificationsDispatchedData
		if ev.Decode(&d) != nil {
			continue
		}
		for _, r := range d.Runs {
			if !seen[r.SubscriberID] {
				seen[r.SubscriberID] = true
				out = append(out, r.SubscriberID)
			}
		}
	}
	return out
}

// recipients resolves a trigger's target: a subscriber id passes through
// unchecked; topics fan out through subscriptions, de-duplicated.
func (e *Engine) recipients(ctx context.Context, tenant string, acc events.TriggerAcceptedData) ([]string, error) {
	if acc.To.SubscriberID != nil {
		return []string{*acc.To.SubscriberID}, nil
	}
	if err := e.store.WaitCaughtUp(ctx, e.log); err != nil {
		return nil, err
	}
	return e.store.ResolveTopics(tenant, acc.To.Topics)
}

// dispatch writes a chunk's ingress rows, starts its runs and records
// each run's dispatch.
func (e *Engine) dispatch(ctx context.Context, tenant string, acc events.TriggerAcceptedData, subs []string) ([]events.Dispatch, error) {
	txnSubject := eventlog.Subject(tenant, eventlog.AggTransaction, acc.TransactionID)
	// Message ids derived from the chunk make a retried append (after a
	// lost acknowledgement) store the rows once.
	chunkID := chunkID(tenant, acc.TransactionID, subs)
	if _, err := e.log.Append(ctx, eventlog.Record{Subject: txnSubject, Type: events.NotificationsReceived, Tenant: tenant,
		Data: events.NotificationsReceivedData{WorkflowID: acc.WorkflowID, SubscriberIDs: subs}, MsgID: chunkID + ":received"}); err != nil {
		return nil, err
	}
	at := e.now().UTC()
	recs := make([]eventlog.Record, len(subs))
	for i, s := range subs {
		runID := RunID(tenant, acc.TransactionID, s)
		recs[i] = eventlog.Record{Subject: eventlog.Subject(tenant, eventlog.AggRun, runID), Type: events.RunStarted,
			Tenant: tenant, MsgID: runID + ":started", Expect: true, At: at,
			Data: events.RunStartedData{RunID: runID, TransactionID: acc.TransactionID, WorkflowID: acc.WorkflowID, SubscriberID: &s}}
	}
	seqs, errs := e.log.AppendEach(ctx, recs)
	out := make([]events.Dispatch, len(subs))
	work := make([]eventlog.WorkMsg, 0, len(subs))
	for i, s := range subs {
		runID := RunID(tenant, acc.TransactionID, s)
		out[i] = events.Dispatch{SubscriberID: s, RunID: runID, Status: events.NotificationDispatched}
		switch {
		case errs[i] == nil:
			work = append(work, eventlog.WorkMsg{Subject: eventlog.WorkRun(tenant, runID), MsgID: runID + ":start"})
			e.prime(recs[i], seqs[i])
		case errors.Is(errs[i], eventlog.ErrConflict):
			// Started by an earlier attempt at this fan-out: dispatched. Its
			// first work message may have been lost with that attempt:
			// enqueue again (a duplicate turn finds nothing to do).
			work = append(work, eventlog.WorkMsg{Subject: eventlog.WorkRun(tenant, runID), MsgID: runID + ":start"})
		default:
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			out[i] = events.Dispatch{SubscriberID: s, Status: events.NotificationFailed, Error: errs[i].Error()}
			e.logger.Warn("could not dispatch a run", "tenant", tenant, "transaction", acc.TransactionID,
				"subscriber", s, "err", errs[i])
		}
	}
	if err := e.log.EnqueueBatch(ctx, work); err != nil {
		return nil, err
	}
	if _, err := e.log.Append(ctx, eventlog.Record{Subject: txnSubject, Type: events.NotificationsDispatched, Tenant: tenant,
		Data: events.NotificationsDispatchedData{Runs: out}, MsgID: chunkID + ":dispatched"}); err != nil {
		return nil, err
	}
	return out, nil
}
