package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gorilla/mux"
	"github.com/heraldhq/herald/httpapi"
	"github.com/heraldhq/herald/internal/testherald"
)

// huge is the 10 KB id every id slot of a request is fed.
var huge = strings.Repeat("a", 10<<10)

// edgeCase is one request carrying a huge id in one slot.
type edgeCase struct {
	route   string // the route template it exercises
	method  string
	path    string
	auth    string // "tenant", "admin", "internal" or "raw:<Authorization value>"
	header  map[string]string
	body    any
	allowed []int // acceptable statuses (all 4xx)
}

func (h edgeHarness) do(t *testing.T, c edgeCase) (int, []byte) {
	t.Helper()
	token := ""
	switch c.auth {
	case "tenant":
		token = h.key
	case "admin":
		token = h.AdminToken()
	}
	req, err := h.API(token).NewRequest(context.Background(), c.method, c.path, c.body)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case c.auth == "internal":
		req.Header.Set("x-herald-internal-token", h.InternalToken())
		req.Header.Set("x-herald-tenant-id", h.tenant)
	case strings.HasPrefix(c.auth, "raw:"):
		req.Header.Set("Authorization", strings.TrimPrefix(c.auth, "raw:"))
	}
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	resp, err := h.Client.Do(req)
	if err != nil {
		t.Fatalf("%s %.60s: %v", c.method, c.path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

type edgeHarness struct {
	*testherald.Herald
	tenant, key string
}

// consolePageRoute is the template of the console's pages.
const consolePageRoute = "/console/{page:(?:runs|subscribers|topics|workflows|deliveries|webhooks|tail)(?:/.*)?}"

// TestEveryIDSlotRefusesTenKilobytes: an over-long id is bad input, never
// a fault of the service. Every id-carrying route gets a 10 KB value in each path, query,
// header and body id slot and answers a clean 4xx in the contract's error
// shape, with a bounded body that does not echo the value; afterwards the
// process is still ready and serves. On the main of the audit, DELETE
// /v1/api-keys/{10 KB} killed the NATS connection and everything after
// was a 500.
func TestEveryIDSlotRefusesTenKilobytes(t *testing.T) {
	h := edgeHarness{Herald: testherald.Start(t, testherald.Options{})}
	h.tenant, h.key = h.Tenant("Acme")
	if r := h.Do("PUT", "/v1/bridge", h.key, map[string]string{"webhookUrl": "http://127.0.0.1:1/bridge"}); r.Status != http.StatusOK {
		t.Fatalf("bridge: %d %s", r.Status, r.Body)
	}
	if r := h.Do("PUT", "/v1/subscribers/u1", h.key, map[string]any{}); r.Status != http.StatusCreated {
		t.Fatalf("subscriber: %d %s", r.Status, r.Body)
	}
	if r := h.Do("PUT", "/v1/topics/t1", h.key, map[string]any{}); r.Status != http.StatusCreated {
		t.Fatalf("topic: %d %s", r.Status, r.Body)
	}
	esc := url.PathEscape(huge)
	dotted := url.PathEscape(strings.Repeat("a.*>", 10<<8)) // wildcards and dots, 10 KB
	q := url.QueryEscape(huge)
	run := "run_000000000000000000000000"
	nf, inv := []int{404}, []int{422}
	cases := []edgeCase{
		{"/v1/admin/tenants/{tenantId}/api-keys", "POST", "/v1/admin/tenants/" + esc + "/api-keys", "admin", nil, nil, nf},
		{"/v1/admin/tenants/{tenantId}/api-keys", "POST", "/v1/admin/tenants/" + dotted + "/api-keys", "admin", nil, nil, nf},
		{"/v1/admin/tenants/{tenantId}/api-keys", "GET", "/v1/admin/tenants/" + esc + "/api-keys", "admin", nil, nil, nf},
		{"/v1/admin/tenants/{tenantId}/api-keys", "GET", "/v1/admin/tenants/" + dotted + "/api-keys", "admin", nil, nil, nf},
		{"/v1/admin/tenants/{tenantId}/api-keys/{prefix}", "DELETE", "/v1/admin/tenants/" + esc + "/api-keys/hk_abcdefgh", "admin", nil, nil, nf},
		{"/v1/admin/tenants/{tenantId}/api-keys/{prefix}", "DELETE", "/v1/admin/tenants/" + dotted + "/api-keys/" + esc, "admin", nil, nil, nf},
		{"/v1/admin/tenants", "GET", "/v1/admin/tenants?cursor=" + q, "admin", nil, nil, inv},
		{"/v1/admin/events", "GET", "/v1/admin/events?tenant=" + q, "admin", nil, nil, inv},
		{"/v1/api-keys/{prefix}", "DELETE", "/v1/api-keys/" + esc, "tenant", nil, nil, nf},
		{"/v1/api-keys/{prefix}", "DELETE", "/v1/api-keys/" + dotted, "tenant", nil, nil, nf},
		{"/v1/events/{runId}/signal", "POST", "/v1/events/" + esc + "/signal", "tenant", nil, map[string]string{"event": "e"}, nf},
		{"/v1/events/{runId}/signal", "POST", "/v1/events/" + run + "/signal", "tenant", nil, map[string]string{"event": huge}, inv},
		{"/v1/runs/{runId}", "GET", "/v1/runs/" + esc, "tenant", nil, nil, nf},
		{"/v1/runs/{runId}/cancel", "POST", "/v1/runs/" + esc + "/cancel", "tenant", nil, nil, nf},
		{"/v1/runs/{runId}/cancel", "POST", "/v1/runs/" + dotted + "/cancel", "tenant", nil, nil, nf},
		{"/v1/runs/{runId}/rerun", "POST", "/v1/runs/" + esc + "/rerun", "tenant", nil, nil, nf},
		{"/v1/runs/{runId}/rerun", "POST", "/v1/runs/" + dotted + "/rerun", "tenant", nil, nil, nf},
		{"/v1/transactions/{transactionId}", "GET", "/v1/transactions/" + esc, "tenant", nil, nil, nf},
		{"/v1/transactions/{transactionId}", "GET", "/v1/transactions/" + dotted, "tenant", nil, nil, nf},
		{"/v1/transactions/{transactionId}/cancel", "POST", "/v1/transactions/" + esc + "/cancel", "tenant", nil, nil, nf},
		{"/v1/transactions/{transactionId}/cancel", "POST", "/v1/transactions/" + dotted + "/cancel", "tenant", nil, nil, nf},
		{"/v1/signals", "POST", "/v1/signals", "tenant", nil, map[string]string{"event": "e", "transactionId": huge}, inv},
		{"/v1/signals", "POST", "/v1/signals", "tenant", nil, map[string]string{"event": "e", "transactionId": "t", "subscriberId": huge}, inv},
		{"/v1/signals", "POST", "/v1/signals", "tenant", nil, map[string]string{"event": huge, "transactionId": "t"}, inv},
		{"/v1/runs", "GET", "/v1/runs?transactionId=" + q, "tenant", nil, nil, inv},
		{"/v1/runs", "GET", "/v1/runs?subscriberId=" + q, "tenant", nil, nil, inv},
		{"/v1/runs", "GET", "/v1/runs?status=" + q, "tenant", nil, nil, inv},
		{"/v1/runs", "GET", "/v1/runs?cursor=" + q, "tenant", nil, nil, inv},
		{"/v1/notifications", "GET", "/v1/notifications?transactionId=" + q, "tenant", nil, nil, inv},
		{"/v1/deliveries", "GET", "/v1/deliveries?runId=" + q, "tenant", nil, nil, inv},
		{"/v1/subscribers", "GET", "/v1/subscribers?cursor=" + q, "tenant", nil, nil, inv},
		{"/v1/subscribers/{externalId}", "PUT", "/v1/subscribers/" + esc, "tenant", nil, map[string]any{}, inv},
		{"/v1/subscribers/{externalId}", "GET", "/v1/subscribers/" + esc, "tenant", nil, nil, inv},
		{"/v1/subscribers/{externalId}", "DELETE", "/v1/subscribers/" + esc, "tenant", nil, nil, inv},
		{"/v1/subscribers/{externalId}/subscriptions", "GET", "/v1/subscribers/" + esc + "/subscriptions", "tenant", nil, nil, inv},
		{"/v1/subscribers/{externalId}/preferences", "GET", "/v1/subscribers/" + esc + "/preferences", "tenant", nil, nil, inv},
		{"/v1/subscribers/{externalId}/preferences", "PATCH", "/v1/subscribers/" + esc + "/preferences", "tenant", nil, map[string]any{}, inv},
		{"/v1/subscribers/{externalId}/preferences", "PATCH", "/v1/subscribers/u1/preferences", "tenant", nil,
			map[string]any{"workflows": map[string]any{huge: nil}, "channels": map[string]any{huge: true}}, inv},
		{"/v1/subscribers/{externalId}/subscriptions/{topicKey}", "PUT", "/v1/subscribers/" + esc + "/subscriptions/t1", "tenant", nil, nil, inv},
		{"/v1/subscribers/{externalId}/subscriptions/{topicKey}", "PUT", "/v1/subscribers/u1/subscriptions/" + esc, "tenant", nil, nil, inv},
		{"/v1/subscribers/{externalId}/subscriptions/{topicKey}", "DELETE", "/v1/subscribers/" + esc + "/subscriptions/t1", "tenant", nil, nil, inv},
		{"/v1/subscribers/{externalId}/subscriptions/{topicKey}", "DELETE", "/v1/subscribers/u1/subscriptions/" + esc, "tenant", nil, nil, inv},
		{"/v1/topics/{key}", "PUT", "/v1/topics/" + esc, "tenant", nil, map[string]any{}, inv},
		{"/v1/topics/{key}", "GET", "/v1/topics/" + esc, "tenant", nil, nil, inv},
		{"/v1/topics/{key}", "DELETE", "/v1/topics/" + esc, "tenant", nil, nil, inv},
		{"/v1/topics/{key}/subscribers", "GET", "/v1/topics/" + esc + "/subscribers", "tenant", nil, nil, inv},
		{"/v1/channels/{key}", "PATCH", "/v1/channels/" + esc, "tenant", nil, map[string]any{"enabled": true}, nf},
		{"/v1/channels/{key}", "DELETE", "/v1/channels/" + esc, "tenant", nil, nil, nf},
		{"/v1/channels/{key}/inbound-token", "POST", "/v1/channels/" + esc + "/inbound-token", "tenant", nil, nil, nf},
		{"/in/{token}", "POST", "/in/" + esc, "", nil, map[string]any{}, nf},
		{"/in/{token}", "POST", "/in/" + dotted, "", nil, map[string]any{}, nf},
		{"/v1/channels", "POST", "/v1/channels", "tenant", nil, map[string]any{"channelKey": huge, "config": map[string]any{}}, []int{404, 422}},
		{"/v1/webhooks/{webhookId}", "GET", "/v1/webhooks/" + esc, "tenant", nil, nil, nf},
		{"/v1/webhooks/{webhookId}", "PATCH", "/v1/webhooks/" + esc, "tenant", nil, map[string]any{"enabled": true}, nf},
		{"/v1/webhooks/{webhookId}", "DELETE", "/v1/webhooks/" + esc, "tenant", nil, nil, nf},
		{"/v1/webhooks/{webhookId}/rotate-secret", "POST", "/v1/webhooks/" + esc + "/rotate-secret", "tenant", nil, nil, nf},
		{"/v1/webhooks/{webhookId}/attempts", "GET", "/v1/webhooks/" + esc + "/attempts", "tenant", nil, nil, nf},
		{"/v1/webhooks/{webhookId}/messages/{messageId}/resend", "POST", "/v1/webhooks/" + esc + "/messages/msg_1/resend", "tenant", nil, nil, nf},
		{"/v1/webhooks/{webhookId}/messages/{messageId}/resend", "POST", "/v1/webhooks/wh_1/messages/" + esc + "/resend", "tenant", nil, nil, nf},
		{"/v1/webhooks", "POST", "/v1/webhooks", "tenant", nil, map[string]any{"url": "https://example.com/" + huge, "events": []string{huge}, "description": huge}, inv},
		{"/v1/events", "POST", "/v1/events", "tenant", nil, map[string]any{"workflowId": huge, "to": map[string]string{"subscriberId": "u1"}}, inv},
		{"/v1/events", "POST", "/v1/events", "tenant", nil, map[string]any{"workflowId": "w", "to": map[string]string{"subscriberId": huge}}, inv},
		{"/v1/events", "POST", "/v1/events", "tenant", nil, map[string]any{"workflowId": "w", "to": map[string]any{"topics": []string{huge}}}, inv},
		{"/v1/events", "POST", "/v1/events", "tenant", nil, map[string]any{"workflowId": "w", "to": map[string]string{"subscriberId": "u1"}, "transactionId": huge}, inv},
		{"/v1/bridge", "PUT", "/v1/bridge", "tenant", nil, map[string]string{"webhookUrl": "https://" + huge + ".example/"}, inv},
		{"/v1/suppressions", "GET", "/v1/suppressions?kind=" + q, "tenant", nil, nil, inv},
		{"/v1/suppressions", "GET", "/v1/suppressions?cursor=" + q, "tenant", nil, nil, inv},
		{"/v1/suppressions/{kind}/{address}", "PUT", "/v1/suppressions/" + esc + "/a@example.com", "tenant", nil, map[string]any{}, inv},
		{"/v1/suppressions/{kind}/{address}", "PUT", "/v1/suppressions/push/" + esc, "tenant", nil, map[string]any{}, inv},
		{"/v1/suppressions/{kind}/{address}", "PUT", "/v1/suppressions/email/a@example.com", "tenant", nil, map[string]any{"reason": huge}, inv},
		{"/v1/suppressions/{kind}/{address}", "DELETE", "/v1/suppressions/" + dotted + "/a@example.com", "tenant", nil, nil, inv},
		{"/v1/suppressions/{kind}/{address}", "DELETE", "/v1/suppressions/push/" + esc, "tenant", nil, nil, inv},
		{"/v1/api-keys", "GET", "/v1/api-keys", "raw:Bearer hk_" + huge, nil, nil, []int{401}},
		{"/v1/deliver", "POST", "/v1/deliver", "internal", map[string]string{"x-herald-tenant-id": huge}, map[string]any{}, []int{401, 422}},
		{"/v1/deliver", "POST", "/v1/deliver", "internal", map[string]string{"x-herald-tenant-id": "ten_.*.>"}, map[string]any{}, []int{401, 422}},
		{"/v1/deliver", "POST", "/v1/deliver", "internal", map[string]string{"x-herald-internal-token": huge}, map[string]any{}, []int{401}},
	}
	cases = append(cases,
		edgeCase{"/v1/workflows/{workflowId}/controls", "GET", "/v1/workflows/" + esc + "/controls", "tenant", nil, nil, nf},
		edgeCase{"/v1/workflows/{workflowId}/controls/history", "GET", "/v1/workflows/" + esc + "/controls/history?stepId=" + q, "tenant", nil, nil, nf},
		edgeCase{"/v1/workflows/{workflowId}/controls/{stepId}", "PUT", "/v1/workflows/" + esc + "/controls/" + esc + "?locale=" + q, "tenant", nil, map[string]any{}, []int{404, 422}},
		edgeCase{"/v1/workflows/{workflowId}/controls/{stepId}", "DELETE", "/v1/workflows/" + dotted + "/controls/" + esc, "tenant", nil, nil, nf},
		edgeCase{"/v1/workflows/{workflowId}/controls/{stepId}/revert", "POST", "/v1/workflows/" + esc + "/controls/" + esc + "/revert", "tenant", nil, map[string]any{"version": 1}, nf},
		edgeCase{"/v1/workflows/{workflowId}/preview", "POST", "/v1/workflows/" + esc + "/preview", "tenant", nil, map[string]any{"stepId": huge, "runId": huge}, nf},
		edgeCase{"/v1/layouts/{layoutId}", "PUT", "/v1/layouts/" + esc, "tenant", nil, map[string]any{"name": "n", "html": "{{content}}"}, inv},
		edgeCase{"/v1/layouts/{layoutId}", "GET", "/v1/layouts/" + dotted, "tenant", nil, nil, nf},
		edgeCase{"/v1/layouts/{layoutId}", "DELETE", "/v1/layouts/" + esc, "tenant", nil, nil, nf},
	)
	var tok struct{ Token string }
	h.Do("POST", "/v1/subscribers/u1/inbox-tokens", h.key, nil).JSON(t, &tok)
	inbox := "raw:Bearer " + tok.Token
	cases = append(cases,
		edgeCase{"/v1/subscribers/{externalId}/inbox-tokens", "POST", "/v1/subscribers/" + esc + "/inbox-tokens", "tenant", nil, nil, inv},
		edgeCase{"/v1/subscribers/{externalId}/inbox-tokens/revoke", "POST", "/v1/subscribers/" + esc + "/inbox-tokens/revoke", "tenant", nil, nil, inv},
		edgeCase{"/v1/subscribers/{externalId}/inbox", "GET", "/v1/subscribers/" + esc + "/inbox", "tenant", nil, nil, inv},
		edgeCase{"/v1/subscribers/{externalId}/explain", "GET", "/v1/subscribers/" + esc + "/explain", "tenant", nil, nil, inv},
		edgeCase{"/v1/subscribers/{externalId}/explain", "GET", "/v1/subscribers/u1/explain?workflowId=" + q, "tenant", nil, nil, inv},
		edgeCase{"/v1/runs/{runId}/events", "GET", "/v1/runs/" + esc + "/events", "tenant", nil, nil, nf},
		edgeCase{"/console/assets/{name:.+}", "GET", "/console/assets/" + esc, "", nil, nil, nf},
		edgeCase{consolePageRoute, "GET", "/console/runs/" + esc, "", nil, nil, nf},
		edgeCase{"/v1/inbox/counts", "GET", "/v1/inbox/counts", "raw:Bearer hit_" + huge, nil, nil, []int{401}},
		edgeCase{"/v1/inbox/stream", "GET", "/v1/inbox/stream?token=" + q, "", nil, nil, []int{401}},
		edgeCase{"/v1/inbox/messages", "GET", "/v1/inbox/messages?cursor=" + q, inbox, nil, nil, inv},
		edgeCase{"/v1/inbox/messages", "GET", "/v1/inbox/messages?filter=" + q, inbox, nil, nil, inv},
	)
	for _, action := range []string{"read", "unread", "seen", "archive", "unarchive"} {
		route := "/v1/inbox/messages/{messageId}/" + action
		cases = append(cases,
			edgeCase{route, "POST", "/v1/inbox/messages/" + esc + "/" + action, inbox, nil, nil, nf},
			edgeCase{route, "POST", "/v1/inbox/messages/" + dotted + "/" + action, inbox, nil, nil, nf})
	}
	for _, field := range []string{"idempotencyKey", "runId", "stepId", "subscriberId", "to", "channel"} {
		body := map[string]any{"idempotencyKey": run + ":s", "runId": run, "stepId": "s", "subscriberId": "u1",
			"channel": "email", "content": map[string]string{"subject": "s", "body": "b"}}
		body[field] = huge
		cases = append(cases, edgeCase{"/v1/deliver", "POST", "/v1/deliver", "internal", nil, body, inv})
	}

	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.route] = true
		status, body := h.do(t, c)
		var eb struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		ok := false
		for _, s := range c.allowed {
			ok = ok || s == status
		}
		if !ok || json.Unmarshal(body, &eb) != nil || eb.Error.Code == "" || eb.Error.Message == "" {
			t.Errorf("%s %.80s: %d %.300s; want one of %v with an error body", c.method, c.path, status, body, c.allowed)
			continue
		}
		if len(body) > 4<<10 || strings.Contains(string(body), huge[:300]) {
			t.Errorf("%s %.80s: the answer (%d bytes) echoes the value: %.300s", c.method, c.path, len(body), body)
		}
	}

	// The public pages answer HTML, not the error body: a 10 KB token is
	// their 404 page, bounded, without the value.
	for _, c := range []edgeCase{
		{"/u/{token}", "GET", "/u/" + esc, "", nil, nil, nf},
		{"/u/{token}", "POST", "/u/" + dotted, "", nil, "List-Unsubscribe=One-Click", nf},
		{"/p/{token}", "GET", "/p/" + esc, "", nil, nil, nf},
		{"/p/{token}", "POST", "/p/" + esc, "", nil, "on=a/email", nf},
	} {
		covered[c.route] = true
		if status, body := h.do(t, c); status != http.StatusNotFound || len(body) > 4<<10 || strings.Contains(string(body), huge[:300]) {
			t.Errorf("%s %.80s: %d %.300s; want a bounded 404 page", c.method, c.path, status, body)
		}
	}

	// Every route with an id in its path is in the list above.
	router := httpapi.New(httpapi.Config{}, httpapi.Deps{}).Router()
	_ = router.Walk(func(rt *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		if tpl, err := rt.GetPathTemplate(); err == nil && strings.Contains(tpl, "{") && !covered[tpl] {
			t.Errorf("route %s carries an id and is not exercised", tpl)
		}
		return nil
	})

	if r := h.Do("GET", "/readyz", "", nil); r.Status != http.StatusOK {
		t.Fatalf("readyz after the flood: %d %s", r.Status, r.Body)
	}
	if !h.Log().Conn().IsConnected() {
		t.Fatal("the NATS connection was lost")
	}
	if r := h.Do("PUT", "/v1/subscribers/u2", h.key, map[string]any{}); r.Status != http.StatusCreated {
		t.Fatalf("a write after the flood: %d %s", r.Status, r.Body)
	}
	if r := h.Do("POST", "/v1/api-keys", h.key, nil); r.Status != http.StatusCreated {
		t.Fatalf("a key after the flood: %d %s", r.Status, r.Body)
	}
}

