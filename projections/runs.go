package projections

import (
	"encoding/json"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/runstate"
	bolt "go.etcd.io/bbolt"
)

var (
	bucketRuns      = []byte("runs")        // tenant\x00runId → runstate.State
	bucketRunsByTxn = []byte("runs_by_txn") // tenant\x00txn\x00runId → empty
	bucketTxns      = []byte("txns")        // tenant\x00txn → Transaction
	bucketNotifs    = []byte("notifications")
	// notifications: tenant\x00txn\x00subscriberId → Notification
)

// Transaction is the read model of one trigger.
type Transaction struct {
	TransactionID string    `json:"transactionId"`
	WorkflowID    string    `json:"workflowId"`
	Completed     bool      `json:"completed"`
	Count         int       `json:"count"`
	CreatedAt     time.Time `json:"createdAt"`
}

// Notification is one row of the ingress ledger.
type Notification struct {
	TransactionID string    `json:"transactionId"`
	SubscriberID  string    `json:"subscriberId"`
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
}

func runModels() (map[string]applyFunc, [][]byte) {
	h := map[string]applyFunc{
		events.TriggerAccepted:         applyTriggerAccepted,
		events.NotificationsReceived:   applyNotificationsReceived,
		events.NotificationsDispatched: applyNotificationsDispatched,
		events.FanoutCompleted:         applyFanoutCompleted,
	}
	for _, t := range []string{events.RunStarted, events.StepCompleted, events.StepFailed, events.RunSleeping,
		events.RunWaiting, events.SignalReceived, events.RunCompleted, events.RunFailed, events.RunCancelled,
		events.RunDigested} {
		h[t] = applyRunEvent
	}
	return h, [][]byte{bucketRuns, bucketRunsByTxn, bucketTxns, bucketNotifs}
}

func applyRunEvent(tx *bolt.Tx, ev eventlog.Event) error {
	_, _, runID, err := eventlog.ParseSubject(ev.Subject)
	if err != nil {
		return err
	}
	b := tx.Bucket(bucketRuns)
	k := key(ev.TenantID, runID)
	var s runstate.State
	if _, err := getJSON(b, k, &s); err != nil {
		return err
	}
	if err := s.Apply(ev); err != nil {
		return err
	}
	if s.RunID == "" {
		return nil // an event of a run whose start is unknown: nothing to show
	}
	if ev.Type == events.RunStarted {
		if err := tx.Bucket(bucketRunsByTxn).Put(key(ev.TenantID, s.TransactionID+"\x00"+runID), []byte{}); err != nil {
			return err
		}
	}
	return putJSON(b, k, &s)
}

func txnOf(ev eventlog.Event) (string, error) {
	_, _, txn, err := eventlog.ParseSubject(ev.Subject)
	return txn, err
}

func applyTriggerAccepted(tx *bolt.Tx, ev eventlog.Event) error {
	var d events.TriggerAcceptedData
	if err := ev.Decode(&d); err != nil {
		return err
	}
	return putJSON(tx.Bucket(bucketTxns), key(ev.TenantID, d.TransactionID),
		Transaction{TransactionID: d.TransactionID, WorkflowID: d.WorkflowID, CreatedAt: ev.At})
}

func applyNotificationsReceived(tx *bolt.Tx, ev eventlog.Event) error {
	txn, err := txnOf(ev)
	if err != nil {
		return err
	}
	var d events.NotificationsReceivedData
	if err := ev.Decode(&d); err != nil {
		return err
	}
	b := appendBucket(tx, bucketNotifs)
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

func applyNotificationsDispatched(tx *bolt.Tx, ev eventlog.Event) error {
	txn, err := txnOf(ev)
	if err != nil {
		return err
	}
	var d events.NotificationsDispatchedData
	if err := ev.Decode(&d); err != nil {
		return err
	}
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

func applyFanoutCompleted(tx *bolt.Tx, ev eventlog.Event) error {
	txn, err := txnOf(ev)
	if err != nil {
		return err
	}
	var d events.FanoutCompletedData
	if err := ev.Decode(&d); err != nil {
		return err
	}
	b := tx.Bucket(bucketTxns)
	var t Transaction
	if ok, err := getJSON(b, key(ev.TenantID, txn), &t); err != nil || !ok {
		return err
	}
	t.Completed, t.Count = true, d.Count
	return putJSON(b, key(ev.TenantID, txn), t)
}

// RunState returns one run's state, or ErrNotFound.
func (s *Store) RunState(tenant, runID string) (*runstate.State, error) {
	var st runstate.State
	err := s.view(func(tx *bolt.Tx) error {
		ok, err := getJSON(tx.Bucket(bucketRuns), key(tenant, runID), &st)
		if err == nil && !ok {
			return ErrNotFound
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return &st, nil
}

// Runs lists a tenant's runs in run id order, or a transaction's runs when
// f.TransactionID is set; the other filters are applied while walking.
func (s *Store) Runs(tenant string, f RunFilter, p Page) (runs []*runstate.State, next string, err error) {
	match := func(st *runstate.State) bool {
		return (f.Status == "" || string(st.Status) == f.Status) &&
			(f.SubscriberID == "" || (st.SubscriberID != nil && *st.SubscriberID == f.SubscriberID))
	}
	err = s.view(func(tx *bolt.Tx) error {
		all := tx.Bucket(bucketRuns)
		load := func(runID string) (*runstate.State, bool, error) {
			var st runstate.State
			ok, err := getJSON(all, key(tenant, runID), &st)
			return &st, ok && match(&st), err
		}
		if f.TransactionID != "" {
			runs, next, err = listPrefix(tx.Bucket(bucketRunsByTxn), key(tenant, f.TransactionID+"\x00"), p,
				func(runID string, _ []byte) (*runstate.State, bool, error) { return load(runID) })
			return err
		}
		runs, next, err = listTenant(all, tenant, p, func(_ string, v []byte) (*runstate.State, bool, error) {
			var st runstate.State
			if err := json.Unmarshal(v, &st); err != nil {
				return nil, false, err
			}
			return &st, match(&st), nil
		})
		return err
	})
	return runs, next, err
}

// Transaction returns one trigger's record, or ErrNotFound.
func (s *Store) Transaction(tenant, txn string) (Transaction, error) {
	var t Transaction
	err := s.view(func(tx *bolt.Tx) error {
		ok, err := getJSON(tx.Bucket(bucketTxns), key(tenant, txn), &t)
		if err == nil && !ok {
			return ErrNotFound
		}
		return err
	})
	return t, err
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
		rows, next, err = listPrefix(tx.Bucket(bucketNotifs), prefix, p, func(_ string, v []byte) (Notification, bool, error) {
			var n Notification
			return n, true, json.Unmarshal(v, &n)
		})
		return err
	})
	return rows, next, err
}
