package httpapi_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/testherald"
)

type suppressionBody struct {
	Kind      string `json:"kind"`
	Address   string `json:"address"`
	Reason    string `json:"reason"`
	CreatedAt string `json:"createdAt"`
}

func supPath(kind, address string) string {
	return "/v1/suppressions/" + url.PathEscape(kind) + "/" + url.PathEscape(address)
}

// TestSuppressionsAPI: PUT answers 201 then 200 with the resource (the
// address normalised, the default reason manual, a new reason replacing
// the old and keeping createdAt); GET lists in (kind, address) order,
// filtered by ?kind= and paged; DELETE answers 204 then 404; another
// tenant sees none of it; the audit shows the adds and removals.
func TestSuppressionsAPI(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	tenant, key := h.Tenant("Acme")
	_, other := h.Tenant("Other")
	do := func(method, path string, body any, status int) testherald.Response {
		t.Helper()
		r := h.Do(method, path, key, body)
		if r.Status != status {
			t.Fatalf("%s %.80s: %d %s, want %d", method, path, r.Status, r.Body, status)
		}
		return r
	}

	r := do("PUT", supPath("email", "Ada@Example.COM"), nil, http.StatusCreated)
	if got := strings.Join(keysOf(t, r), ","); got != "address,createdAt,kind,reason" {
		t.Fatalf("fields %s", got)
	}
	var first suppressionBody
	r.JSON(t, &first)
	if first.Kind != "email" || first.Address != "ada@example.com" || first.Reason != "manual" ||
		!regexp.MustCompile(tsFormat).MatchString(first.CreatedAt) {
		t.Fatalf("created %+v", first)
	}
	var again suppressionBody
	do("PUT", supPath("email", "ada@example.com"), map[string]any{}, http.StatusOK).JSON(t, &again)
	if again != first {
		t.Fatalf("repeat %+v, want %+v", again, first)
	}
	do("PUT", supPath("email", "ada@example.com"), map[string]any{"reason": "asked by phone"}, http.StatusOK).JSON(t, &again)
	if again.Reason != "asked by phone" || again.CreatedAt != first.CreatedAt {
		t.Fatalf("new reason %+v", again)
	}
	do("PUT", supPath("email", "ada@example.com"), map[string]any{"reason": nil}, http.StatusOK).JSON(t, &again)
	if again.Reason != "manual" {
		t.Fatalf("null reason %+v", again)
	}
	var sms suppressionBody
	do("PUT", supPath("sms", "+1 (415) 555-0123"), map[string]any{"reason": "hard_bounce"}, http.StatusCreated).JSON(t, &sms)
	if sms.Address != "+14155550123" || sms.Reason != "hard_bounce" {
		t.Fatalf("sms %+v", sms)
	}
	token := strings.Repeat("t", 4096)
	do("PUT", supPath("push", token), nil, http.StatusCreated)
	do("PUT", supPath("chat", "c0123abcd"), nil, http.StatusCreated)

	// The list, in (kind, address) order, one row a page: the cursor
	// after a 4096-character token works.
	var seen []string
	cursor := ""
	for range 10 {
		path := "/v1/suppressions?limit=1"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		var pg page[suppressionBody]
		do("GET", path, nil, http.StatusOK).JSON(t, &pg)
		for _, s := range pg.Data {
			seen = append(seen, s.Kind+" "+s.Address[:min(len(s.Address), 20)])
		}
		if pg.NextCursor == nil {
			break
		}
		cursor = *pg.NextCursor
	}
	want := "chat C0123ABCD,email ada@example.com,push tttttttttttttttttttt,sms +14155550123"
	if got := strings.Join(seen, ","); got != want {
		t.Fatalf("list %s, want %s", got, want)
	}
	var pg page[suppressionBody]
	do("GET", "/v1/suppressions?kind=sms", nil, http.StatusOK).JSON(t, &pg)
	if len(pg.Data) != 1 || pg.Data[0] != sms || pg.NextCursor != nil {
		t.Fatalf("?kind=sms: %+v", pg)
	}

	// Tenants are apart.
	if r := h.Do("GET", "/v1/suppressions", other, nil); r.Status != 200 || strings.TrimSpace(string(r.Body)) != `{"data":[],"nextCursor":null}` {
		t.Fatalf("the other tenant's list: %d %s", r.Status, r.Body)
	}
	if r := h.Do("DELETE", supPath("email", "ada@example.com"), other, nil); r.Status != 404 || r.ErrorCode() != "suppression_not_found" {
		t.Fatalf("the other tenant's delete: %d %s", r.Status, r.Body)
	}

	do("DELETE", supPath("email", "ADA@example.com"), nil, http.StatusNoContent)
	if r := do("DELETE", supPath("email", "ada@example.com"), nil, http.StatusNotFound); r.ErrorCode() != "suppression_not_found" {
		t.Fatalf("second delete: %s", r.Body)
	}
	do("GET", "/v1/suppressions?kind=email", nil, http.StatusOK).JSON(t, &pg)
	if len(pg.Data) != 0 {
		t.Fatalf("after delete: %+v", pg)
	}
	if r := h.Do("GET", "/v1/suppressions", "", nil); r.Status != 401 {
		t.Fatalf("without a key: %d", r.Status)
	}

	// The audit shows who suppressed what.
	audit := h.Do("GET", "/v1/admin/events?tenant="+tenant, h.AdminToken(), nil)
	for _, want := range []string{`"type":"SuppressionAdded"`, `"type":"SuppressionRemoved"`, `"address":"ada@example.com"`, `"reason":"asked by phone"`} {
		if !strings.Contains(string(audit.Body), want) {
			t.Errorf("the audit lacks %s", want)
		}
	}
}

