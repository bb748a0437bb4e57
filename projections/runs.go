package projections

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/runstate"
	bolt "go.etcd.io/bbolt"
)

var (
	bucketRuns = []byte("runs") // tenant\x00<start> → runstate.State (runrow.go)
	// runs_by_txn: tenant\x00txn\x00<start> → runId, a transaction's runs
	// in the order they started (runTxnKey)
	bucketRunsByTxn = []byte("runs_by_txn")
	// runs_by_time: tenant\x00newest(createdAt)runId → empty, newest first
	bucketRunsByTime = []byte("runs_by_time")
	bucketTxns       = []byte("txns") // tenant\x00txn → Transaction
	// txns_by_time: tenant\x00newest(createdAt)txn → empty, newest first
	bucketTxnsByTime = []byte("txns_by_time")
	bucketNotifs     = []byte("notifications")
	// notifications: tenant\x00txn\x00subscriberId → Notification
)

// Notification is one row of the ingress ledger. Its transaction and
// subscriber are its key's, not stored again in its value.
type Notification struct {
	TransactionID string    `json:"-"`
	SubscriberID  string    `json:"-"`
	WorkflowID    string    `json:"workflowId"`
	RunID         string    `json:"runId,omitempty"`
	Status        string    `json:"status"`
	Error         string    `json:"error,omitempty"`
	CreatedAt     time.Time `json:"createdAt"`
}

// RunFilter narrows a runs list; empty fields match everything.
type RunFilter struct {
	TransactionID string
	SubscriberID  string
	Status        string
	WorkflowID    string
}

// runEventTypes are the events folded into a run's state. ApplyBatch
// applies them through a runFold, not one by one.
var runEventTypes = map[string]bool{
	events.RunStarted: true, events.StepCompleted: true, events.StepFailed: true, events.RunSleeping: true,
	events.RunWaiting: true, events.SignalReceived: true, events.RunCompleted: true, events.RunFailed: true,
	events.RunCancelled: true, events.RunDigested: true, events.RunSubscriberRecorded: true, events.RunRerun: true,
}

func runModels() (map[string]applyFunc, [][]byte) {
	h := map[string]applyFunc{
		events.TriggerAccepted:         decoded(applyTriggerAccepted),
		events.NotificationsReceived:   ofTransaction(applyNotificationsReceived),
		events.NotificationsDispatched: ofTransaction(applyNotificationsDispatched),
		events.FanoutCompleted:         ofTransaction(applyFanoutCompleted),
		events.TransactionCancelled:    ofTransaction(applyTransactionCancelled),
	}
	return h, [][]byte{bucketRuns, bucketRunsDone, bucketRunIDs, bucketRunsByTxn, bucketRunsByTime, bucketTxns, bucketTxnsByTime, bucketNotifs,
		bucketRunsByEnd, bucketTxnsExpiring, bucketTxnsCancelled}
}

// runFold folds the run events of one ApplyBatch: a run's state is read at
// its first event in the batch (from the runCache, else its row) and
// written once, by flush, however many of its events the batch holds (a
// run's start, its steps and its end often come together). The result is
// the same as applying them one by one.
type runFold struct {
	cache  *runCache
	states map[string]*runstate.State // by key(tenant, runId)
	rows   map[string][]byte          // their rows' keys (runRowKey), nil for a run not started
	was    map[string]runstate.Status // the status of their rows before the batch ("": none)
	keys   []string                   // in first-seen order
	// txns are the changes of the batch to transactions' counters, by
	// key(tenant, txn), added to their rows by flush: a batch of a
	// thousand runs of one broadcast writes its transaction once.
	txns map[string]*txnDelta
	// stats are the batch's additions to the overview's buckets, by
	// statsKey, and statsLatest the latest bucket counted in, by tenant
	// and resolution (statsKey's prefix); flushStats writes them.
	stats       map[string]*StatsBucket
	statsLatest map[string]statsMark
}

