package projections

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// A row of the txns bucket is read and written several times for every
// trigger (its acceptance, its run's start, each batch its runs move in),
// most of them to one subscriber: it is kept in a binary form of its own
// rather than JSON, which cost about 4% of the serve CPU of single
// triggers (BENCHMARKS.md). Its first byte is txnRowBinary. A file of
// JSON rows is one an older ModelsVersion built, which Open rebuilds.
//
// After the first byte: a byte of flags (txnSingle...), Count, Recipients
// when txnHasRecipients, WorkflowID (its length, then its bytes),
// CreatedAt and UpdatedAt (seconds since 1970, then nanoseconds), the six
// run counters and the three delivery counters, in the order of their
// fields. Integers are varints (encoding/binary), lengths and nanoseconds
// unsigned. Times are read back in UTC, as the events they come from
// hold them.
const txnRowBinary = 0x02

const (
	txnSingle = 1 << iota
	txnCompleted
	txnCancelled
	txnHasRecipients
)

// errTxnRow is a row of the txns bucket that cannot be read.
var errTxnRow = errors.New("projections: damaged transaction row")

// encodeTxn returns t's row (t.TransactionID is its key's, not kept).
func encodeTxn(t *Transaction) []byte {
	b := make([]byte, 0, 48+len(t.WorkflowID))
	var flags byte
	for _, f := range []struct {
		on  bool
		bit byte
	}{{t.Single, txnSingle}, {t.Completed, txnCompleted}, {t.Cancelled, txnCancelled}, {t.Recipients != nil, txnHasRecipients}} {
		if f.on {
			flags |= f.bit
		}
	}
	b = append(b, txnRowBinary, flags)
	b = binary.AppendVarint(b, int64(t.Count))
	if t.Recipients != nil {
		b = binary.AppendVarint(b, int64(*t.Recipients))
	}
	b = appendString(b, t.WorkflowID)
	b = appendTime(b, t.CreatedAt)
	b = appendTime(b, t.UpdatedAt)
	r, d := t.Runs, t.Deliveries
	for _, n := range []int{r.Started, r.Running, r.Completed, r.Failed, r.Cancelled, r.Digested, d.Sent, d.Skipped, d.Failed} {
		b = binary.AppendVarint(b, int64(n))
	}
	return b
}

// decodeTxn reads a row into t, leaving t.TransactionID as it is.
func decodeTxn(row []byte, t *Transaction) error {
	if len(row) < 2 || row[0] != txnRowBinary {
		return fmt.Errorf("%w: %d bytes", errTxnRow, len(row))
	}
	flags := row[1]
	r := rowReader{b: row[2:]}
	id := t.TransactionID
	*t = Transaction{TransactionID: id, Single: flags&txnSingle != 0, Completed: flags&txnCompleted != 0,
		Cancelled: flags&txnCancelled != 0}
	t.Count = r.int()
	if flags&txnHasRecipients != 0 {
		n := r.int()
		t.Recipients = &n
	}
	t.WorkflowID = r.string()
	t.CreatedAt, t.UpdatedAt = r.time(), r.time()
	t.Runs = TxnRuns{r.int(), r.int(), r.int(), r.int(), r.int(), r.int()}
	t.Deliveries = TxnDeliveries{r.int(), r.int(), r.int()}
	if r.bad || len(r.b) != 0 {
		return fmt.Errorf("%w: %d bytes", errTxnRow, len(row))
	}
	return nil
}

// rowReader reads a binary row's fields in order (a transaction's, a
// delivery's); a field past the row's end sets bad (and reads as zero).
type rowReader struct {
	b   []byte
	bad bool
}

// int reads a varint: binary.AppendVarint's zig-zag over a uvarint.
func (r *rowReader) int() int {
	u := r.uint()
	return int(int64(u>>1) ^ -int64(u&1))
}

func (r *rowReader) uint() uint64 {
	n, w := binary.Uvarint(r.b)
	if w <= 0 {
		r.bad, r.b = true, nil
		return 0
	}
	r.b = r.b[w:]
	return n
}

func (r *rowReader) string() string {
	n := r.uint()
	if n > uint64(len(r.b)) {
		r.bad, r.b = true, nil
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *rowReader) time() time.Time {
	sec := r.int()
	nsec := r.uint()
	if nsec >= uint64(time.Second) {
		r.bad = true
		return time.Time{}
	}
	return time.Unix(int64(sec), int64(nsec)).UTC()
}

// putTxn writes t's row at k.
func putTxn(b *bolt.Bucket, k []byte, t *Transaction) error {
	return b.Put(k, encodeTxn(t))
}

// getTxn reads the row at k into t; ok is false when there is none.
func getTxn(b *bolt.Bucket, k []byte, t *Transaction) (ok bool, err error) {
	row := b.Get(k)
	if row == nil {
		return false, nil
	}
	return true, decodeTxn(row, t)
}

// updateTxn changes the row at k, if there is one.
func updateTxn(b *bolt.Bucket, k []byte, change func(*Transaction)) error {
	var t Transaction
	if ok, err := getTxn(b, k, &t); err != nil || !ok {
		return err
	}
	change(&t)
	return putTxn(b, k, &t)
}