// TestUnknownFieldsAnswerIsBounded: an error answer must not grow with
// the bad input. A 0.77 MB body of unknown fields was answered with every one of
// them, 3.1 MB. Now details lists at most 20, each path cut to 200
// characters, and the message says how many more there were.
func TestUnknownFieldsAnswerIsBounded(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("Acme")
	var b strings.Builder
	b.WriteString(`{"contacts":{}`)
	n := 0
	for b.Len() < 770<<10 {
		n++
		fmt.Fprintf(&b, `,"unknown_%06d_%s":1`, n, strings.Repeat("x", 300))
	}
	b.WriteString("}")
	r := h.Do("PUT", "/v1/subscribers/u1", key, b.String())
	var eb struct {
		Error struct {
			Code    string
			Message string
			Details []struct{ Field, Problem string }
		}
	}
	r.JSON(t, &eb)
	if r.Status != 422 || eb.Error.Code != "validation_failed" {
		t.Fatalf("status %d code %q", r.Status, eb.Error.Code)
	}
	if len(eb.Error.Details) != 20 || len(r.Body) > 16<<10 {
		t.Fatalf("%d details, %d bytes", len(eb.Error.Details), len(r.Body))
	}
	for _, d := range eb.Error.Details {
		if n := utf8.RuneCountInString(d.Field); n > 200 || !strings.HasSuffix(d.Field, "…") {
			t.Fatalf("field of %d characters: %q", n, d.Field)
		}
	}
	if want := fmt.Sprintf("and %d more", n-20); !strings.Contains(eb.Error.Message, want) {
		t.Fatalf("message %q does not say %q", eb.Error.Message, want)
	}
	// A few unknown fields are all listed, whole.
	r = h.Do("PUT", "/v1/subscribers/u1", key, `{"a":1,"b":2}`)
	r.JSON(t, &eb)
	if r.Status != 422 || len(eb.Error.Details) != 2 || eb.Error.Message != "2 fields are invalid" {
		t.Fatalf("two unknown fields: %d %s", r.Status, r.Body)
	}
}

