package webhooks_test

import (
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testherald"
)

// TestWebhookAPI: the routes of §14 with their bounds and errors; the
// secret is shown by create and rotate only, and the audit log holds none
// in clear.
func TestWebhookAPI(t *testing.T) {
	h := startService(t, "", nil)
	f := newFixture(t, h, "Acme")
	r := f.call("POST", "/v1/webhooks", map[string]any{"url": "https://example.com/hook", "events": []string{"run.failed", "run.failed", "delivery.sent"},
		"description": "ops"}, 201).Map(t)
	id, secret := r["webhookId"].(string), r["secret"].(string)
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if !strings.HasPrefix(id, "wh_") || !strings.HasPrefix(secret, "whsec_") || err != nil || len(raw) != 32 ||
		r["enabled"] != true || r["url"] != "https://example.com/hook" || len(r["events"].([]any)) != 2 || r["createdAt"] == nil {
		t.Fatalf("created %v", r)
	}
	one := f.call("GET", "/v1/webhooks/"+id, nil, 200)
	list := f.call("GET", "/v1/webhooks", nil, 200)
	for _, b := range []string{string(one.Body), string(list.Body)} {
		if strings.Contains(b, "secret") || strings.Contains(b, "whsec_") || !strings.Contains(b, id) {
			t.Fatalf("a read shows the secret or misses the endpoint: %s", b)
		}
	}

	// Validation: 422 naming the field.
	for _, bad := range []map[string]any{
		{"url": "ftp://example.com/x", "events": []string{"*"}},
		{"url": "/relative", "events": []string{"*"}},
		{"url": "https://user:pw@example.com/", "events": []string{"*"}},
		{"url": "https://example.com/" + strings.Repeat("a", 2100), "events": []string{"*"}},
		{"url": "https://example.com/", "events": []string{"run.exploded"}},
		{"url": "https://example.com/", "events": []string{}},
		{"url": "https://example.com/", "events": []string{"*"}, "description": strings.Repeat("d", 257)},
	} {
		if r := h.Do("POST", "/v1/webhooks", f.key, bad); r.Status != 422 || r.ErrorCode() != "validation_failed" {
			t.Fatalf("POST %v: %d %s", bad, r.Status, r.Body)
		}
	}
	if r := h.Do("PATCH", "/v1/webhooks/"+id, f.key, map[string]any{"events": []string{"nope"}}); r.Status != 422 {
		t.Fatalf("PATCH bad events: %d %s", r.Status, r.Body)
	}
	if r := h.Do("PATCH", "/v1/webhooks/"+id, f.key, map[string]any{}); r.Status != 400 || r.ErrorCode() != "empty_patch" {
		t.Fatalf("PATCH {}: %d %s", r.Status, r.Body)
	}
	// Unknown and oversized ids: 404.
	for _, other := range []string{"wh_nope", strings.Repeat("w", 1000)} {
		for _, c := range []struct{ method, path string }{
			{"GET", ""}, {"PATCH", ""}, {"DELETE", ""}, {"POST", "/rotate-secret"}, {"GET", "/attempts"},
		} {
			var body any
			if c.method == "PATCH" {
				body = map[string]any{"enabled": false}
			}
			if r := h.Do(c.method, "/v1/webhooks/"+other+c.path, f.key, body); r.Status != 404 {
				t.Fatalf("%s %s on %.20s: %d %s", c.method, c.path, other, r.Status, r.Body)
			}
		}
	}
	// Another tenant sees none of it.
	_, otherKey := h.Tenant("Other")
	if r := h.Do("GET", "/v1/webhooks/"+id, otherKey, nil); r.Status != 404 {
		t.Fatalf("another tenant's GET: %d", r.Status)
	}

	p := f.call("PATCH", "/v1/webhooks/"+id, map[string]any{"events": []string{"*"}, "enabled": false, "url": "https://example.org/h"}, 200).Map(t)
	if p["enabled"] != false || p["url"] != "https://example.org/h" || p["events"].([]any)[0] != "*" || p["secret"] != nil {
		t.Fatalf("patched %v", p)
	}
	rot := f.call("POST", "/v1/webhooks/"+id+"/rotate-secret", nil, 200).Map(t)
	newSecret, _ := rot["secret"].(string)
	if !strings.HasPrefix(newSecret, "whsec_") || newSecret == secret {
		t.Fatalf("rotated %v", rot)
	}

	// At most 20 endpoints.
	for range 19 {
		f.webhook("https://example.com/more", "*")
	}
	if r := h.Do("POST", "/v1/webhooks", f.key, map[string]any{"url": "https://example.com/21", "events": []string{"*"}}); r.Status != 409 || r.ErrorCode() != "webhook_limit" {
		t.Fatalf("21st endpoint: %d %s", r.Status, r.Body)
	}
	f.call("DELETE", "/v1/webhooks/"+id, nil, 204)
	f.call("GET", "/v1/webhooks/"+id, nil, 404)
	var l struct {
		Data       []map[string]any
		NextCursor *string
	}
	f.call("GET", "/v1/webhooks?limit=10", nil, 200).JSON(t, &l)
	if len(l.Data) != 10 || l.NextCursor == nil {
		t.Fatalf("page of 10: %d %v", len(l.Data), l.NextCursor)
	}

	// The audit log has the changes, and no secret in clear.
	audit := h.Do("GET", "/v1/admin/events?tenant="+f.tenant, h.AdminToken(), nil)
	if audit.Status != 200 {
		t.Fatalf("audit: %d", audit.Status)
	}
	for _, typ := range []string{events.WebhookCreated, events.WebhookUpdated, events.WebhookSecretRotated, events.WebhookDeleted} {
		if !strings.Contains(string(audit.Body), `"type":"`+typ+`"`) {
			t.Fatalf("audit lacks %s", typ)
		}
	}
	for _, s := range []string{secret, newSecret, strings.TrimPrefix(secret, "whsec_"), strings.TrimPrefix(newSecret, "whsec_")} {
		if strings.Contains(string(audit.Body), s) {
			t.Fatal("the audit log shows a webhook secret in clear")
		}
	}
}

