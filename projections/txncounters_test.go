package projections_test

import (
	"encoding/json"
	"testing"

	"github.com/heraldhq/herald/projections"
)

// TestTxnCountersJSON: a transaction's counters are written as arrays by
// hand; they read back as encoding/json reads an array into its fields
// (missing elements zero, extra ones ignored, null changing nothing), and
// anything else is an error.
func TestTxnCountersJSON(t *testing.T) {
	runs := projections.TxnRuns{Started: 7, Running: 1, Completed: 3, Failed: 2, Cancelled: 1, Digested: 0}
	b, err := json.Marshal(struct {
		R projections.TxnRuns       `json:"r"`
		D projections.TxnDeliveries `json:"d"`
	}{runs, projections.TxnDeliveries{Sent: 12, Skipped: 0, Failed: -1}})
	if err != nil || string(b) != `{"r":[7,1,3,2,1,0],"d":[12,0,-1]}` {
		t.Fatalf("marshal: %s %v", b, err)
	}
	for _, c := range []struct {
		in   string
		want projections.TxnRuns
		bad  bool
	}{
		{in: `[7,1,3,2,1,0]`, want: runs},
		{in: ` [ 7 , 1,3,2,1,0 ] `, want: runs},
		{in: `[7,1]`, want: projections.TxnRuns{Started: 7, Running: 1}},
		{in: `[7,1,3,2,1,0,9]`, want: runs},
		{in: `[]`},
		{in: `null`, want: projections.TxnRuns{Started: 5}},
		{in: `[1.5]`, bad: true},
		{in: `[1,,2]`, bad: true},
		{in: `{"started":1}`, bad: true},
		{in: `"x"`, bad: true},
	} {
		got := projections.TxnRuns{}
		if c.in == `null` {
			got.Started = 5
		}
		err := json.Unmarshal([]byte(c.in), &got)
		if c.bad {
			if err == nil {
				t.Errorf("%s: read as %+v, want an error", c.in, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %+v %v, want %+v", c.in, got, err, c.want)
		}
	}
	var d projections.TxnDeliveries
	if err := json.Unmarshal([]byte(`[12,0,-1]`), &d); err != nil || d != (projections.TxnDeliveries{Sent: 12, Failed: -1}) {
		t.Errorf("deliveries: %+v %v", d, err)
	}
}
