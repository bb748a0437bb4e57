package service_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testnet"
)

// TestNonCanonicalDestinationsRefusedForGoodAtSend: destinations stored
// while private egress was allowed, spelled as numbers or with a trailing
// dot (2130706433, 127.1, 0x7f000001, 127.0.0.1.), are refused for good
// once it is off: a send fails at once with provider_rejected (not a
// provider_unavailable to retry), a run fails with egress_refused after one
// attempt, and the loopback service behind them is never reached.
func TestNonCanonicalDestinationsRefusedForGoodAtSend(t *testing.T) {
	reached := testnet.Count(t)
	port := reached.Port()
	dir := t.TempDir()

	dev := testherald.Start(t, testherald.Options{DataDir: dir})
	tenant, key := dev.Tenant("Acme")
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"PUT", "/v1/bridge", map[string]any{"webhookUrl": fmt.Sprintf("https://127.1:%d/herald", port)}},
		{"POST", "/v1/channels", map[string]any{"channelKey": "email-smtp",
			"config": map[string]any{"host": "2130706433", "port": port, "fromEmail": "a@example.com"}}},
		{"POST", "/v1/channels", map[string]any{"channelKey": "webhook",
			"config": map[string]any{"url": fmt.Sprintf("http://0x7f000001:%d/hook", port)}}},
		{"POST", "/v1/channels", map[string]any{"channelKey": "chat-slack",
			"config": map[string]any{"botToken": "xoxb-1", "apiBaseUrl": fmt.Sprintf("http://127.0.0.1.:%d", port)}}},
		{"PUT", "/v1/subscribers/ada", map[string]any{"contacts": map[string]any{"email": []string{"ada@example.com"}, "chat": []string{"C0123ABCD"}}}},
	} {
		if r := dev.Do(c.method, c.path, key, c.body); r.Status/100 != 2 {
			t.Fatalf("development: %s %s: %d %s", c.method, c.path, r.Status, r.Body)
		}
	}
	dev.Stop()

	h := testherald.Start(t, testherald.Options{DataDir: dir, Env: map[string]string{"HERALD_ALLOW_PRIVATE_EGRESS": "false"}})
	for _, c := range []struct{ kind, content string }{
		{"email", `{"subject":"Hi","body":"Hello"}`},
		{"webhook", `{"data":{"a":1}}`},
		{"chat", `{"body":"Hello"}`},
	} {
		body := fmt.Sprintf(`{"idempotencyKey":"run_%[1]s:s","runId":"run_%[1]s","stepId":"s","subscriberId":"ada","channel":%[1]q,"content":%[2]s}`, c.kind, c.content)
		req, _ := http.NewRequest("POST", h.URL()+"/v1/deliver", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-herald-internal-token", h.InternalToken())
		req.Header.Set("x-herald-tenant-id", tenant)
		resp, err := h.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct{ Error struct{ Code string } }
		json.Unmarshal(out, &e)
		if resp.StatusCode != http.StatusUnprocessableEntity || e.Error.Code != "provider_rejected" {
			t.Errorf("%s send: %d %s, want 422 provider_rejected (refused for good)", c.kind, resp.StatusCode, out)
		}
	}

	r := h.Do("POST", "/v1/events", key, map[string]any{"workflowId": "welcome", "to": map[string]any{"subscriberId": "ada"}})
	if r.Status != 202 {
		t.Fatalf("trigger: %d %s", r.Status, r.Body)
	}
	var trig struct{ Runs []struct{ RunID string } }
	r.JSON(t, &trig)
	run := h.WaitRun(key, trig.Runs[0].RunID, "failed")
	if runErr, _ := run["error"].(map[string]any); runErr["code"] != "egress_refused" {
		t.Fatalf("run error = %v, want egress_refused", run["error"])
	}
	if n := reached.Accepted(); n != 0 {
		t.Fatalf("the loopback service was reached %d times", n)
	}
}
