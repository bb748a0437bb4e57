package projections

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

func TestTxnRowRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 29, 6, 32, 53, 192596905, time.UTC)
	n, zero := 100000, 0
	for _, c := range []Transaction{
		{},
		{WorkflowID: "two", Single: true, Recipients: &n, CreatedAt: at, UpdatedAt: at},
		{WorkflowID: "weekly-digest ✓", Completed: true, Cancelled: true, Count: 1 << 40, Recipients: &zero,
			CreatedAt: at, UpdatedAt: at.Add(time.Hour + time.Nanosecond),
			Runs:       TxnRuns{Started: 1000000, Running: 3, Completed: 999990, Failed: 4, Cancelled: 2, Digested: 1},
			Deliveries: TxnDeliveries{Sent: 999000, Skipped: 900, Failed: 100}},
		{Runs: TxnRuns{Running: -1}}, // a counter is signed
		{CreatedAt: time.Unix(0, 0).UTC(), UpdatedAt: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)},
	} {
		row := encodeTxn(&c)
		got := Transaction{TransactionID: "txn_kept"}
		if err := decodeTxn(row, &got); err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		want := c
		want.TransactionID = "txn_kept"
		if !reflect.DeepEqual(got, want) {
			t.Errorf("read back\n%+v\nwant\n%+v", got, want)
		}
		// A JSON row (of a file an older ModelsVersion built, which Open
		// rebuilds) is not read as one.
		old, _ := json.Marshal(c)
		if err := decodeTxn(old, &got); err == nil {
			t.Errorf("a JSON row read as %+v", got)
		}
		// Every cut of the row, and a byte too many, is an error.
		for i := range len(row) {
			if err := decodeTxn(row[:i], &got); err == nil {
				t.Errorf("%+v: the first %d of %d bytes read without error", c, i, len(row))
			}
		}
		if err := decodeTxn(append(row, 0), &got); err == nil {
			t.Errorf("%+v: a byte past the row read without error", c)
		}
	}
}

// Damaged rows are errors, never a panic; a row that reads writes a row
// that reads the same.
func TestTxnRowDamaged(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	good := encodeTxn(&Transaction{WorkflowID: "two", Count: 3, Recipients: new(int)})
	for range 20000 {
		row := append([]byte(nil), good...)
		if rnd.IntN(2) == 0 {
			row = make([]byte, 1+rnd.IntN(40))
			for i := range row {
				row[i] = byte(rnd.Uint32())
			}
			row[0] = txnRowBinary
		} else {
			row[rnd.IntN(len(row))] = byte(rnd.Uint32())
		}
		var tr Transaction
		if decodeTxn(row, &tr) != nil {
			continue
		}
		var again Transaction
		if err := decodeTxn(encodeTxn(&tr), &again); err != nil || !reflect.DeepEqual(again, tr) {
			t.Fatalf("%x read as %+v, written and read again as %+v (%v)", row, tr, again, err)
		}
	}
}