// TestPrivateDestinationRefused: with private egress off, an endpoint on
// a loopback or private address is refused at configuration.
func TestPrivateDestinationRefused(t *testing.T) {
	h := startService(t, "", map[string]string{"HERALD_ALLOW_PRIVATE_EGRESS": "false"})
	f := newFixture(t, h, "Acme")
	for _, u := range []string{"https://127.0.0.1/hook", "https://10.0.0.1/hook", "http://example.com/hook"} {
		if r := h.Do("POST", "/v1/webhooks", f.key, map[string]any{"url": u, "events": []string{"*"}}); r.Status != 422 {
			t.Fatalf("%s: %d %s", u, r.Status, r.Body)
		}
	}
}

// TestRotationSignsWithBoth: an endpoint is sent the events after its
// creation; after a rotation a message carries two signatures, one
// verifying with the new secret and one with the old; a disabled endpoint
// is sent nothing.
func TestRotationSignsWithBoth(t *testing.T) {
	h := startService(t, "", nil)
	f := newFixture(t, h, "Acme")
	recv := newReceiver(t, nil)
	f.inApp("run_0") // before the endpoint: not sent to it
	id, old := f.webhook(recv.URL, events.HookDeliverySent)
	f.inApp("run_1")
	recv.waitFor(t, "the first message", func(got []received) bool { return len(got) == 1 })
	if got := recv.requests()[0]; len(strings.Fields(got.Signature)) != 1 || !verifySignature(old, got.ID, got.Timestamp, got.Body, got.Signature) ||
		got.Data["runId"] != "run_1" {
		t.Fatalf("before the rotation: %q %v", got.Signature, got.Data)
	}
	var rot struct{ Secret string }
	f.call("POST", "/v1/webhooks/"+id+"/rotate-secret", map[string]any{}, 200).JSON(t, &rot)
	f.inApp("run_2")
	got := recv.waitFor(t, "the second message", func(got []received) bool { return len(got) == 2 })[1]
	sigs := strings.Fields(got.Signature)
	if len(sigs) != 2 || !verifySignature(rot.Secret, got.ID, got.Timestamp, got.Body, sigs[0]) ||
		!verifySignature(old, got.ID, got.Timestamp, got.Body, sigs[1]) {
		t.Fatalf("after the rotation: %q", got.Signature)
	}

	f.call("PATCH", "/v1/webhooks/"+id, map[string]any{"enabled": false}, 200)
	f.inApp("run_3")
	time.Sleep(time.Second)
	f.call("PATCH", "/v1/webhooks/"+id, map[string]any{"enabled": true}, 200)
	f.inApp("run_4")
	recv.waitFor(t, "the fourth message", func(got []received) bool { return len(got) >= 3 })
	time.Sleep(300 * time.Millisecond)
	if all := recv.requests(); len(all) != 3 || all[2].Data["runId"] != "run_4" {
		t.Fatalf("requests after disable and enable: %d (last %v)", len(all), all[len(all)-1].Data)
	}
	if r := h.Do("GET", "/metrics", "", nil); !strings.Contains(string(r.Body), `herald_webhook_attempts_total{outcome="succeeded"} 3`) {
		t.Fatalf("metrics lack the attempts: %d", r.Status)
	}
}

// Concurrent creations cannot pass the bound of endpoints together.
func TestConcurrentCreatesKeepTheEndpointBound(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("Racer")
	const tries = 2 * control.MaxWebhooks
	statuses := make(chan int, tries)
	var wg sync.WaitGroup
	for i := range tries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses <- h.Do("POST", "/v1/webhooks", key, map[string]any{
				"url": fmt.Sprintf("https://example.com/%d", i), "events": []string{"*"}}).Status
		}()
	}
	wg.Wait()
	close(statuses)
	count := map[int]int{}
	for s := range statuses {
		count[s]++
	}
	if count[201] != control.MaxWebhooks || count[409] != tries-control.MaxWebhooks {
		t.Fatalf("answers %v, want %d created and the rest 409", count, control.MaxWebhooks)
	}
}
