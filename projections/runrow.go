package projections

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/heraldhq/herald/runstate"
	"github.com/klauspost/compress/flate"
	bolt "go.etcd.io/bbolt"
)

// A run's row is its state as JSON without its run and tenant ids, in
// runs while the run runs and in runs_done once it has ended (see
// bucketRunsDone). Its key is tenant\x00<start>, start being the stream
// sequence of the event that started the run, 8 bytes big-endian (see
// runRowKey): a broadcast's runs, started in fan-out order, sit together,
// and a commit of their events rewrites a few neighbouring pages rather
// than a page a run, as keys of hashed run ids did. run_ids finds a run's
// row from its id. A finished run's row, which is written once more at
// most and then kept until retention removes it, is deflated against
// runRowDict: the first byte then says so (rowDeflated; a JSON row starts
// with '{'). At a finished run's typical 600-700 bytes of JSON, that
// keeps about a third (BENCHMARKS.md).
//
// The dictionary is part of the file format: rows written with it are read
// with it. A change of dictionary takes a new first byte (and the old one
// kept for reading), or a new ModelsVersion.
const rowDeflated = 0x01

// runRowDict is the preset dictionary of a deflated run row: the JSON
// names and values most rows hold, the most frequent last (deflate codes a
// nearer match in fewer bits).
var runRowDict = []byte(`{"code":"","message":""},"heldUntil":"","wakeAt":"","waitEvent":"","digest":"","signals":[{"seq":1,"event":"","payload":{}}],` +
	`"error":{"code":"","message":""},"reason":"preference","providerMessageId":"","status":"skipped","status":"failed","status":"cancelled",` +
	`{"runId":"","tenantId":"","transactionId":"txn_","workflowId":"","subscriberId":"","status":"completed","steps":[` +
	`{"stepId":"","type":"delay","status":"completed","attempts":1,"output":null},` +
	`{"stepId":"","type":"run","status":"completed","attempts":1,"output":{"id":"","name":"","email":""}},` +
	`{"stepId":"","type":"send","status":"completed","attempts":1,"output":{"attemptId":"att_","status":"sent","providerMessageId":""}}],` +
	`"createdAt":"2026-01-01T00:00:00.000000000Z","updatedAt":"2026-01-01T00:00:00.000000000Z","lastSeq":`)

// runRowLevel is the deflate level of a finished run's row: klauspost's
// level 5 takes the dictionary (its fastest levels and the standard
// library's do not) at about 11µs a row.
const runRowLevel = 5

// maxRunRow bounds what one row inflates to: a row is the projector's own
// write, and a damaged one must not take the process's memory.
const maxRunRow = 64 << 20

var (
	deflaters = sync.Pool{New: func() any {
		w, err := flate.NewWriterDict(io.Discard, runRowLevel, runRowDict)
		if err != nil {
			panic(err) // a constant level: only a programming error
		}
		return w
	}}
	inflaters sync.Pool
)

// errRunRow is a row of the runs bucket that cannot be read.
var errRunRow = errors.New("projections: damaged run row")

// encodeRun returns s's row.
func encodeRun(s *runstate.State) ([]byte, error) {
	row := *s
	row.RunID, row.TenantID = "", ""
	data, err := json.Marshal(&row)
	if err != nil || !s.Status.Finished() {
		return data, err
	}
	var buf bytes.Buffer
	buf.Grow(len(data)/2 + 16)
	buf.WriteByte(rowDeflated)
	w := deflaters.Get().(*flate.Writer)
	defer deflaters.Put(w)
	w.ResetDict(&buf, runRowDict)
	if _, err := w.Write(data); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decodeRun reads the row data of the run runID of tenant into s.
func decodeRun(tenant, runID string, data []byte, s *runstate.State) error {
	data, err := runRowJSON(data)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, s); err != nil {
		return err
	}
	s.TenantID, s.RunID = tenant, runID
	return nil
}

// runRowJSON returns the JSON of a row.
func runRowJSON(data []byte) ([]byte, error) {
	if len(data) > 0 && data[0] == rowDeflated {
		return inflateRow(data[1:])
	}
	return data, nil
}

