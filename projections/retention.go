package projections

import (
	"bytes"
	"encoding/binary"
	"strings"
	"time"

	"github.com/heraldhq/herald/runstate"
	bolt "go.etcd.io/bbolt"
)

// Retention: a run finished longer ago than the retention leaves the log
// and the projections (see the service's retention sweeper). Two buckets
// serve it:
//
//   - runs_by_end: <end, 8 bytes big-endian Unix nanoseconds> tenant\x00runId
//     → empty: every finished run, the longest finished first, across
//     tenants, so that one walk from the start finds what has expired;
//   - txns_expiring: tenant\x00txn → empty: the transactions whose last
//     run has gone, whose own events are still to leave the log before
//     their rows go (ExpiringTransactions, ForgetTransactions).
//
// Expiry is not an event: each process forgets, on its own clock, the
// rows of runs whose events it (or another process) has purged from the
// log, so a rebuild from the log finds what the projections keep.
var (
	bucketRunsByEnd    = []byte("runs_by_end")
	bucketTxnsExpiring = []byte("txns_expiring")
)

// endKey is a run's key in runs_by_end.
func endKey(end time.Time, tenant, runID string) []byte {
	k := make([]byte, timeKeyLen, timeKeyLen+len(tenant)+1+len(runID))
	binary.BigEndian.PutUint64(k, uint64(max(end.UnixNano(), 0)))
	return append(k, key(tenant, runID)...)
}

// indexEnd keeps a run's entry in runs_by_end as an event moves it from
// (wasDone, endBefore) to its state s: a run that finishes is added, a
// rerun run is removed, a finished run whose end moved is moved.
func indexEnd(tx *bolt.Tx, tenant string, s *runstate.State, wasDone bool, endBefore time.Time) error {
	done := s.Status.Finished()
	if wasDone == done && (!done || endBefore.Equal(s.UpdatedAt)) {
		return nil
	}
	b := appendBucket(tx, bucketRunsByEnd)
	if wasDone {
		if err := b.Delete(endKey(endBefore, tenant, s.RunID)); err != nil {
			return err
		}
	}
	if done {
		return b.Put(endKey(s.UpdatedAt, tenant, s.RunID), []byte{})
	}
	return nil
}

// ExpiredRun is a finished run past the retention and what of it the log
// holds: the sweeper purges these before ForgetRuns drops its rows.
type ExpiredRun struct {
	TenantID string
	RunID    string
	EndedAt  time.Time
	// DeliveryKeys are the idempotency keys of its deliveries: each names
	// the log subject of one send's events.
	DeliveryKeys []string
	// InboxSeqs are the stream sequences of its in-app messages that the
	// subscriber has read: they leave with it; unread ones stay.
	InboxSeqs []uint64
}

// ExpiredRuns returns up to limit runs that finished before before, the
// longest finished first.
func (s *Store) ExpiredRuns(before time.Time, limit int) ([]ExpiredRun, error) {
	var out []ExpiredRun
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketRunsByEnd).Cursor()
		for k, _ := c.First(); k != nil && len(out) < limit; k, _ = c.Next() {
			if len(k) <= timeKeyLen {
				continue
			}
			end := time.Unix(0, int64(binary.BigEndian.Uint64(k[:timeKeyLen]))).UTC()
			if !end.Before(before) {
				break
			}
			tenant, runID, ok := strings.Cut(string(k[timeKeyLen:]), "\x00")
			if !ok {
				continue
			}
			r := ExpiredRun{TenantID: tenant, RunID: runID, EndedAt: end}
			if err := runLeftovers(tx, &r); err != nil {
				return err
			}
			out = append(out, r)
		}
		return nil
	})
	return out, err
}

// runLeftovers fills r's deliveries and read in-app messages.
func runLeftovers(tx *bolt.Tx, r *ExpiredRun) error {
	prefix := runDeliveries(tx, r.TenantID, r.RunID)
	rows := tx.Bucket(bucketDeliveries)
	c := tx.Bucket(bucketDeliveriesByRun).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		var row Delivery
		ok, err := getDelivery(rows, key(r.TenantID, string(k[len(prefix):])), &row)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if row.IdempotencyKey != "" {
			r.DeliveryKeys = append(r.DeliveryKeys, row.IdempotencyKey)
		}
		if m, ok, err := inboxMessageOf(tx, r.TenantID, row); err != nil {
			return err
		} else if ok && m.ReadAt != nil {
			r.InboxSeqs = append(r.InboxSeqs, m.Seq)
		}
	}
	return nil
}

