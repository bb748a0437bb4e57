package projections

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	bolt "go.etcd.io/bbolt"
)

var (
	// deliveries: tenant\x00<seq> → Delivery, seq being the stream sequence
	// of the DeliveryAttempted as 16 hex digits: rows in creation order.
	bucketDeliveries = []byte("deliveries")
	// delivery_attempts: tenant\x00attemptId → <seq>, to find a row from
	// its outcome.
	bucketDeliveryAttempts = []byte("delivery_attempts")
	// deliveries_by_run: tenant\x00runId\x00<seq> → empty.
	bucketDeliveriesByRun = []byte("deliveries_by_run")
)

// Statuses of a delivery attempt.
const (
	DeliveryPending = "pending" // claimed, the provider's answer not recorded yet
	DeliverySent    = "sent"
	DeliveryFailed  = "failed"
	DeliverySkipped = "skipped" // nothing sent on purpose; Reason says why
)

// Delivery is the read model of one delivery attempt (a row of the egress
// ledger).
type Delivery struct {
	events.DeliveryAttempt
	Address           string         `json:"address"`
	Status            string         `json:"status"`
	ProviderMessageID string         `json:"providerMessageId,omitempty"`
	Error             *DeliveryError `json:"error,omitempty"`
	// Reason is why a skipped row was skipped ("no_address", "suppressed").
	Reason    string    `json:"reason,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// DeliveryError is why an attempt failed.
type DeliveryError struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Transient bool   `json:"transient"`
}

func deliveryModels() (map[string]applyFunc, [][]byte) {
	return map[string]applyFunc{
			events.DeliveryAttempted: decoded(applyDeliveryAttempted),
			events.DeliverySent:      decoded(applyDeliverySent),
			events.DeliveryFailed:    decoded(applyDeliveryFailed),
			events.DeliverySkipped:   decoded(applyDeliverySkipped),
		}, [][]byte{bucketDeliveries, bucketDeliveryAttempts,
			bucketDeliveriesByRun}
}

func seqID(seq uint64) string { return fmt.Sprintf("%016x", seq) }

func applyDeliveryAttempted(tx *bolt.Tx, ev eventlog.Event, d events.DeliveryAttemptedData) error {
	if d.Takeover != "" {
		if err := updateDelivery(tx, ev.TenantID, d.Takeover, func(row *Delivery) {
			if row.Status == DeliveryPending {
				row.Status = DeliveryFailed
				row.Error = &DeliveryError{Code: apierr.CodeLeaseExpired, Transient: true,
					Message: "no outcome was recorded before the attempt's process stopped or its lease ran out; attempt " + d.AttemptID + " replaced it"}
				row.UpdatedAt = ev.At
			}
		}); err != nil {
			return err
		}
	}
	return putDelivery(tx, ev, Delivery{
		DeliveryAttempt: d.DeliveryAttempt, Address: d.Address,
		Status: DeliveryPending, CreatedAt: ev.At, UpdatedAt: ev.At,
	})
}

func applyDeliverySkipped(tx *bolt.Tx, ev eventlog.Event, d events.DeliverySkippedData) error {
	return putDelivery(tx, ev, Delivery{
		DeliveryAttempt: d.DeliveryAttempt,
		Status:          DeliverySkipped, Reason: d.Reason, CreatedAt: ev.At, UpdatedAt: ev.At,
	})
}

// putDelivery writes a new row, keyed by its event's sequence, and its
// indexes.
func putDelivery(tx *bolt.Tx, ev eventlog.Event, row Delivery) error {
	id := seqID(ev.Seq)
	if err := putJSON(appendBucket(tx, bucketDeliveries), key(ev.TenantID, id), row); err != nil {
		return err
	}
	if err := appendBucket(tx, bucketDeliveryAttempts).Put(key(ev.TenantID, row.AttemptID), []byte(id)); err != nil {
		return err
	}
	return tx.Bucket(bucketDeliveriesByRun).Put(key(ev.TenantID, row.RunID+"\x00"+id), []byte{})
}

func applyDeliverySent(tx *bolt.Tx, ev eventlog.Event, d events.DeliverySentData) error {
	return updateDelivery(tx, ev.TenantID, d.AttemptID, func(row *Delivery) {
		row.Status = DeliverySent
		row.ProviderMessageID = d.ProviderMessageID
		row.Error = nil
		row.UpdatedAt = ev.At
	})
}

func applyDeliveryFailed(tx *bolt.Tx, ev eventlog.Event, d events.DeliveryFailedData) error {
	return updateDelivery(tx, ev.TenantID, d.AttemptID, func(row *Delivery) {
		row.Status = DeliveryFailed
		row.Error = &DeliveryError{Code: d.Code, Message: d.Message, Transient: d.Transient}
		row.UpdatedAt = ev.At
	})
}

// updateDelivery changes the row of attemptID, if there is one.
func updateDelivery(tx *bolt.Tx, tenant, attemptID string, change func(*Delivery)) error {
	id := tx.Bucket(bucketDeliveryAttempts).Get(key(tenant, attemptID))
	if id == nil {
		return nil
	}
	b := appendBucket(tx, bucketDeliveries)
	k := key(tenant, string(id))
	var row Delivery
	if ok, err := getJSON(b, k, &row); err != nil || !ok {
		return err
	}
	change(&row)
	return putJSON(b, k, row)
}

// Deliveries lists a tenant's delivery attempts oldest first: one run's
// when runID is set, else every one.
func (s *Store) Deliveries(tenant, runID string, p Page) (rows []Delivery, next string, err error) {
	err = s.view(func(tx *bolt.Tx) error {
		all := tx.Bucket(bucketDeliveries)
		if runID != "" {
			rows, next, err = listPrefix(tx.Bucket(bucketDeliveriesByRun), key(tenant, runID+"\x00"), p,
				func(id string, _ []byte) (Delivery, bool, error) {
					var row Delivery
					ok, err := getJSON(all, key(tenant, id), &row)
					return row, ok, err
				})
			return err
		}
		rows, next, err = listTenant(all, tenant, p, func(_ string, v []byte) (Delivery, bool, error) {
			var row Delivery
			return row, true, json.Unmarshal(v, &row)
		})
		return err
	})
	return rows, next, err
}