// inflateRow returns the JSON a deflated row holds.
func inflateRow(data []byte) ([]byte, error) {
	src := bytes.NewReader(data)
	r, _ := inflaters.Get().(io.ReadCloser)
	if r == nil {
		r = flate.NewReaderDict(src, runRowDict)
	} else if err := r.(flate.Resetter).Reset(src, runRowDict); err != nil {
		return nil, err
	}
	defer inflaters.Put(r)
	out, err := io.ReadAll(io.LimitReader(r, maxRunRow+1))
	if err != nil || len(out) > maxRunRow {
		return nil, fmt.Errorf("%w: %v", errRunRow, err)
	}
	return out, nil
}

// bucketRunIDs finds a run's row: tenant\x00runId → its start, 8 bytes
// big-endian (see runRowKey).
var bucketRunIDs = []byte("run_ids")

// bucketRunsDone holds the rows of finished runs, bucketRuns those of the
// others, under the same keys (runRowKey). A row grows while its run
// runs and shrinks by half once finished (deflated): rewritten in place,
// the pages of finished rows were left 40 % full (bbolt merges a page
// only below a quarter full). Moved at its run's end, in about the order
// the runs started, a finished row is appended where the finished rows
// end, and its pages stay full; the pages of the running rows empty as
// their runs end, and bbolt frees them.
var bucketRunsDone = []byte("runs_done")

// runRowKey is the key of the row of a run of tenant started by the event
// at stream sequence start.
func runRowKey(tenant string, start uint64) []byte {
	k := make([]byte, 0, len(tenant)+9)
	k = append(k, tenant...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, start)
}

// runTxnKey is the key of a run in runs_by_txn: its transaction's runs in
// the order they started.
func runTxnKey(tenant, txn string, start uint64) []byte {
	return binary.BigEndian.AppendUint64(key(tenant, txn+"\x00"), start)
}

// runRowOf returns the key of the row of run runID of tenant; nil when
// there is none.
func runRowOf(tx *bolt.Tx, tenant, runID string) []byte {
	v := tx.Bucket(bucketRunIDs).Get(key(tenant, runID))
	if len(v) != 8 {
		return nil
	}
	return runRowKey(tenant, binary.BigEndian.Uint64(v))
}

// runRowsOf returns the bucket that holds the row at row (runs_done for a
// finished run's, else runs) and the row; nil when neither does.
func runRowsOf(tx *bolt.Tx, row []byte) (*bolt.Bucket, []byte) {
	for _, name := range [][]byte{bucketRunsDone, bucketRuns} {
		b := tx.Bucket(name)
		if data := b.Get(row); data != nil {
			return b, data
		}
	}
	return nil, nil
}

// runRows is the bucket of the rows of runs whose status is st.
func runRows(tx *bolt.Tx, st runstate.Status) *bolt.Bucket {
	if st.Finished() {
		return appendBucket(tx, bucketRunsDone)
	}
	return tx.Bucket(bucketRuns)
}

// putRun writes s's row at row (see runRowKey), in the bucket of its
// status; was is the status of the row written before (empty for none):
// a row whose run ended, or started again, moves.
func putRun(tx *bolt.Tx, row []byte, s *runstate.State, was runstate.Status) error {
	data, err := encodeRun(s)
	if err != nil {
		return err
	}
	if was != "" && was.Finished() != s.Status.Finished() {
		if err := runRows(tx, was).Delete(row); err != nil {
			return err
		}
	}
	return runRows(tx, s.Status).Put(row, data)
}

// getRun reads the row of run runID of tenant into s; ok is false when
// there is none.
func getRun(tx *bolt.Tx, tenant, runID string, s *runstate.State) (ok bool, err error) {
	row := runRowOf(tx, tenant, runID)
	if row == nil {
		return false, nil
	}
	return getRunAt(tx, row, tenant, runID, s)
}

// getRunAt reads the row at row, run runID's of tenant, into s; ok is
// false when there is none.
func getRunAt(tx *bolt.Tx, row []byte, tenant, runID string, s *runstate.State) (ok bool, err error) {
	_, data := runRowsOf(tx, row)
	if data == nil {
		return false, nil
	}
	return true, decodeRun(tenant, runID, data, s)
}

// getRunPart reads some fields of the row of run runID of tenant into v,
// a struct of them (not the run and tenant ids, which the row does not
// hold); ok is false when there is none.
func getRunPart(tx *bolt.Tx, tenant, runID string, v any) (ok bool, err error) {
	row := runRowOf(tx, tenant, runID)
	if row == nil {
		return false, nil
	}
	_, data := runRowsOf(tx, row)
	if data == nil {
		return false, nil
	}
	if data, err = runRowJSON(data); err != nil {
		return true, err
	}
	return true, json.Unmarshal(data, v)
}
