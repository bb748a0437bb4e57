package projections

import (
	"bytes"
	"fmt"
	"strconv"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/runstate"
	bolt "go.etcd.io/bbolt"
)

// Transaction is the read model of one trigger. Its id is its key's, not
// stored again in its value.
type Transaction struct {
	TransactionID string `json:"-"`
	WorkflowID    string `json:"workflowId"`
	// Single marks a trigger to one subscriber: its ingress row is
	// written by its TriggerAccepted and dispatched, with the transaction
	// completed, by its run's RunStarted (see applyRunDispatch).
	Single    bool      `json:"single,omitempty"`
	Completed bool      `json:"completed"`
	Count     int       `json:"count"`
	CreatedAt time.Time `json:"createdAt"`
	// Recipients is the audience counted when a large trigger was
	// accepted, replaced by the fan-out's count once it completed; nil
	// until either is known.
	Recipients *int `json:"recipients,omitempty"`
	// Cancelled: the transaction was cancelled (TransactionCancelled).
	Cancelled bool `json:"cancelled,omitempty"`
	// Runs and Deliveries are counters the projector keeps as the
	// transaction's runs move and its sends are recorded: a read of a
	// transaction's progress scans nothing.
	Runs       TxnRuns       `json:"runs"`
	Deliveries TxnDeliveries `json:"deliveries"`
	UpdatedAt  time.Time     `json:"updatedAt"`
}

// TxnRuns counts a transaction's runs: every run started, and how many
// are at each status now (Running counts running, sleeping and waiting).
type TxnRuns struct {
	Started, Running, Completed, Failed, Cancelled, Digested int
}

// TxnDeliveries counts the delivery ledger rows of a transaction's runs
// by their outcome: attempts sent, sends skipped, attempts failed (a send
// that failed over to another channel counts its failed attempt).
type TxnDeliveries struct {
	Sent, Skipped, Failed int
}

// MarshalJSON stores the counters as an array, the order of the fields:
// a transaction's row is kept for each trigger, most of them to one
// subscriber, and read and written as its runs move (by hand, not through
// reflection: this is on the projector's path for every run).
func (r TxnRuns) MarshalJSON() ([]byte, error) {
	return appendCounters(nil, r.Started, r.Running, r.Completed, r.Failed, r.Cancelled, r.Digested), nil
}

// UnmarshalJSON reads MarshalJSON's array.
func (r *TxnRuns) UnmarshalJSON(b []byte) error {
	var a [6]int
	if ok, err := readCounters(b, a[:]); !ok {
		return err
	}
	*r = TxnRuns{a[0], a[1], a[2], a[3], a[4], a[5]}
	return nil
}

// MarshalJSON stores the counters as an array (see TxnRuns.MarshalJSON).
func (d TxnDeliveries) MarshalJSON() ([]byte, error) {
	return appendCounters(nil, d.Sent, d.Skipped, d.Failed), nil
}

// UnmarshalJSON reads MarshalJSON's array.
func (d *TxnDeliveries) UnmarshalJSON(b []byte) error {
	var a [3]int
	if ok, err := readCounters(b, a[:]); !ok {
		return err
	}
	*d = TxnDeliveries{a[0], a[1], a[2]}
	return nil
}

// appendCounters appends ns to b as a JSON array of integers.
func appendCounters(b []byte, ns ...int) []byte {
	b = append(b, '[')
	for i, n := range ns {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(n), 10)
	}
	return append(b, ']')
}

// readCounters reads a JSON array of integers into into, as
// json.Unmarshal into an array would: missing elements stay zero, extra
// ones are ignored. ok is false for null (which changes nothing) and on
// an error.
func readCounters(b []byte, into []int) (ok bool, err error) {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return false, nil
	}
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return false, fmt.Errorf("projections: counters: not an array: %.40q", b)
	}
	inner := bytes.TrimSpace(b[1 : len(b)-1])
	if len(inner) == 0 {
		return true, nil
	}
	for i, part := range bytes.Split(inner, []byte{','}) {
		n, err := strconv.Atoi(string(bytes.TrimSpace(part)))
		if err != nil {
			return false, fmt.Errorf("projections: counters: %w", err)
		}
		if i < len(into) {
			into[i] = n
		}
	}
	return true, nil
}

