package projections

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// A row of the deliveries bucket is written when an attempt is claimed,
// read and written again when its outcome is recorded, and read by the
// projector's counters: it is kept in a binary form of its own rather
// than JSON, as a transaction's row is (txnrow.go). Its first byte is
// deliveryRowBinary. A file of JSON rows is one an older ModelsVersion
// built, which Open rebuilds.
//
// After the first byte: a byte of flags (dlvKey...), then AttemptID,
// RunID, StepID, SubscriberID, ChannelKey, Kind, Address, Status,
// ProviderMessageID and Reason; IdempotencyKey when dlvKey (a row of a
// run's send leaves out the key <runId>:<stepId> its ids make); the
// error's code and message when dlvError; CreatedAt and UpdatedAt; and
// when dlvEvents, the number of events, then each one's type, time and
// detail. Strings are their length (a uvarint), then their bytes; a time
// is its seconds since 1970 (a varint), then its nanoseconds (a uvarint),
// read back in UTC as the events they come from hold them.
const deliveryRowBinary = 0x03

const (
	dlvKey = 1 << iota
	dlvError
	dlvTransient
	dlvEvents
)

// errDeliveryRow is a row of the deliveries bucket that cannot be read.
var errDeliveryRow = errors.New("projections: damaged delivery row")

// impliedKey is the idempotency key a row without one has: a run's send's.
func impliedKey(runID, stepID string) string {
	if runID == "" {
		return ""
	}
	return sendKey(runID, stepID)
}

// encodeDelivery returns d's row (d.WorkflowID is not kept).
func encodeDelivery(d *Delivery) []byte {
	n := 64 + len(d.AttemptID) + len(d.RunID) + len(d.StepID) + len(d.SubscriberID) + len(d.ChannelKey) +
		len(d.Kind) + len(d.Address) + len(d.Status) + len(d.ProviderMessageID) + len(d.Reason)
	var flags byte
	if d.IdempotencyKey != impliedKey(d.RunID, d.StepID) {
		flags |= dlvKey
		n += len(d.IdempotencyKey)
	}
	if d.Error != nil {
		flags |= dlvError
		n += len(d.Error.Code) + len(d.Error.Message)
		if d.Error.Transient {
			flags |= dlvTransient
		}
	}
	if len(d.Events) > 0 {
		flags |= dlvEvents
		n += 24 * len(d.Events)
	}
	b := make([]byte, 0, n)
	b = append(b, deliveryRowBinary, flags)
	for _, s := range []string{d.AttemptID, d.RunID, d.StepID, d.SubscriberID, d.ChannelKey, d.Kind, d.Address,
		d.Status, d.ProviderMessageID, d.Reason} {
		b = appendString(b, s)
	}
	if flags&dlvKey != 0 {
		b = appendString(b, d.IdempotencyKey)
	}
	if d.Error != nil {
		b = appendString(b, d.Error.Code)
		b = appendString(b, d.Error.Message)
	}
	b = appendTime(b, d.CreatedAt)
	b = appendTime(b, d.UpdatedAt)
	if len(d.Events) > 0 {
		b = binary.AppendUvarint(b, uint64(len(d.Events)))
		for _, e := range d.Events {
			b = appendString(b, e.Type)
			b = appendTime(b, e.At)
			b = appendString(b, e.Detail)
		}
	}
	return b
}

// decodeDelivery reads a row into d.
func decodeDelivery(row []byte, d *Delivery) error {
	if len(row) < 2 || row[0] != deliveryRowBinary {
		return fmt.Errorf("%w: %d bytes", errDeliveryRow, len(row))
	}
	flags := row[1]
	r := rowReader{b: row[2:]}
	*d = Delivery{}
	for _, s := range []*string{&d.AttemptID, &d.RunID, &d.StepID, &d.SubscriberID, &d.ChannelKey, &d.Kind, &d.Address,
		&d.Status, &d.ProviderMessageID, &d.Reason} {
		*s = r.string()
	}
	if flags&dlvKey != 0 {
		d.IdempotencyKey = r.string()
	} else {
		d.IdempotencyKey = impliedKey(d.RunID, d.StepID)
	}
	if flags&dlvError != 0 {
		d.Error = &DeliveryError{Code: r.string(), Message: r.string(), Transient: flags&dlvTransient != 0}
	}
	d.CreatedAt, d.UpdatedAt = r.time(), r.time()
	if flags&dlvEvents != 0 {
		n := r.uint()
		if n == 0 || n > uint64(len(r.b)) { // every event takes 3 bytes at least
			r.bad = true
		} else {
			d.Events = make([]DeliveryEvent, n)
			for i := range d.Events {
				d.Events[i] = DeliveryEvent{Type: r.string(), At: r.time(), Detail: r.string()}
			}
		}
	}
	if r.bad || len(r.b) != 0 || flags&^(dlvKey|dlvError|dlvTransient|dlvEvents) != 0 {
		*d = Delivery{}
		return fmt.Errorf("%w: %d bytes", errDeliveryRow, len(row))
	}
	return nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendTime(b []byte, at time.Time) []byte {
	b = binary.AppendVarint(b, at.Unix())
	return binary.AppendUvarint(b, uint64(at.Nanosecond()))
}

// putDeliveryRow writes d's row at k.
func putDeliveryRow(b *bolt.Bucket, k []byte, d *Delivery) error {
	return b.Put(k, encodeDelivery(d))
}

// getDelivery reads the row at k into d; ok is false when there is none.
func getDelivery(b *bolt.Bucket, k []byte, d *Delivery) (ok bool, err error) {
	row := b.Get(k)
	if row == nil {
		return false, nil
	}
	return true, decodeDelivery(row, d)
}