// inboxMessageOf is the in-app message a delivery row stored, if any.
func inboxMessageOf(tx *bolt.Tx, tenant string, row Delivery) (InAppMessage, bool, error) {
	var m InAppMessage
	if row.Kind != "in_app" || row.ProviderMessageID == "" {
		return m, false, nil
	}
	prefix := inboxPrefix(tenant, row.SubscriberID)
	seq := tx.Bucket(bucketInboxIDs).Get(append(bytes.Clone(prefix), row.ProviderMessageID...))
	if seq == nil {
		return m, false, nil
	}
	ok, err := getJSON(tx.Bucket(bucketInbox), append(bytes.Clone(prefix), seq...), &m)
	return m, ok, err
}

// ForgetRuns drops the rows of expired runs whose events the log no
// longer holds: the run, its indexes, its deliveries, its ingress row and
// its read in-app messages. A run rerun since ExpiredRuns listed it (no
// longer finished at that end) is kept. A transaction whose last run goes
// and whose fan-out is over is marked expiring (ExpiringTransactions).
// Transactions' counters keep counting the runs that went.
func (s *Store) ForgetRuns(runs []ExpiredRun) error {
	if len(runs) == 0 {
		return nil
	}
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	err := s.guarded(func() error {
		return s.db.Update(func(tx *bolt.Tx) error {
			txns := map[string]string{} // key(tenant, txn) → tenant
			for _, r := range runs {
				txn, err := forgetRun(tx, r)
				if err != nil {
					return err
				}
				if txn != "" {
					txns[string(key(r.TenantID, txn))] = r.TenantID
				}
			}
			for k, tenant := range txns {
				if err := markExpiring(tx, tenant, []byte(k)); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	for _, r := range runs {
		s.runs.drop(string(key(r.TenantID, r.RunID)))
	}
	return nil
}

// forgetRun drops one run's rows; txn is its transaction, "" when the run
// was kept or had none.
func forgetRun(tx *bolt.Tx, r ExpiredRun) (txn string, err error) {
	ek := endKey(r.EndedAt, r.TenantID, r.RunID)
	if tx.Bucket(bucketRunsByEnd).Get(ek) == nil {
		return "", nil // rerun, or forgotten already
	}
	if err := tx.Bucket(bucketRunsByEnd).Delete(ek); err != nil {
		return "", err
	}
	rk := runRowOf(tx, r.TenantID, r.RunID)
	if rk == nil {
		return "", nil
	}
	rows, data := runRowsOf(tx, rk)
	if data == nil {
		return "", nil
	}
	var st runstate.State
	if err := decodeRun(r.TenantID, r.RunID, data, &st); err != nil {
		return "", err
	}
	if err := rows.Delete(rk); err != nil {
		return "", err
	}
	for _, del := range []struct {
		b []byte
		k []byte
	}{
		{bucketRunIDs, key(r.TenantID, r.RunID)},
		{bucketRunsByTxn, runTxnKey(r.TenantID, st.TransactionID, binary.BigEndian.Uint64(rk[len(rk)-8:]))},
		{bucketRunsByTime, key(r.TenantID, newestFirst(st.CreatedAt)+r.RunID)},
	} {
		if err := tx.Bucket(del.b).Delete(del.k); err != nil {
			return "", err
		}
	}
	if st.SubscriberID != nil {
		nb := tx.Bucket(bucketNotifs)
		nk := key(r.TenantID, st.TransactionID+"\x00"+*st.SubscriberID)
		var n Notification
		if ok, err := getJSON(nb, nk, &n); err != nil {
			return "", err
		} else if ok && n.RunID == r.RunID {
			if err := nb.Delete(nk); err != nil {
				return "", err
			}
		}
	}
	if err := forgetDeliveries(tx, r.TenantID, runDeliveriesAt(r.TenantID, r.RunID, rk)); err != nil {
		return "", err
	}
	return st.TransactionID, nil
}

// forgetDeliveries drops a run's delivery rows, their indexes, and the
// in-app messages they stored that were read; prefix is the run's
// runDeliveries.
func forgetDeliveries(tx *bolt.Tx, tenant string, prefix []byte) error {
	byRun := tx.Bucket(bucketDeliveriesByRun)
	rows := tx.Bucket(bucketDeliveries)
	var keys [][]byte
	c := byRun.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		id := string(k[len(prefix):])
		rk := key(tenant, id)
		var row Delivery
		ok, err := getDelivery(rows, rk, &row)
		if err != nil {
			return err
		}
		if ok {
			if err := forgetInboxMessage(tx, tenant, row); err != nil {
				return err
			}
			if err := tx.Bucket(bucketDeliveryAttempts).Delete(key(tenant, row.AttemptID)); err != nil {
				return err
			}
			if row.ProviderMessageID != "" {
				pk := key(tenant, row.ChannelKey+"\x00"+row.ProviderMessageID)
				if string(tx.Bucket(bucketDeliveriesByProviderID).Get(pk)) == id {
					if err := tx.Bucket(bucketDeliveriesByProviderID).Delete(pk); err != nil {
						return err
					}
				}
			}
			if err := rows.Delete(rk); err != nil {
				return err
			}
		}
		if err := byRun.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// forgetInboxMessage drops the in-app message a delivery row stored, when
// it was read, and takes it out of its inbox's counts.
func forgetInboxMessage(tx *bolt.Tx, tenant string, row Delivery) error {
	m, ok, err := inboxMessageOf(tx, tenant, row)
	if err != nil || !ok || m.ReadAt == nil {
		return err
	}
	prefix := inboxPrefix(tenant, row.SubscriberID)
	if err := tx.Bucket(bucketInbox).Delete(append(bytes.Clone(prefix), seqID(m.Seq)...)); err != nil {
		return err
	}
	if err := tx.Bucket(bucketInboxIDs).Delete(append(bytes.Clone(prefix), m.MessageID...)); err != nil {
		return err
	}
	return updateJSON(tx.Bucket(bucketInboxCounts), key(tenant, row.SubscriberID), func(c *InboxCounts) {
		c.add(counted(m), -1)
	})
}

// markExpiring marks a transaction expiring when it has no run left and
// its fan-out is over.
func markExpiring(tx *bolt.Tx, tenant string, tk []byte) error {
	var t Transaction
	if ok, err := getTxn(tx.Bucket(bucketTxns), tk, &t); err != nil || !ok {
		return err
	}
	if !t.Completed {
		return nil
	}
	prefix := append(bytes.Clone(tk), 0)
	if k, _ := tx.Bucket(bucketRunsByTxn).Cursor().Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) {
		return nil
	}
	return tx.Bucket(bucketTxnsExpiring).Put(tk, []byte{})
}

// ExpiringTransaction names a transaction whose runs have all gone.
type ExpiringTransaction struct {
	TenantID      string
	TransactionID string
}

// ExpiringTransactions returns up to limit transactions marked expiring.
func (s *Store) ExpiringTransactions(limit int) ([]ExpiringTransaction, error) {
	var out []ExpiringTransaction
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketTxnsExpiring).Cursor()
		for k, _ := c.First(); k != nil && len(out) < limit; k, _ = c.Next() {
			if tenant, txn, ok := strings.Cut(string(k), "\x00"); ok {
				out = append(out, ExpiringTransaction{TenantID: tenant, TransactionID: txn})
			}
		}
		return nil
	})
	return out, err
}

// ForgetTransactions drops expiring transactions' rows (each its row, its
// index entries, the ingress rows left: recipients that got no run), once
// their events have left the log, in one write for the lot. A transaction
// that gained a run since (none can: its fan-out is over) is only
// unmarked.
func (s *Store) ForgetTransactions(ts []ExpiringTransaction) error {
	if len(ts) == 0 {
		return nil
	}
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	// Once committed (or not): a cancelled transaction forgotten is no
	// longer cancelled, and its id may be triggered again.
	defer s.cancels.invalidate()
	return s.guarded(func() error {
		return s.db.Update(func(tx *bolt.Tx) error {
			for _, t := range ts {
				if err := forgetTransaction(tx, t); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

func forgetTransaction(tx *bolt.Tx, t ExpiringTransaction) error {
	tk := key(t.TenantID, t.TransactionID)
	if err := tx.Bucket(bucketTxnsExpiring).Delete(tk); err != nil {
		return err
	}
	prefix := append(bytes.Clone(tk), 0)
	if k, _ := tx.Bucket(bucketRunsByTxn).Cursor().Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) {
		return nil
	}
	var row Transaction
	ok, err := getTxn(tx.Bucket(bucketTxns), tk, &row)
	if err != nil {
		return err
	}
	if ok {
		if err := tx.Bucket(bucketTxnsByTime).Delete(key(t.TenantID, newestFirst(row.CreatedAt)+t.TransactionID)); err != nil {
			return err
		}
		if err := tx.Bucket(bucketTxns).Delete(tk); err != nil {
			return err
		}
		if err := tx.Bucket(bucketTxnsCancelled).Delete(tk); err != nil {
			return err
		}
	}
	return deletePrefix(tx.Bucket(bucketNotifs), prefix)
}