// txnDelta is what one batch adds to a transaction's counters.
type txnDelta struct {
	runs       TxnRuns
	deliveries TxnDeliveries
	at         time.Time
}

// delta returns the batch's change of a transaction's counters.
func (f *runFold) delta(tenant, txn string, at time.Time) *txnDelta {
	k := string(key(tenant, txn))
	d := f.txns[k]
	if d == nil {
		if f.txns == nil {
			f.txns = make(map[string]*txnDelta)
		}
		d = &txnDelta{}
		f.txns[k] = d
	}
	if at.After(d.at) {
		d.at = at
	}
	return d
}

// statusCounter is the counter of TxnRuns a run at status st counts in.
func statusCounter(r *TxnRuns, st runstate.Status) *int {
	switch st {
	case runstate.Completed:
		return &r.Completed
	case runstate.Failed:
		return &r.Failed
	case runstate.Cancelled:
		return &r.Cancelled
	case runstate.Digested:
		return &r.Digested
	default:
		return &r.Running
	}
}

// moved counts a run's move from before (started: it had no state) to
// after in its transaction's counters.
func (f *runFold) moved(ev eventlog.Event, s *runstate.State, started bool, before runstate.Status) {
	d := f.delta(ev.TenantID, s.TransactionID, ev.At)
	if started {
		d.runs.Started++
		*statusCounter(&d.runs, s.Status)++
		return
	}
	if from, to := statusCounter(&d.runs, before), statusCounter(&d.runs, s.Status); from != to {
		*from--
		*to++
	}
}

// deliveryOutcomes are the delivery ledger's events a transaction's
// counters count.
var deliveryOutcomes = map[string]bool{events.DeliverySent: true, events.DeliverySkipped: true, events.DeliveryFailed: true}

// delivery counts a ledger row's outcome in its run's transaction. A
// skip names its run; a sent or failed attempt is found by its row.
func (f *runFold) delivery(tx *bolt.Tx, ev eventlog.Event) error {
	var d struct {
		AttemptID string `json:"attemptId"`
		RunID     string `json:"runId"`
	}
	if err := ev.Decode(&d); err != nil {
		return err
	}
	runID := d.RunID
	if runID == "" {
		id := tx.Bucket(bucketDeliveryAttempts).Get(key(ev.TenantID, d.AttemptID))
		if id == nil {
			return nil
		}
		var row Delivery
		if ok, err := getDelivery(tx.Bucket(bucketDeliveries), key(ev.TenantID, string(id)), &row); err != nil || !ok {
			return err
		}
		runID = row.RunID
	}
	if runID == "" {
		return nil
	}
	txn, err := f.txnOfRun(tx, ev.TenantID, runID)
	if err != nil || txn == "" {
		return err
	}
	c := &f.delta(ev.TenantID, txn, ev.At).deliveries
	switch ev.Type {
	case events.DeliverySent:
		c.Sent++
	case events.DeliverySkipped:
		c.Skipped++
	case events.DeliveryFailed:
		c.Failed++
	}
	return nil
}

// txnOfRun is the transaction of a run: from the batch, the cache, or its
// row; empty for a run not projected.
func (f *runFold) txnOfRun(tx *bolt.Tx, tenant, runID string) (string, error) {
	k := key(tenant, runID)
	if s := f.states[string(k)]; s != nil {
		return s.TransactionID, nil
	}
	if txn, ok := f.cache.txnOf(string(k)); ok {
		return txn, nil
	}
	var row struct {
		TransactionID string `json:"transactionId"`
	}
	_, err := getRunPart(tx, tenant, runID, &row)
	return row.TransactionID, err
}