// Progress statuses of a transaction.
const (
	TxnFanningOut = "fanning_out"
	TxnRunning    = "running"
	TxnFinished   = "finished"
	TxnCancelled  = string(runstate.Cancelled)
)

// Status is the transaction's progress: cancelled once cancelled;
// fanning_out until its fan-out completed; running while a run of it is
// not finished; finished.
func (t *Transaction) Status() string {
	switch {
	case t.Cancelled:
		return TxnCancelled
	case !t.Completed:
		return TxnFanningOut
	case t.Runs.Running > 0:
		return TxnRunning
	default:
		return TxnFinished
	}
}

// ofTransaction is decoded for the events of a transaction's subject:
// apply is given the transaction's id as well.
func ofTransaction[D any](apply func(tx *bolt.Tx, ev eventlog.Event, txn string, d D) error) applyFunc {
	return decoded(func(tx *bolt.Tx, ev eventlog.Event, d D) error {
		txn, err := txnOf(ev)
		if err != nil {
			return err
		}
		return apply(tx, ev, txn, d)
	})
}

func txnOf(ev eventlog.Event) (string, error) {
	_, _, txn, err := eventlog.ParseSubject(ev.Subject)
	return txn, err
}

func applyTriggerAccepted(tx *bolt.Tx, ev eventlog.Event, d events.TriggerAcceptedData) error {
	single := d.To.SubscriberID != nil && !d.Cron
	t := Transaction{TransactionID: d.TransactionID, WorkflowID: d.WorkflowID, Single: single,
		Recipients: d.Recipients, CreatedAt: ev.At, UpdatedAt: ev.At}
	if d.To.SubscriberID != nil {
		one := 1
		t.Recipients = &one
	}
	if err := putTxn(tx.Bucket(bucketTxns), key(ev.TenantID, d.TransactionID), &t); err != nil {
		return err
	}
	if err := tx.Bucket(bucketTxnsByTime).Put(key(ev.TenantID, newestFirst(ev.At)+d.TransactionID), []byte{}); err != nil {
		return err
	}
	if !single {
		return nil
	}
	// A trigger to one subscriber: its ingress row, received (its run's
	// start dispatches it: see applyRunDispatch).
	b := appendBucket(tx, bucketNotifs)
	k := key(ev.TenantID, d.TransactionID+"\x00"+*d.To.SubscriberID)
	if b.Get(k) != nil {
		return nil
	}
	return putJSON(b, k, Notification{TransactionID: d.TransactionID, SubscriberID: *d.To.SubscriberID,
		WorkflowID: d.WorkflowID, Status: events.NotificationReceived, CreatedAt: ev.At})
}

func applyNotificationsReceived(tx *bolt.Tx, ev eventlog.Event, txn string, d events.NotificationsReceivedData) error {
	b := appendBucket(tx, bucketNotifs)
	// The rows grow by about a quarter when dispatched (a run id, a
	// longer status), mostly in a later batch: pages split now at
	// receivedFill take that growth without splitting again into pages
	// half empty. The dispatch of a batch that holds both sets appendFill
	// again, the rows already at their size.
	b.FillPercent = receivedFill
	for _, sub := range d.SubscriberIDs {
		k := key(ev.TenantID, txn+"\x00"+sub)
		if b.Get(k) != nil {
			continue // a resumed fan-out writes a row again: keep the first
		}
		n := Notification{TransactionID: txn, SubscriberID: sub, WorkflowID: d.WorkflowID,
			Status: events.NotificationReceived, CreatedAt: ev.At}
		if err := putJSON(b, k, n); err != nil {
			return err
		}
	}
	return nil
}

func applyNotificationsDispatched(tx *bolt.Tx, ev eventlog.Event, txn string, d events.NotificationsDispatchedData) error {
	b := appendBucket(tx, bucketNotifs)
	for _, r := range d.Runs {
		k := key(ev.TenantID, txn+"\x00"+r.SubscriberID)
		var n Notification
		if ok, err := getJSON(b, k, &n); err != nil || !ok {
			return err
		}
		if n.Status == events.NotificationDispatched {
			continue
		}
		n.Status, n.RunID, n.Error = r.Status, r.RunID, r.Error
		if err := putJSON(b, k, n); err != nil {
			return err
		}
	}
	return nil
}