// TestRepeatedTransactionIDWithAnotherBody is a regression test: a
// repeated transactionId with a different body silently answered the
// first trigger's runs. Now it is 409 transaction_mismatch; an identical
// repeat (even spelled otherwise) still answers the first.
func TestRepeatedTransactionIDWithAnotherBody(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("Acme")
	if r := h.Do("PUT", "/v1/bridge", key, map[string]string{"webhookUrl": "http://127.0.0.1:1/bridge"}); r.Status != http.StatusOK {
		t.Fatalf("bridge: %d %s", r.Status, r.Body)
	}
	first := h.Do("POST", "/v1/events", key, `{"workflowId":"w","to":{"subscriberId":"u1"},"payload":{"a":1,"b":2},"transactionId":"t1"}`)
	if first.Status != http.StatusAccepted {
		t.Fatalf("first: %d %s", first.Status, first.Body)
	}
	again := h.Do("POST", "/v1/events", key, `{"transactionId":"t1","payload":{"b":2, "a":1},"to":{"subscriberId":"u1"},"workflowId":"w"}`)
	if again.Status != http.StatusAccepted || string(again.Body) != string(first.Body) {
		t.Fatalf("identical repeat: %d %s, want %s", again.Status, again.Body, first.Body)
	}
	for _, body := range []string{
		`{"workflowId":"other","to":{"subscriberId":"u1"},"payload":{"a":1,"b":2},"transactionId":"t1"}`,
		`{"workflowId":"w","to":{"subscriberId":"u2"},"payload":{"a":1,"b":2},"transactionId":"t1"}`,
		`{"workflowId":"w","to":{"topics":["t"]},"payload":{"a":1,"b":2},"transactionId":"t1"}`,
		`{"workflowId":"w","to":{"subscriberId":"u1"},"payload":{"a":1,"b":3},"transactionId":"t1"}`,
	} {
		r := h.Do("POST", "/v1/events", key, body)
		if r.Status != http.StatusConflict || r.ErrorCode() != "transaction_mismatch" {
			t.Errorf("%s: %d %s", body, r.Status, r.Body)
		}
	}
}
