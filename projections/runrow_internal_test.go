package projections

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/heraldhq/herald/runstate"
)

func TestRunRowRoundTrip(t *testing.T) {
	sub := "s0001488"
	at := time.Date(2026, 11, 29, 6, 32, 53, 257492814, time.UTC)
	base := runstate.State{RunID: "run_ffce13e47c1c632ec82d7492", TenantID: "ten_w9ZMRUyCK4OxRNza",
		TransactionID: "txn_Xg9XLxw8KjO4vZzdMaRaJC", WorkflowID: "two", SubscriberID: &sub,
		Steps: []runstate.Step{
			{StepID: "load", Type: "run", Status: "completed", Attempts: 1,
				Output: json.RawMessage(`{"ID":"acct_0123456789","Name":"Ada Lovelace","Plan":"pro","Tags":["beta"]}`)},
			{StepID: "email", Type: "send", Status: "completed", Attempts: 1,
				Output: json.RawMessage(`{"attemptId":"att_Xg9XLxw8KjO4vZzdMaURLi","status":"sent","providerMessageId":"iinp54okq4e4fuvcbch3u3wvee.herald@herald.test"}`)},
		},
		CreatedAt: at, UpdatedAt: at.Add(800 * time.Millisecond), LastSeq: 11996}
	for _, c := range []struct {
		status   runstate.Status
		deflated bool
	}{
		{runstate.Running, false}, {runstate.Sleeping, false}, {runstate.Waiting, false},
		{runstate.Completed, true}, {runstate.Failed, true}, {runstate.Cancelled, true}, {runstate.Digested, true},
	} {
		s := base
		s.Status = c.status
		row, err := encodeRun(&s)
		if err != nil {
			t.Fatal(err)
		}
		if got := row[0] == rowDeflated; got != c.deflated {
			t.Errorf("%s: deflated %v, want %v", c.status, got, c.deflated)
		}
		if bytes.Contains(row, []byte(base.RunID)) || bytes.Contains(row, []byte(base.TenantID)) {
			t.Errorf("%s: the row repeats its key: %q", c.status, row)
		}
		var back runstate.State
		if err := decodeRun(base.TenantID, base.RunID, row, &back); err != nil {
			t.Fatalf("%s: %v", c.status, err)
		}
		if !reflect.DeepEqual(back, s) {
			t.Errorf("%s: read back\n%+v\nwant\n%+v", c.status, back, s)
		}
		plain, _ := json.Marshal(&s)
		if c.deflated && len(row)*2 > len(plain) {
			t.Errorf("%s: a finished row of %d bytes of JSON takes %d", c.status, len(plain), len(row))
		}
		var part struct {
			WorkflowID    string `json:"workflowId"`
			TransactionID string `json:"transactionId"`
		}
		if err := json.Unmarshal(mustRowJSON(t, row), &part); err != nil || part.WorkflowID != "two" || part.TransactionID != base.TransactionID {
			t.Errorf("%s: part read %+v, %v", c.status, part, err)
		}
	}
	// A row written before (the whole state as JSON, ids included) reads
	// the same.
	s := base
	s.Status = runstate.Completed
	old, _ := json.Marshal(&s)
	var back runstate.State
	if err := decodeRun(base.TenantID, base.RunID, old, &back); err != nil || !reflect.DeepEqual(back, s) {
		t.Fatalf("an older row: %+v, %v", back, err)
	}
	// A damaged deflated row is an error, not a panic.
	row, _ := encodeRun(&s)
	for _, bad := range [][]byte{{rowDeflated}, append([]byte{rowDeflated}, 0xff, 0xff, 0xff), row[:len(row)/2]} {
		if err := decodeRun(base.TenantID, base.RunID, bad, &back); err == nil {
			t.Errorf("a damaged row %x read without error", bad)
		}
	}
}

func mustRowJSON(t *testing.T, row []byte) []byte {
	t.Helper()
	data, err := runRowJSON(row)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
