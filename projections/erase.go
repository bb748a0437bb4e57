package projections

import (
	"bytes"
	"fmt"
	"os"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	bolt "go.etcd.io/bbolt"
)

// erasedMessage replaces a delivery error's message when its subscriber is
// erased: a provider's reply may quote the address.
const erasedMessage = "erased"

// applySubscriberErased deletes the subscriber and its subscriptions, as
// SubscriberDeleted does, deletes its in-app messages, and blanks the addresses (and error messages) of
// its delivery rows. Store.ApplyBatch compacts the file afterwards, so the
// pages that held the data are not left free in it.
func applySubscriberErased(tx *bolt.Tx, ev eventlog.Event, d events.SubscriberErasedData) error {
	if err := applySubscriberDeleted(tx, ev, events.SubscriberDeletedData{SubscriberID: d.SubscriberID}); err != nil {
		return err
	}
	if err := eraseInbox(tx, ev.TenantID, d.SubscriberID); err != nil {
		return err
	}
	b := appendBucket(tx, bucketDeliveries)
	prefix := key(ev.TenantID, "")
	type change struct {
		k   []byte
		row Delivery
	}
	var changes []change
	c := b.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var row Delivery
		if err := decodeDelivery(v, &row); err != nil {
			return err
		}
		if row.SubscriberID != d.SubscriberID {
			continue
		}
		row.Address = ""
		if row.Error != nil {
			row.Error.Message = erasedMessage
		}
		changes = append(changes, change{bytes.Clone(k), row})
	}
	for _, ch := range changes {
		if err := putDeliveryRow(b, ch.k, &ch.row); err != nil {
			return err
		}
	}
	return nil
}

// compact rewrites the file into a new one holding only its live keys and
// values, and swaps it in: bbolt leaves the bytes of freed pages in the
// file, which must not keep an erased subscriber's data. Reads wait while
// it runs.
func (s *Store) compact() error {
	s.dbMu.Lock()
	defer s.dbMu.Unlock()
	began := time.Now()
	tmp := s.path + ".compact"
	if err := os.Remove(tmp); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("projections: compact: %w", err)
	}
	dst, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: 5 * time.Second, NoSync: true,
		NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return fmt.Errorf("projections: compact: %w", err)
	}
	err = bolt.Compact(dst, s.db, 0)
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("projections: compact: %w", err)
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("projections: compact: %w", err)
	}
	if err := os.Rename(tmp, s.path); err != nil {
		os.Remove(tmp)
		db, oerr := openDB(s.path)
		if oerr != nil {
			return fmt.Errorf("projections: compact: %w (reopen: %v)", err, oerr)
		}
		s.db = db
		return fmt.Errorf("projections: compact: %w", err)
	}
	db, err := openDB(s.path)
	if err != nil {
		return fmt.Errorf("projections: compact: reopen: %w", err)
	}
	s.db = db
	s.log.Info("projections compacted after an erasure", "path", s.path, "took", time.Since(began))
	return nil
}
