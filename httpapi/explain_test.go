package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/internal/testherald"
)

// TestExplainSaysWhyASendWouldNotGoOut: for each kind, the explain route
// says whether a send of a workflow to a subscriber goes out now, and
// why not, as the send path decides: no channel of the kind, no address,
// the subscriber's preference for that workflow only, a suppression of
// its address; an unknown subscriber is 404, so is a workflow not of the
// last sync (workflow_not_found), and a bad workflow id 422.
func TestExplainSaysWhyASendWouldNotGoOut(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("Acme")
	h.MailChannel(key, 2525) // never dialled: nothing is sent
	noop := func(*bridge.Context, any) error { return nil }
	h.Bridge(key, bridge.NewRegistry().MustRegister(bridge.MustWorkflow("welcome", noop), bridge.MustWorkflow("other", noop)))
	if r := h.Do("POST", "/v1/sync", key, nil); r.Status != http.StatusOK {
		t.Fatalf("sync: %d %s", r.Status, r.Body)
	}
	if r := h.Do("PUT", "/v1/subscribers/ada", key, map[string]any{"contacts": map[string]any{"email": []string{"ada@example.com"}}}); r.Status != http.StatusCreated {
		t.Fatalf("subscriber: %d %s", r.Status, r.Body)
	}
	if r := h.Do("PUT", "/v1/subscribers/bob", key, map[string]any{}); r.Status != http.StatusCreated {
		t.Fatalf("subscriber: %d %s", r.Status, r.Body)
	}
	explain := func(sub, wf string) map[string]map[string]any {
		t.Helper()
		r := h.Do("GET", "/v1/subscribers/"+sub+"/explain?workflowId="+wf, key, nil)
		var v struct{ Kinds []map[string]any }
		r.JSON(t, &v)
		if r.Status != http.StatusOK {
			t.Fatalf("explain: %d %s", r.Status, r.Body)
		}
		out := map[string]map[string]any{}
		for _, k := range v.Kinds {
			out[k["kind"].(string)] = k
		}
		return out
	}
	expect := func(got map[string]map[string]any, kind string, sends bool, reason string) {
		t.Helper()
		k := got[kind]
		r, _ := k["reason"].(string)
		if k["sends"] != sends || r != reason {
			t.Fatalf("%s: %v, want sends %v reason %q", kind, k, sends, reason)
		}
	}
	got := explain("ada", "welcome")
	expect(got, "email", true, "")
	if chs, _ := got["email"]["channels"].([]any); len(chs) != 1 || chs[0] != "email-smtp" {
		t.Fatalf("email channels: %v", got["email"])
	}
	expect(got, "sms", false, "no_channel")
	expect(explain("bob", "welcome"), "email", false, "no_address")

	if r := h.Do("PATCH", "/v1/subscribers/ada/preferences", key, map[string]any{
		"workflows": map[string]any{"welcome": map[string]any{"channels": map[string]any{"email": false}}}}); r.Status != http.StatusOK {
		t.Fatalf("preferences: %d %s", r.Status, r.Body)
	}
	expect(explain("ada", "welcome"), "email", false, "preference")
	expect(explain("ada", "other"), "email", true, "")

	// Quiet hours around now (UTC: ada has no time zone) hold the send.
	now := time.Now().UTC()
	if r := h.Do("PATCH", "/v1/subscribers/ada/preferences", key, map[string]any{"quietHours": map[string]any{
		"start": now.Add(-time.Hour).Format("15:04"), "end": now.Add(time.Hour).Format("15:04")}}); r.Status != http.StatusOK {
		t.Fatalf("quiet hours: %d %s", r.Status, r.Body)
	}
	held := explain("ada", "other")
	expect(held, "email", true, "")
	if until, _ := held["email"]["heldUntil"].(string); until == "" {
		t.Fatalf("a send inside quiet hours is not said to be held: %v", held["email"])
	}
	if r := h.Do("PATCH", "/v1/subscribers/ada/preferences", key, map[string]any{"quietHours": nil}); r.Status != http.StatusOK {
		t.Fatalf("quiet hours: %d %s", r.Status, r.Body)
	}
	if _, ok := explain("ada", "other")["email"]["heldUntil"]; ok {
		t.Fatal("a send outside quiet hours is said to be held")
	}

	if r := h.Do("PUT", "/v1/suppressions/email/ada@example.com", key, map[string]any{}); r.Status/100 != 2 {
		t.Fatalf("suppression: %d %s", r.Status, r.Body)
	}
	expect(explain("ada", "other"), "email", false, "suppressed")

	if r := h.Do("GET", "/v1/subscribers/nobody/explain", key, nil); r.Status != http.StatusNotFound {
		t.Fatalf("unknown subscriber: %d %s", r.Status, r.Body)
	}
	expectCode(t, h.Do("GET", "/v1/subscribers/ada/explain?workflowId=never_synced", key, nil), http.StatusNotFound, "workflow_not_found")
	expectCode(t, h.Do("GET", "/v1/subscribers/ada/explain?workflowId=no%20way", key, nil), http.StatusUnprocessableEntity, "validation_failed")
}
