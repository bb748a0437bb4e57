package service_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/heraldhq/herald/internal/testherald"
)

// TestEgressPolicyEndToEnd: with HERALD_ALLOW_PRIVATE_EGRESS=false a tenant
// can neither register nor reach an internal address. A Bridge URL stored
// while private egress was allowed (or a name that resolves to loopback
// by the time of the call) is refused at the call: the sync answers 502
// without the internal answer, a run fails at once with egress_refused,
// and the internal service is never called.
func TestEgressPolicyEndToEnd(t *testing.T) {
	var calls atomic.Int32
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(500)
		w.Write([]byte(`{"error":{"message":"db_password=hunter2"}}`))
	}))
	defer internal.Close()
	port := internal.URL[strings.LastIndex(internal.URL, ":")+1:]
	dir := t.TempDir()

	dev := testherald.Start(t, testherald.Options{DataDir: dir})
	_, key := dev.Tenant("Acme")
	if r := dev.Do("PUT", "/v1/bridge", key, map[string]any{"webhookUrl": internal.URL}); r.Status != 200 {
		t.Fatalf("development: PUT /v1/bridge %d %s", r.Status, r.Body)
	}
	dev.Stop()

	h := testherald.Start(t, testherald.Options{DataDir: dir, Env: map[string]string{"HERALD_ALLOW_PRIVATE_EGRESS": "false"}})
	for _, u := range []string{"http://bridge.example.com/", "https://localhost:" + port + "/", "https://127.0.0.1:" + port + "/",
		"https://169.254.169.254/latest/meta-data/", "https://[::1]:" + port + "/"} {
		r := h.Do("PUT", "/v1/bridge", key, map[string]any{"webhookUrl": u})
		if r.Status != 422 || r.ErrorCode() != "validation_failed" || !strings.Contains(string(r.Body), `"field":"webhookUrl"`) {
			t.Errorf("PUT /v1/bridge %s: %d %s", u, r.Status, r.Body)
		}
	}
	for _, host := range []string{"127.0.0.1", "localhost", "169.254.169.254", "10.0.0.1"} {
		r := h.Do("POST", "/v1/channels", key, map[string]any{"channelKey": "email-smtp",
			"config": map[string]any{"host": host, "port": 25, "fromEmail": "a@example.com"}})
		if r.Status != 422 || !strings.Contains(string(r.Body), `"field":"config.host"`) {
			t.Errorf("POST /v1/channels host %s: %d %s", host, r.Status, r.Body)
		}
	}

	r := h.Do("POST", "/v1/sync", key, nil)
	if r.Status != 502 || strings.Contains(string(r.Body), "hunter2") || strings.Contains(string(r.Body), "127.0.0.1") {
		t.Errorf("sync: %d %s", r.Status, r.Body)
	}

	r = h.Do("POST", "/v1/events", key, map[string]any{"workflowId": "welcome", "to": map[string]any{"subscriberId": "u1"}})
	if r.Status != 202 {
		t.Fatalf("trigger: %d %s", r.Status, r.Body)
	}
	var trig struct{ Runs []struct{ RunID string } }
	r.JSON(t, &trig)
	run := h.WaitRun(key, trig.Runs[0].RunID, "failed")
	runErr, _ := run["error"].(map[string]any)
	if runErr["code"] != "egress_refused" {
		t.Fatalf("run error = %v, want egress_refused", run["error"])
	}
	if steps, _ := run["steps"].([]any); len(steps) > 0 {
		if a, _ := steps[0].(map[string]any)["attempts"].(float64); a != 1 {
			t.Errorf("attempts %v, want 1 (terminal, not retried)", a)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("the internal service was called %d times", n)
	}
}
