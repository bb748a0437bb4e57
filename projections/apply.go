package projections

import (
	"encoding/binary"
	"fmt"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	bolt "go.etcd.io/bbolt"
)

// applyFunc applies one event to the read models inside tx.
type applyFunc func(tx *bolt.Tx, ev eventlog.Event) error

// decoded is the applyFunc of apply, which takes the event's data decoded
// as D.
func decoded[D any](apply func(tx *bolt.Tx, ev eventlog.Event, d D) error) applyFunc {
	return func(tx *bolt.Tx, ev eventlog.Event) error {
		var d D
		if err := ev.Decode(&d); err != nil {
			return err
		}
		return apply(tx, ev, d)
	}
}

// ApplyBatch applies events in one transaction and moves the checkpoint to
// the last one. Events at or below the checkpoint are skipped, so a
// redelivered batch is harmless. An event the read models cannot decode
// is logged and skipped: one bad record must not stop every projection.
func (s *Store) ApplyBatch(evs []eventlog.Event) error {
	if len(evs) == 0 {
		return nil
	}
	var last uint64
	erased, endpoints, bridges, keys, channels, cancels, subscribers := false, false, false, false, false, false, false
	var runs runFold
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	s.dbMu.RLock()
	err := s.guarded(func() error {
		return s.db.Update(func(tx *bolt.Tx) error {
			cp := checkpoint(tx)
			last = cp
			runs = runFold{cache: &s.runs}
			for _, ev := range evs {
				if ev.Seq <= cp {
					continue
				}
				var err error
				switch ev.Type {
				case events.SubscriberErased:
					erased = true
				case events.WebhookCreated, events.WebhookDeleted:
					endpoints = true
				case events.BridgeConfigured:
					bridges = true
				case events.APIKeyCreated, events.APIKeyRevoked:
					keys = true
				case events.ChannelConfigured, events.ChannelUpdated, events.ChannelDeleted, events.ChannelInboundRotated:
					channels = true
				case events.TransactionCancelled:
					cancels = true
				}
				if subscriberRowEvents[ev.Type] {
					subscribers = true
				}
				if runEventTypes[ev.Type] {
					err = runs.apply(tx, ev)
				} else if h := s.handlers[ev.Type]; h != nil {
					err = h(tx, ev)
					if err == nil && deliveryOutcomes[ev.Type] {
						err = runs.delivery(tx, ev)
					}
				}
				if err == nil {
					err = countStats(tx, ev, &runs)
				}
				if err != nil {
					s.log.Error("projection skipped an event it cannot apply",
						"seq", ev.Seq, "type", ev.Type, "tenant", ev.TenantID, "err", err)
				}
				last = ev.Seq
			}
			if err := runs.flush(tx); err != nil {
				return err
			}
			var b [8]byte
			binary.BigEndian.PutUint64(b[:], last)
			return tx.Bucket(bucketMeta).Put(keyCheckpoint, b[:])
		})
	})
	s.dbMu.RUnlock()
	if err != nil {
		return fmt.Errorf("projections: apply: %w", err)
	}
	runs.committed()
	if erased {
		// Before the erase is visible as applied: a caller waiting for it
		// finds the file already free of the subscriber's data.
		if err := s.compact(); err != nil {
			return err
		}
	}
	if endpoints {
		s.endpointsGen.Add(1)
	}
	if bridges {
		s.bridges.invalidate()
	}
	if keys {
		s.apiKeys.invalidate()
	}
	if channels {
		s.channels.invalidate()
	}
	if cancels {
		s.cancels.invalidate()
	}
	if subscribers {
		s.subscribers.invalidate()
	}
	// Before the waiters wake: one that is not clear yet reads ahead anew.
	s.ahead.applied(last)
	s.mu.Lock()
	if last > s.applied && !s.closed {
		s.applied = last
		close(s.changed)
		s.changed = make(chan struct{})
	}
	s.mu.Unlock()
	return nil
}

func checkpoint(tx *bolt.Tx) uint64 {
	v := tx.Bucket(bucketMeta).Get(keyCheckpoint)
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}