func (f *runFold) apply(tx *bolt.Tx, ev eventlog.Event) error {
	_, _, runID, err := eventlog.ParseSubject(ev.Subject)
	if err != nil {
		return err
	}
	k := string(key(ev.TenantID, runID))
	s, ok := f.states[k]
	if !ok {
		var row []byte
		if s, row = f.cache.get(k); s == nil {
			s = &runstate.State{}
			if row = runRowOf(tx, ev.TenantID, runID); row != nil {
				if _, err := getRunAt(tx, row, ev.TenantID, runID, s); err != nil {
					return err
				}
			}
		}
		if f.states == nil {
			f.states, f.rows, f.was = make(map[string]*runstate.State), make(map[string][]byte), make(map[string]runstate.Status)
		}
		f.states[k], f.rows[k], f.was[k] = s, row, s.Status
		f.keys = append(f.keys, k)
	}
	// Apply checks an event before it changes anything: a failed event
	// leaves the state as it was, as when it was applied alone.
	started, before, endBefore := s.RunID == "", s.Status, s.UpdatedAt
	if err := s.Apply(ev); err != nil {
		return err
	}
	if s.RunID != "" {
		if err := indexEnd(tx, ev.TenantID, s, !started && before.Finished(), endBefore); err != nil {
			return err
		}
	}
	if s.RunID != "" && s.TransactionID != "" {
		f.moved(ev, s, started, before)
	}
	if s.RunID != "" && f.rows[k] == nil {
		// The run's row is keyed by the event that started it.
		f.rows[k] = runRowKey(ev.TenantID, ev.Seq)
		if err := tx.Bucket(bucketRunIDs).Put([]byte(k), binary.BigEndian.AppendUint64(nil, ev.Seq)); err != nil {
			return err
		}
	}
	if ev.Type == events.RunStarted && s.RunID != "" {
		row := f.rows[k]
		start := binary.BigEndian.Uint64(row[len(row)-8:])
		if err := appendBucket(tx, bucketRunsByTxn).Put(runTxnKey(ev.TenantID, s.TransactionID, start), []byte(runID)); err != nil {
			return err
		}
		if err := tx.Bucket(bucketRunsByTime).Put(key(ev.TenantID, newestFirst(s.CreatedAt)+runID), []byte{}); err != nil {
			return err
		}
		return applyRunDispatch(tx, ev, s)
	}
	return nil
}

// applyRunDispatch dispatches the ingress row of a single-subscriber
// trigger's run as the run starts, and completes its transaction (count
// 1), as it does a cron tick's: such a trigger writes no
// NotificationsDispatched. A topic trigger's
// rows are left to its fan-out's events. Without the transaction (its
// TriggerAccepted erased with its subscriber) the row is written as
// dispatched.
func applyRunDispatch(tx *bolt.Tx, ev eventlog.Event, s *runstate.State) error {
	txns := tx.Bucket(bucketTxns)
	tk := key(ev.TenantID, s.TransactionID)
	if s.SubscriberID == nil {
		// A cron tick's run: the tick starts it alone, so its
		// transaction is complete with it (else it would show
		// fanning_out forever, and never expire).
		var t Transaction
		if found, err := getTxn(txns, tk, &t); err != nil || !found {
			return err
		}
		return completeAlone(txns, tk, t, ev.At)
	}
	var t Transaction
	found, err := getTxn(txns, tk, &t)
	if err != nil || (found && !t.Single) {
		return err
	}
	b := appendBucket(tx, bucketNotifs)
	k := key(ev.TenantID, s.TransactionID+"\x00"+*s.SubscriberID)
	n := Notification{TransactionID: s.TransactionID, SubscriberID: *s.SubscriberID, WorkflowID: s.WorkflowID, CreatedAt: ev.At}
	if _, err := getJSON(b, k, &n); err != nil {
		return err
	}
	if n.Status != events.NotificationDispatched {
		n.Status, n.RunID, n.Error = events.NotificationDispatched, s.RunID, ""
		if err := putJSON(b, k, n); err != nil {
			return err
		}
	}
	if !found {
		return nil
	}
	return completeAlone(txns, tk, t, ev.At)
}

