package projections

import (
	"bytes"
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
	// deliveries_by_run: <run's prefix><seq> → empty, the prefix being
	// the run's row key (see runDeliveries): a broadcast's deliveries sit
	// in their runs' start order, as the runs' rows do.
	bucketDeliveriesByRun = []byte("deliveries_by_run")
	// deliveries_by_provider_id: tenant\x00channelKey\x00providerMessageId
	// → <seq>, to find the row a provider's report names.
	bucketDeliveriesByProviderID = []byte("deliveries_by_provider_id")
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
	Reason string `json:"reason,omitempty"`
	// Events are what the provider reported of the sent message, oldest
	// first (DeliveryReported).
	Events    []DeliveryEvent `json:"events,omitempty"`
	CreatedAt time.Time       `json:"createdAt"`
	UpdatedAt time.Time       `json:"updatedAt"`
	// WorkflowID is the workflow of the row's run, read with the row by
	// DeliveriesWhere (not kept on the row).
	WorkflowID string `json:"-"`
}

// deliveriesBucket is the deliveries bucket of tx for writing. Its rows
// are written pending and grow by about a fifth when their outcome is
// recorded, often in a later batch: its pages split at
// deliveriesFill keep room for that growth, where appendFill's would
// split again into pages half empty (BENCHMARKS.md).
func deliveriesBucket(tx *bolt.Tx) *bolt.Bucket {
	b := tx.Bucket(bucketDeliveries)
	b.FillPercent = deliveriesFill
	return b
}

// deliveriesFill is the fill of the deliveries' pages (deliveriesBucket).
const deliveriesFill = 0.8

// sendKey is the idempotency key of a run's send step.
func sendKey(runID, stepID string) string { return runID + ":" + stepID }

// DeliveryEvent is one report of a provider on a sent message.
type DeliveryEvent struct {
	Type string    `json:"type"`
	At   time.Time `json:"at"`
	// Detail is the bounce type of a bounce ("hard", "soft"), else the
	// provider's short code, if any.
	Detail string `json:"detail,omitempty"`
}

// MaxDeliveryEvents bounds the events kept on one row: a message opened
// a thousand times keeps its first reports and every change of status.
const MaxDeliveryEvents = 100

// reportRank orders the statuses a report may give a row: a report never
// moves a row back (a late "delivered" after a bounce), and opens and
// clicks add an event but leave the status as it is.
var reportRank = map[string]int{
	DeliverySent:            0,
	events.ReportDelivered:  1,
	events.ReportFailed:     2,
	events.ReportBounced:    2,
	events.ReportComplained: 3,
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
			events.DeliveryReported:  decoded(applyDeliveryReported),
		}, [][]byte{bucketDeliveries, bucketDeliveryAttempts,
			bucketDeliveriesByRun, bucketDeliveriesByProviderID}
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
	if err := putDeliveryRow(deliveriesBucket(tx), key(ev.TenantID, id), &row); err != nil {
		return err
	}
	if err := appendBucket(tx, bucketDeliveryAttempts).Put(key(ev.TenantID, row.AttemptID), []byte(id)); err != nil {
		return err
	}
	return tx.Bucket(bucketDeliveriesByRun).Put(append(runDeliveries(tx, ev.TenantID, row.RunID), id...), []byte{})
}

// runDeliveries is the prefix of the keys of run runID's deliveries in
// deliveries_by_run, each followed by its row's seqID: the key of the
// run's row (runRowKey, tenant\x00<start>), so that the deliveries of
// runs started together, a broadcast's, share pages as their rows do,
// where keys of hashed run ids put each on a page of its own. A delivery
// of no run, or of one without a row, has tenant\x00\xff<runId>\x00: a
// start's first byte is 0 (sequences stay below 2^56), so the two never
// meet. A run's row exists before its first delivery (its start comes
// first in the log) and keeps its key while the run is kept.
func runDeliveries(tx *bolt.Tx, tenant, runID string) []byte {
	return runDeliveriesAt(tenant, runID, runRowOf(tx, tenant, runID))
}

// runDeliveriesAt is runDeliveries of a run whose row key is row (nil:
// none).
func runDeliveriesAt(tenant, runID string, row []byte) []byte {
	if row != nil && runID != "" {
		return bytes.Clone(row)
	}
	return key(tenant, "\xff"+runID+"\x00")
}

func applyDeliverySent(tx *bolt.Tx, ev eventlog.Event, d events.DeliverySentData) error {
	var channelKey string
	if err := updateDelivery(tx, ev.TenantID, d.AttemptID, func(row *Delivery) {
		row.Status = DeliverySent
		row.ProviderMessageID = d.ProviderMessageID
		row.Error = nil
		row.UpdatedAt = ev.At
		channelKey = row.ChannelKey
	}); err != nil {
		return err
	}
	id := tx.Bucket(bucketDeliveryAttempts).Get(key(ev.TenantID, d.AttemptID))
	if id == nil || d.ProviderMessageID == "" || channelKey == "" {
		return nil
	}
	return tx.Bucket(bucketDeliveriesByProviderID).Put(
		key(ev.TenantID, channelKey+"\x00"+d.ProviderMessageID), append([]byte{}, id...))
}