// TestSuppressionsRefuseBadInput: an unknown kind, an address not of its
// kind or over its bound, a reason out of bounds, an unknown field: 422
// naming the field; nothing is recorded.
func TestSuppressionsRefuseBadInput(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("Acme")
	for _, tc := range []struct {
		method, path string
		body         any
		field        string
	}{
		{"PUT", supPath("fax", "+14155550123"), nil, "kind"},
		{"PUT", supPath("in_app", "ada"), nil, "kind"},
		{"PUT", supPath("webhook", "https://example.com"), nil, "kind"},
		{"PUT", supPath(strings.Repeat("k", 10<<10), "a@example.com"), nil, "kind"},
		{"PUT", supPath("email", "not an address"), nil, "address"},
		{"PUT", supPath("email", "Ada <ada@example.com>"), nil, "address"},
		{"PUT", supPath("email", strings.Repeat("a", 310)+"@example.com"), nil, "address"},
		{"PUT", supPath("sms", "555-0123"), nil, "address"},
		{"PUT", supPath("chat", "#general"), nil, "address"},
		{"PUT", supPath("push", strings.Repeat("t", 4097)), nil, "address"},
		{"PUT", supPath("push", "tok\x01en"), nil, "address"},
		{"PUT", supPath("email", "a@example.com"), map[string]any{"reason": ""}, "reason"},
		{"PUT", supPath("email", "a@example.com"), map[string]any{"reason": strings.Repeat("r", 129)}, "reason"},
		{"PUT", supPath("email", "a@example.com"), map[string]any{"reason": "two\nlines"}, "reason"},
		{"PUT", supPath("email", "a@example.com"), map[string]any{"reason": 5}, "reason"},
		{"PUT", supPath("email", "a@example.com"), map[string]any{"reasons": "x"}, "reasons"},
		{"DELETE", supPath("fax", "x"), nil, "kind"},
		{"DELETE", supPath("email", "nope"), nil, "address"},
		{"GET", "/v1/suppressions?kind=fax", nil, "kind"},
		{"GET", "/v1/suppressions?limit=501", nil, "limit"},
	} {
		r := h.Do(tc.method, tc.path, key, tc.body)
		var eb struct {
			Error struct {
				Code    string
				Details []struct{ Field, Problem string }
			}
		}
		r.JSON(t, &eb)
		if r.Status != 422 || eb.Error.Code != "validation_failed" || len(eb.Error.Details) == 0 || eb.Error.Details[0].Field != tc.field {
			t.Errorf("%s %.60s %v: %d %.300s, want 422 on %s", tc.method, tc.path, tc.body, r.Status, r.Body, tc.field)
		}
		if len(r.Body) > 4<<10 {
			t.Errorf("%s %.60s: a %d-byte answer", tc.method, tc.path, len(r.Body))
		}
	}
	if r := h.Do("GET", "/v1/suppressions?cursor="+strings.Repeat("x", 9<<10), key, nil); r.Status != 422 {
		t.Errorf("a 9 KiB cursor: %d %s", r.Status, r.Body)
	}
	if r := h.Do("PUT", supPath("email", "a@example.com"), key, "{"); r.Status != 400 || r.ErrorCode() != "invalid_json" {
		t.Errorf("malformed JSON: %d %s", r.Status, r.Body)
	}
	if r := h.Do("GET", "/v1/suppressions", key, nil); r.Status != 200 || strings.TrimSpace(string(r.Body)) != `{"data":[],"nextCursor":null}` {
		t.Fatalf("something was recorded: %s", r.Body)
	}
}

// TestEraseKeepsSuppressions: erasing a subscriber leaves the suppression
// of its address (a record about the address, naming no subscriber):
// the bounced address stays suppressed for whoever holds it next.
func TestEraseKeepsSuppressionsWithoutTheAddress(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("Acme")
	if r := h.Do("PUT", "/v1/subscribers/ada", key, map[string]any{"contacts": map[string]any{"email": []string{"ada@example.com"}}}); r.Status != 201 {
		t.Fatalf("subscriber: %d %s", r.Status, r.Body)
	}
	if r := h.Do("PUT", supPath("email", "ada@example.com"), key, nil); r.Status != 201 {
		t.Fatalf("suppress: %d %s", r.Status, r.Body)
	}
	if r := h.Do("DELETE", "/v1/subscribers/ada?erase=true", key, nil); r.Status != 204 {
		t.Fatalf("erase: %d %s", r.Status, r.Body)
	}
	var pg page[suppressionBody]
	h.Do("GET", "/v1/suppressions", key, nil).JSON(t, &pg)
	// In force, without the address (cmd/herald's erase test shows it
	// still skips sends and is gone from the files).
	if len(pg.Data) != 1 || pg.Data[0].Address != "" || pg.Data[0].Reason != "manual" {
		t.Fatalf("after the erase: %+v", pg)
	}
}
