package engine_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testherald"
)

// rawBridge answers each execute call with the body set for its workflow
// (200 {"status":"completed"} when none is) and counts the calls.
type rawBridge struct {
	mu      sync.Mutex
	answers map[string]rawAnswer
	calls   map[string]int
}

type rawAnswer struct {
	status int
	body   string
}

func (b *rawBridge) set(workflow string, status int, body string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.answers[workflow] = rawAnswer{status, body}
}

func (b *rawBridge) count(workflow string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls[workflow]
}

// startRaw starts a service whose tenant's Bridge is a rawBridge.
func startRaw(t *testing.T, opts testherald.Options) (*testherald.Herald, string, *rawBridge) {
	t.Helper()
	if opts.DeliverURL == "" {
		opts.DeliverURL = testherald.NewStandInDelivery(t).URL
	}
	h := testherald.Start(t, opts)
	_, key := h.Tenant("Acme")
	b := &rawBridge{answers: map[string]rawAnswer{}, calls: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ WorkflowID string }
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &req)
		b.mu.Lock()
		b.calls[req.WorkflowID]++
		a, ok := b.answers[req.WorkflowID]
		b.mu.Unlock()
		if !ok {
			a = rawAnswer{200, `{"status":"completed"}`}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.status)
		_, _ = io.WriteString(w, a.body)
	}))
	t.Cleanup(srv.Close)
	if r := h.Do("PUT", "/v1/bridge", key, map[string]string{"webhookUrl": srv.URL}); r.Status != http.StatusOK {
		t.Fatalf("PUT /v1/bridge: %d %s", r.Status, r.Body)
	}
	return h, key, b
}

func triggerOne(t *testing.T, h *testherald.Herald, key, workflow string) string {
	t.Helper()
	f := &fixture{h: h, key: key}
	return one(t, f.trigger(t, map[string]any{"workflowId": workflow, "to": map[string]any{"subscriberId": "u1"}}))
}

// Every string field of a Bridge answer, 10 KB long (and a run output,
// a send content and a whole answer over their bounds), fails its run
// terminally with invalid_step after one Bridge call; the service stays
// ready and keeps running other work. On main a 4,000-character digest
// key closed the NATS connection for good.
func TestBridgeAnswerOverABoundFailsTheRunAndServiceStaysReady(t *testing.T) {
	t.Parallel()
	h, key, b := startRaw(t, testherald.Options{})
	long := strings.Repeat("k", 10_000)
	str := func(n int) string { return `"` + strings.Repeat("a", n) + `"` }
	cases := map[string]rawAnswer{
		"stepid":   {200, `{"status":"step","step":{"stepId":"` + long + `","type":"run","output":1}}`},
		"event":    {200, `{"status":"step","step":{"stepId":"w","type":"waitForEvent","event":"` + long + `"}}`},
		"channel":  {200, `{"status":"step","step":{"stepId":"s","type":"send","channel":"` + long + `","content":{"body":"b"}}}`},
		"to":       {200, `{"status":"step","step":{"stepId":"s","type":"send","channel":"email","to":"` + long + `","content":{"body":"b"}}}`},
		"digest":   {200, `{"status":"step","step":{"stepId":"g","type":"digest","window":"10m","key":"` + long + `"}}`},
		"throttle": {200, `{"status":"step","step":{"stepId":"t","type":"throttle","limit":1,"window":60,"key":"` + long + `"}}`},
		"failed":   {500, `{"error":{"message":"boom","stepId":"` + long + `"}}`},
		"output":   {200, `{"status":"step","step":{"stepId":"r","type":"run","output":` + str(bridge1MiB+1) + `}}`},
		"content":  {200, `{"status":"step","step":{"stepId":"s","type":"send","channel":"email","content":{"body":` + str(256<<10) + `}}}`},
		"huge":     {200, `{"status":"step","step":{"stepId":"r","type":"run","output":` + str(5<<20) + `}}`},
		"type":     {200, `{"status":"step","step":{"stepId":"x","type":"` + long + `"}}`},
		"status":   {200, `{"status":"` + long + `"}`},
		"window":   {200, `{"status":"step","step":{"stepId":"g","type":"digest","window":"` + long + `"}}`},
		"timeout":  {200, `{"status":"step","step":{"stepId":"w","type":"waitForEvent","event":"e","timeout":"` + long + `"}}`},
		"until":    {200, `{"status":"step","step":{"stepId":"d","type":"delay","until":"` + long + `"}}`},
	}
	// Error bodies: a 422's code is checked against its pattern (the run
	// fails bridge_rejected), a message is clipped to 1 KiB.
	other := map[string]rawAnswer{
		"code":    {422, `{"error":{"code":"` + long + `","message":"` + long + `"}}`},
		"message": {401, `{"error":{"code":"unauthorized","message":"` + long + `"}}`},
	}
	otherCodes := map[string]string{"code": "bridge_rejected", "message": "bridge_unauthorized"}
	for wf, a := range other {
		b.set(wf, a.status, a.body)
		cases[wf] = a
	}
	runs := map[string]string{}
	for wf, a := range cases {
		b.set(wf, a.status, a.body)
		runs[wf] = triggerOne(t, h, key, wf)
	}
	for wf, runID := range runs {
		run := h.WaitRun(key, runID, "failed", "completed")
		runErr, _ := run["error"].(map[string]any)
		want := "invalid_step"
		if c, ok := otherCodes[wf]; ok {
			want = c
		}
		if run["status"] != "failed" || runErr["code"] != want {
			t.Errorf("%s: run %.300v", wf, run)
		}
		// A bridge_rejected run error names the Bridge's status.
		if msg, _ := runErr["message"].(string); want == "bridge_rejected" && msg != "bridge answered 422: unprocessable entity" {
			t.Errorf("%s: run error message %q does not name the status", wf, msg)
		}
		if msg, _ := runErr["message"].(string); len(msg) > 1100 || (want == "invalid_step" && strings.Contains(msg, "kkkkkkkk")) {
			t.Errorf("%s: error message of %d bytes: %.200q", wf, len(msg), msg)
		}
	}
	// One call each: the work was acked, not redelivered.
	time.Sleep(1500 * time.Millisecond)
	for wf := range runs {
		if n := b.count(wf); n != 1 {
			t.Errorf("%s: %d Bridge calls, want 1", wf, n)
		}
	}
	if r := h.Do("GET", "/readyz", "", nil); r.Status != http.StatusOK || !h.Ready() {
		t.Fatalf("readyz %d after the oversized answers", r.Status)
	}
	run := h.WaitRun(key, triggerOne(t, h, key, "fine"), "completed", "failed")
	if run["status"] != "completed" {
		t.Fatalf("a well-behaved run after them: %v", run)
	}
}

const bridge1MiB = 1 << 20