// completeAlone completes t, the transaction at tk, with its one run,
// started at at.
func completeAlone(txns *bolt.Bucket, tk []byte, t Transaction, at time.Time) error {
	if t.Completed && t.Count == 1 {
		return nil
	}
	t.Completed, t.Count = true, 1
	t.UpdatedAt = later(t.UpdatedAt, at)
	return putTxn(txns, tk, &t)
}

// flush writes the states the batch changed. A run whose start is unknown
// (its events arrived without a RunStarted) is not shown.
func (f *runFold) flush(tx *bolt.Tx) error {
	for _, k := range f.keys {
		if s := f.states[k]; s.RunID != "" {
			if err := putRun(tx, f.rows[k], s, f.was[k]); err != nil {
				return err
			}
		}
	}
	txns := tx.Bucket(bucketTxns)
	for k, d := range f.txns {
		if err := updateTxn(txns, []byte(k), func(t *Transaction) {
			r, c := &t.Runs, d.runs
			r.Started, r.Running, r.Completed = r.Started+c.Started, r.Running+c.Running, r.Completed+c.Completed
			r.Failed, r.Cancelled, r.Digested = r.Failed+c.Failed, r.Cancelled+c.Cancelled, r.Digested+c.Digested
			t.Deliveries.Sent += d.deliveries.Sent
			t.Deliveries.Skipped += d.deliveries.Skipped
			t.Deliveries.Failed += d.deliveries.Failed
			if d.at.After(t.UpdatedAt) {
				t.UpdatedAt = d.at
			}
		}); err != nil {
			return err
		}
	}
	return f.flushStats(tx)
}

// committed tells the cache the states the batch wrote, once its
// transaction is committed.
func (f *runFold) committed() {
	for _, k := range f.keys {
		if s := f.states[k]; s.RunID != "" {
			s.Subscriber = nil // not in the row (no JSON)
			f.cache.put(k, s, f.rows[k])
		}
	}
}

// runCache holds the run states the projector wrote last, decoded: a run's
// events come milliseconds apart, in several batches, and each batch
// would otherwise read and decode the row its previous one wrote. A state
// in the cache is the row's content exactly (the frozen subscriber, which
// the row does not hold, is dropped), and is never changed: get hands out
// copies. The projector is the rows' only writer, so an entry stays true
// until the projector replaces it. At most 2×runCacheGen states.
type runCache struct {
	mu       sync.Mutex
	cur, old map[string]cachedRun
}

// cachedRun is a run's state as its row holds it, and its row's key.
type cachedRun struct {
	s   *runstate.State
	row []byte
}

// runCacheGen is the size of one generation of the cache: a state not
// written again within two generations is dropped.
const runCacheGen = 2048

// get returns a copy of the cached state of key and its row's key, or
// nil.
func (c *runCache) get(k string) (*runstate.State, []byte) {
	c.mu.Lock()
	e, ok := c.cur[k]
	if !ok {
		e = c.old[k]
	}
	c.mu.Unlock()
	if e.s == nil {
		return nil, nil
	}
	return copyState(e.s), e.row
}

func (c *runCache) put(k string, s *runstate.State, row []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur == nil || len(c.cur) >= runCacheGen {
		c.old, c.cur = c.cur, make(map[string]cachedRun, runCacheGen)
	}
	c.cur[k] = cachedRun{s: s, row: row}
}

// drop forgets key's state: its row is gone (ForgetRuns).
func (c *runCache) drop(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.cur, k)
	delete(c.old, k)
}

// txnOf returns the transaction of the cached state of key, if cached.
func (c *runCache) txnOf(k string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.cur[k]
	if !ok {
		e, ok = c.old[k]
	}
	if !ok || e.s == nil {
		return "", false
	}
	return e.s.TransactionID, true
}

