package projections

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/heraldhq/herald/runstate"
	"github.com/klauspost/compress/flate"
	bolt "go.etcd.io/bbolt"
)

// A row of the runs bucket is a run's state as JSON without its run and
// tenant ids, which its key holds (tenant\x00runId). A finished run's row,
// which is written once more at most and then kept until retention
// removes it, is deflated against runRowDict: the first byte then says so
// (rowDeflated; a JSON row starts with '{'). At a finished run's typical
// 600-700 bytes of JSON, that keeps about a third (BENCHMARKS.md).
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

// decodeRun reads the row at k (tenant\x00runId) into s.
func decodeRun(k, data []byte, s *runstate.State) error {
	data, err := runRowJSON(data)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, s); err != nil {
		return err
	}
	tenant, runID, ok := bytes.Cut(k, []byte{0})
	if !ok {
		return fmt.Errorf("%w: key %q", errRunRow, k)
	}
	s.TenantID, s.RunID = string(tenant), string(runID)
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

// putRun writes s's row at k.
func putRun(b *bolt.Bucket, k []byte, s *runstate.State) error {
	data, err := encodeRun(s)
	if err != nil {
		return err
	}
	return b.Put(k, data)
}

// getRun reads the row at k into s; ok is false when there is none.
func getRun(b *bolt.Bucket, k []byte, s *runstate.State) (ok bool, err error) {
	data := b.Get(k)
	if data == nil {
		return false, nil
	}
	return true, decodeRun(k, data, s)
}

// getRunPart reads some fields of the row at k into v, a struct of them
// (not the run and tenant ids, which the row does not hold); ok is false
// when there is none.
func getRunPart(b *bolt.Bucket, k []byte, v any) (ok bool, err error) {
	data := b.Get(k)
	if data == nil {
		return false, nil
	}
	if data, err = runRowJSON(data); err != nil {
		return true, err
	}
	return true, json.Unmarshal(data, v)
}