func applyFanoutCompleted(tx *bolt.Tx, ev eventlog.Event, txn string, d events.FanoutCompletedData) error {
	return updateTxn(tx.Bucket(bucketTxns), key(ev.TenantID, txn), func(t *Transaction) {
		t.Completed, t.Count, t.Recipients = true, d.Count, &d.Count
		t.UpdatedAt = later(t.UpdatedAt, ev.At)
	})
}

func applyTransactionCancelled(tx *bolt.Tx, ev eventlog.Event, txn string, d events.TransactionCancelledData) error {
	if err := tx.Bucket(bucketTxnsCancelled).Put(key(ev.TenantID, txn), []byte(d.Actor)); err != nil {
		return err
	}
	return updateTxn(tx.Bucket(bucketTxns), key(ev.TenantID, txn), func(t *Transaction) {
		t.Cancelled = true
		t.UpdatedAt = later(t.UpdatedAt, ev.At)
	})
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// bucketTxnsCancelled: tenant\x00txn → the cancel's actor: the cancelled
// transactions, read by the engine before each Bridge call and each send
// of a run (TransactionCancelled) without decoding the transaction's row.
var bucketTxnsCancelled = []byte("txns_cancelled")

// TransactionCancelled reports whether a transaction was cancelled, and
// by whom (an API key's prefix; empty when not recorded). The engine asks
// before every Bridge call and every send: while the cancelled
// transactions are few (maxCancelsKept), they are kept in memory until a
// batch applies a cancel or retention forgets a transaction (genCache),
// and no read of the file is needed.
func (s *Store) TransactionCancelled(tenant, txn string) (actor string, cancelled bool, err error) {
	set, err := s.cancels.get("", s.readCancels)
	if err != nil {
		return "", false, err
	}
	if set != nil {
		actor, cancelled = set[string(key(tenant, txn))]
		return actor, cancelled, nil
	}
	err = s.view(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketTxnsCancelled).Get(key(tenant, txn)); v != nil {
			actor, cancelled = string(v), true
		}
		return nil
	})
	return actor, cancelled, err
}

// maxCancelsKept bounds the cancelled transactions TransactionCancelled
// keeps in memory; past it, each call reads the file.
var maxCancelsKept = 4096

// readCancels returns every cancelled transaction (tenant\x00txn → actor),
// or nil when there are more than maxCancelsKept.
func (s *Store) readCancels() (map[string]string, error) {
	var set map[string]string
	err := s.view(func(tx *bolt.Tx) error {
		m := map[string]string{}
		c := tx.Bucket(bucketTxnsCancelled).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if len(m) == maxCancelsKept {
				return nil
			}
			m[string(k)] = string(v)
		}
		set = m
		return nil
	})
	return set, err
}

// TransactionProgress returns one transaction with its counters, or
// ErrNotFound. One read, whatever its audience.
func (s *Store) TransactionProgress(tenant, txn string) (Transaction, error) {
	t := Transaction{TransactionID: txn}
	err := s.view(func(tx *bolt.Tx) error {
		switch ok, err := getTxn(tx.Bucket(bucketTxns), key(tenant, txn), &t); {
		case err != nil:
			return err
		case !ok:
			return ErrNotFound
		}
		return nil
	})
	return t, err
}

// Transactions lists a tenant's transactions, newest first.
func (s *Store) Transactions(tenant string, p Page) (txns []Transaction, next string, err error) {
	err = s.view(func(tx *bolt.Tx) error {
		all := tx.Bucket(bucketTxns)
		txns, next, err = listTenant(tx.Bucket(bucketTxnsByTime), tenant, p, func(id string, _ []byte) (Transaction, bool, error) {
			t := Transaction{TransactionID: id[timeKeyLen:]}
			ok, err := getTxn(all, key(tenant, t.TransactionID), &t)
			return t, ok, err
		})
		return err
	})
	return txns, next, err
}