// copyState is a copy of s that Apply may change without changing s, as
// its row would decode: nil and empty slices stay as they are.
func copyState(s *runstate.State) *runstate.State {
	c := *s
	if s.Steps != nil {
		c.Steps = append(make([]runstate.Step, 0, len(s.Steps)+2), s.Steps...)
	}
	if s.Signals != nil {
		c.Signals = append(make([]runstate.Signal, 0, len(s.Signals)), s.Signals...)
	}
	return &c
}

// Run is a run as the projections hold it: the fold of its events.
type Run = runstate.State

// RunState returns one run's state, or ErrNotFound.
func (s *Store) RunState(tenant, runID string) (*runstate.State, error) {
	var st runstate.State
	err := s.view(func(tx *bolt.Tx) error {
		switch ok, err := getRun(tx, tenant, runID, &st); {
		case err != nil:
			return err
		case !ok:
			return ErrNotFound
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &st, nil
}

// Runs lists a tenant's runs, newest first, or a transaction's runs in the
// order they started when f.TransactionID is set; the other filters are
// applied while walking.
func (s *Store) Runs(tenant string, f RunFilter, p Page) (runs []*runstate.State, next string, err error) {
	match := func(st *runstate.State) bool {
		return (f.Status == "" || string(st.Status) == f.Status) &&
			(f.WorkflowID == "" || st.WorkflowID == f.WorkflowID) &&
			(f.SubscriberID == "" || (st.SubscriberID != nil && *st.SubscriberID == f.SubscriberID))
	}
	err = s.view(func(tx *bolt.Tx) error {
		keep := func(st *runstate.State, ok bool, err error) (*runstate.State, bool, error) {
			return st, ok && match(st), err
		}
		if f.TransactionID != "" {
			runs, next, err = listPrefix(tx.Bucket(bucketRunsByTxn), key(tenant, f.TransactionID+"\x00"), p,
				func(start string, runID []byte) (*runstate.State, bool, error) {
					if len(start) != 8 {
						return nil, false, fmt.Errorf("%w: runs_by_txn key %q", errRunRow, start)
					}
					var st runstate.State
					ok, err := getRunAt(tx, runRowKey(tenant, binary.BigEndian.Uint64([]byte(start))), tenant, string(runID), &st)
					return keep(&st, ok, err)
				})
			return err
		}
		runs, next, err = listTenant(tx.Bucket(bucketRunsByTime), tenant, p, func(id string, _ []byte) (*runstate.State, bool, error) {
			var st runstate.State
			ok, err := getRun(tx, tenant, id[timeKeyLen:], &st)
			return keep(&st, ok, err)
		})
		return err
	})
	return runs, next, err
}

// Notifications lists ingress rows: one transaction's (in subscriber id
// order) when txn is set, else the tenant's (by transaction, then
// subscriber).
func (s *Store) Notifications(tenant, txn string, p Page) (rows []Notification, next string, err error) {
	prefix := key(tenant, "")
	if txn != "" {
		prefix = key(tenant, txn+"\x00")
	}
	err = s.view(func(tx *bolt.Tx) error {
		rows, next, err = listPrefix(tx.Bucket(bucketNotifs), prefix, p, func(id string, v []byte) (Notification, bool, error) {
			var n Notification
			if txn != "" {
				n.TransactionID, n.SubscriberID = txn, id
			} else {
				n.TransactionID, n.SubscriberID, _ = strings.Cut(id, "\x00")
			}
			return n, true, json.Unmarshal(v, &n)
		})
		return err
	})
	return rows, next, err
}

// timeKeyLen is the length of newestFirst's key.
const timeKeyLen = 8

// newestFirst is a key prefix that sorts later instants first: the
// complement of the Unix nanoseconds, big-endian.
func newestFirst(t time.Time) string {
	var b [timeKeyLen]byte
	binary.BigEndian.PutUint64(b[:], ^uint64(t.UnixNano()))
	return string(b[:])
}
