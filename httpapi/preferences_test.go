package httpapi_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/testherald"
)

func prefs(id string) string { return sub(id) + "/preferences" }

// TestPreferencesAPI: GET shows only what was set; PATCH merges down to
// the leaves (null removes at any level); unknown kinds and non-booleans
// are 422 naming each field; an unknown subscriber is 404; PUT with
// preferences is 422; the audit shows the key prefix that acted.
func TestPreferencesAPI(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("acme")
	expect(t, h.Do("GET", prefs("nobody"), key, nil), 404, "subscriber_not_found")
	expect(t, h.Do("PATCH", prefs("nobody"), key, `{"channels":{"email":false}}`), 404, "subscriber_not_found")

	if r := h.Do("PUT", sub("ann"), key, map[string]any{"contacts": map[string]any{"email": []string{"ann@example.com"}}}); r.Status != 201 {
		t.Fatalf("put: %d %s", r.Status, r.Body)
	}
	get := func() string {
		t.Helper()
		r := h.Do("GET", prefs("ann"), key, nil)
		if r.Status != 200 {
			t.Fatalf("get: %d %s", r.Status, r.Body)
		}
		return strings.TrimSpace(string(r.Body))
	}
	if got := get(); got != `{"channels":{},"workflows":{}}` {
		t.Fatalf("fresh: %s", got)
	}
	patch := func(body, want string) {
		t.Helper()
		r := h.Do("PATCH", prefs("ann"), key, body)
		if r.Status != 200 || strings.TrimSpace(string(r.Body)) != want {
			t.Fatalf("PATCH %s: %d %s\nwant 200 %s", body, r.Status, r.Body, want)
		}
		if got := get(); got != want {
			t.Fatalf("GET after PATCH %s: %s\nwant %s", body, got, want)
		}
	}
	patch(`{"channels":{"email":true,"sms":false},"workflows":{"digest":{"enabled":true,"channels":{"email":false}}}}`,
		`{"channels":{"email":true,"sms":false},"workflows":{"digest":{"enabled":true,"channels":{"email":false}}}}`)
	patch(`{"channels":{"email":null},"workflows":{"digest":{"channels":{"email":null}}}}`,
		`{"channels":{"sms":false},"workflows":{"digest":{"enabled":true}}}`)
	patch(`{"workflows":{"digest":null}}`, `{"channels":{"sms":false},"workflows":{}}`)

	r := h.Do("PATCH", prefs("ann"), key, `{"channels":{"fax":true,"email":"no"},"workflows":{"w":{"enabled":1}},"colour":1}`)
	expect(t, r, 422, "validation_failed")
	if got, want := problems(t, r), []string{"channels.email", "channels.fax", "colour", "workflows.w.enabled"}; !slices.Equal(slices.Sorted(slices.Values(got)), want) {
		t.Fatalf("problems %v, want %v", got, want)
	}
	expect(t, h.Do("PATCH", prefs("ann"), key, `{"channels":`), 400, "invalid_json")
	expect(t, h.Do("PUT", sub("ann"), key, `{"preferences":{"channels":{"email":false}}}`), 422, "validation_failed")
	if got := get(); got != `{"channels":{"sms":false},"workflows":{}}` {
		t.Fatalf("after refused writes: %s", got)
	}

	// The audit names the key's prefix, never the key.
	a := h.Do("GET", "/v1/admin/events?type=SubscriberPreferencesUpdated", h.AdminToken(), nil)
	if a.Status != 200 {
		t.Fatalf("audit: %d %s", a.Status, a.Body)
	}
	lines := strings.Split(strings.TrimSpace(string(a.Body)), "\n")
	if len(lines) != 3 {
		t.Fatalf("audit lines %d: %s", len(lines), a.Body)
	}
	var ev struct {
		Data struct {
			SubscriberID string          `json:"subscriberId"`
			Actor        string          `json:"actor"`
			Preferences  json.RawMessage `json:"preferences"`
		}
	}
	if err := json.Unmarshal([]byte(lines[2]), &ev); err != nil {
		t.Fatal(err)
	}
	prefix := key[:len("hk_")+8]
	if ev.Data.Actor != prefix || ev.Data.SubscriberID != "ann" || strings.Contains(string(a.Body), key) {
		t.Fatalf("audit line %s: want actor %s and no key", lines[2], prefix)
	}
}

// TestPreferencesGoWithTheSubscriber: a deleted subscriber's preferences
// do not come back with a new subscriber of the same id; an erase
// removes from the log every event of the subject that held them.
func TestPreferencesGoWithTheSubscriber(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("acme")
	for _, erase := range []bool{false, true} {
		if r := h.Do("PUT", sub("bob"), key, `{}`); r.Status != 201 {
			t.Fatalf("put: %d %s", r.Status, r.Body)
		}
		if r := h.Do("PATCH", prefs("bob"), key, `{"channels":{"email":false}}`); r.Status != 200 {
			t.Fatalf("patch: %d %s", r.Status, r.Body)
		}
		path := sub("bob")
		if erase {
			path += "?erase=true"
		}
		if r := h.Do("DELETE", path, key, nil); r.Status != http.StatusNoContent {
			t.Fatalf("delete: %d %s", r.Status, r.Body)
		}
		expect(t, h.Do("GET", prefs("bob"), key, nil), 404, "subscriber_not_found")
	}
	if r := h.Do("PUT", sub("bob"), key, `{}`); r.Status != 201 {
		t.Fatalf("put: %d %s", r.Status, r.Body)
	}
	if r := h.Do("GET", prefs("bob"), key, nil); r.Status != 200 || strings.TrimSpace(string(r.Body)) != `{"channels":{},"workflows":{}}` {
		t.Fatalf("a new bob: %d %s", r.Status, r.Body)
	}
	a := h.Do("GET", "/v1/admin/events?type=SubscriberPreferencesUpdated", h.AdminToken(), nil)
	if n := strings.Count(string(a.Body), `"SubscriberPreferencesUpdated"`); n != 0 {
		t.Fatalf("%d preference events left after the erase of bob's subject: %s", n, a.Body)
	}
}