// applyDeliveryReported adds a provider's report to its row: an event,
// and the status when it ranks above the row's (see reportRank).
func applyDeliveryReported(tx *bolt.Tx, ev eventlog.Event, d events.DeliveryReportedData) error {
	return updateDelivery(tx, ev.TenantID, d.AttemptID, func(row *Delivery) {
		detail := d.Detail
		if d.Bounce != "" {
			detail = d.Bounce
		}
		r, ranked := reportRank[d.Status]
		moves := ranked && r > reportRank[row.Status]
		if len(row.Events) < MaxDeliveryEvents || moves {
			row.Events = append(row.Events, DeliveryEvent{Type: d.Status, At: ev.At, Detail: detail})
		}
		if moves {
			row.Status = d.Status
		}
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
	b, k := deliveriesBucket(tx), key(tenant, string(id))
	var row Delivery
	if ok, err := getDelivery(b, k, &row); err != nil || !ok {
		return err
	}
	change(&row)
	return putDeliveryRow(b, k, &row)
}

// DeliveryByProviderID returns the row of the message a channel's
// provider knows as providerMessageID, or ErrNotFound.
func (s *Store) DeliveryByProviderID(tenant, channelKey, providerMessageID string) (Delivery, error) {
	var row Delivery
	err := s.view(func(tx *bolt.Tx) error {
		id := tx.Bucket(bucketDeliveriesByProviderID).Get(key(tenant, channelKey+"\x00"+providerMessageID))
		if id == nil {
			return ErrNotFound
		}
		ok, err := getDelivery(tx.Bucket(bucketDeliveries), key(tenant, string(id)), &row)
		if err == nil && !ok {
			err = ErrNotFound
		}
		return err
	})
	return row, err
}

// Deliveries lists a tenant's delivery attempts oldest first: one run's
// when runID is set, else every one.
func (s *Store) Deliveries(tenant, runID string, p Page) (rows []Delivery, next string, err error) {
	return s.DeliveriesWhere(tenant, DeliveryFilter{RunID: runID}, p)
}

// DeliveryFilter narrows a list of deliveries; an empty field matches
// every row.
type DeliveryFilter struct {
	RunID        string
	SubscriberID string
	// WorkflowID matches the rows of the workflow's runs.
	WorkflowID string
	Status     string
	Kind       string
	ChannelKey string
	// Since and Until bound the row's creation: Since <= createdAt < Until.
	Since, Until time.Time
	// Desc lists newest first.
	Desc bool
}

func (f DeliveryFilter) narrows() bool {
	return f.SubscriberID != "" || f.WorkflowID != "" || f.Status != "" || f.Kind != "" || f.ChannelKey != "" ||
		!f.Since.IsZero() || !f.Until.IsZero()
}

// MaxDeliveriesRead bounds the rows one filtered page reads: a page whose
// filter matches few rows ends short when it has read this many, with a
// cursor to read on from there.
const MaxDeliveriesRead = 5000

// DeliveriesWhere lists a tenant's delivery attempts that match f, in the
// order they were made (newest first when f.Desc), through one run's
// index when f.RunID is set. The filters apply while walking, reading at
// most MaxDeliveriesRead rows a page.
func (s *Store) DeliveriesWhere(tenant string, f DeliveryFilter, p Page) (rows []Delivery, next string, err error) {
	o := scan{Desc: f.Desc}
	if f.narrows() {
		o.MaxRead = MaxDeliveriesRead
	}
	err = s.view(func(tx *bolt.Tx) error {
		all := tx.Bucket(bucketDeliveries)
		workflows := map[string]string{} // run id → workflow id, read once a page
		workflowOf := func(runID string) (string, error) {
			if w, ok := workflows[runID]; ok {
				return w, nil
			}
			var st struct {
				WorkflowID string `json:"workflowId"`
			}
			if _, err := getRunPart(tx, tenant, runID, &st); err != nil {
				return "", err
			}
			workflows[runID] = st.WorkflowID
			return st.WorkflowID, nil
		}
		match := func(row *Delivery) (bool, error) {
			w, err := workflowOf(row.RunID)
			if err != nil {
				return false, err
			}
			row.WorkflowID = w
			if (f.SubscriberID != "" && row.SubscriberID != f.SubscriberID) || (f.Status != "" && row.Status != f.Status) ||
				(f.Kind != "" && row.Kind != f.Kind) || (f.ChannelKey != "" && row.ChannelKey != f.ChannelKey) ||
				(!f.Since.IsZero() && row.CreatedAt.Before(f.Since)) || (!f.Until.IsZero() && !row.CreatedAt.Before(f.Until)) {
				return false, nil
			}
			return f.WorkflowID == "" || w == f.WorkflowID, nil
		}
		if f.RunID != "" {
			rows, next, err = scanPrefix(tx.Bucket(bucketDeliveriesByRun), runDeliveries(tx, tenant, f.RunID), p, o,
				func(id string, _ []byte) (Delivery, bool, error) {
					var row Delivery
					ok, err := getDelivery(all, key(tenant, id), &row)
					if err != nil || !ok {
						return row, false, err
					}
					ok, err = match(&row)
					return row, ok, err
				})
			return err
		}
		rows, next, err = scanPrefix(all, key(tenant, ""), p, o, func(_ string, v []byte) (Delivery, bool, error) {
			var row Delivery
			if err := decodeDelivery(v, &row); err != nil {
				return row, false, err
			}
			ok, err := match(&row)
			return row, ok, err
		})
		return err
	})
	return rows, next, err
}
