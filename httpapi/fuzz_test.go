package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"unicode/utf8"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/delivery"
)

// FuzzDecoders runs every request decoder of the API over arbitrary
// bytes, used as a body and as a query string. Whatever the input, a
// decoder never panics; a refusal is a 400 or 422 in the contract's
// error shape with at most MaxDetails details of bounded length, and the
// query's id checks and paging answer a 422 or nothing.
// CI: go test -run '^$' -fuzz '^FuzzDecoders$' -fuzztime 30s ./httpapi/
func FuzzDecoders(f *testing.F) {
	for _, seed := range []string{
		``, `{}`, `null`, `[]`, `{"a":1}`, `{"workflowId":"w","to":{"subscriberId":"u1"},"payload":{"x":[1,2]}}`,
		`{"to":{"topics":["a","b"]},"transactionId":"t"}`, `{"contacts":{"email":["a@x.io"]},"attributes":{"k":"v"}}`,
		`{"channelKey":"email-smtp","config":{"host":"h","port":25},"enabled":true,"priority":1}`,
		`{"event":"approved","payload":{}}`, `{"idempotencyKey":"k","content":{"subject":"s","body":"b"}}`,
		`{"Locale":"en"}`, `{"a":{"b":{"c":{"d":[{"e":1}]}}}}`, `{"x":1} trailing`, "{\"\xff\":1}",
		`transactionId=t&subscriberId=u&status=running&runId=run_000000000000000000000000&limit=10&cursor=abc`,
	} {
		f.Add([]byte(seed))
	}
	targets := []func() any{
		func() any { return &triggerRequest{} },
		func() any { return &signalRequest{} },
		func() any { return &subscriberRequest{} },
		func() any { return &topicRequest{} },
		func() any { return &createChannelRequest{} },
		func() any { return &patchChannelRequest{} },
		func() any { return &putBridgeRequest{} },
		func() any { return &createTenantRequest{} },
		func() any { return &delivery.Request{} },
		func() any { return &struct{}{} },
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, target := range targets {
			if err := decodeBytes(data, target()); err != nil {
				checkRefusal(t, err, http.StatusBadRequest, http.StatusUnprocessableEntity)
			}
		}
		q, err := url.ParseQuery(string(data))
		if err != nil {
			return
		}
		r := httptest.NewRequest("GET", "/v1/runs", nil)
		r.URL.RawQuery = q.Encode()
		var p apierr.Problems
		checkQueryIDs(r, &p)
		if err := p.Err(); err != nil {
			checkRefusal(t, err, http.StatusUnprocessableEntity)
		}
		if _, err := page(r); err != nil {
			checkRefusal(t, err, http.StatusUnprocessableEntity)
		}
		for _, v := range q {
			control.ValidRunID(v[0])
			control.ValidTenantID(v[0])
			control.ValidKeyPrefix(v[0])
		}
	})
}

// checkRefusal checks err is answered with one of statuses and a bounded
// error body that encodes as JSON.
func checkRefusal(t *testing.T, err error, statuses ...int) {
	t.Helper()
	status, body := describe(err)
	ok := false
	for _, s := range statuses {
		ok = ok || s == status
	}
	if !ok || body.Code == "" || body.Message == "" {
		t.Fatalf("%v: answered %d %+v, want one of %v", err, status, body, statuses)
	}
	if len(body.Details) > MaxDetails {
		t.Fatalf("%d details", len(body.Details))
	}
	for _, d := range body.Details {
		if utf8.RuneCountInString(d.Field) > MaxDetailChars || utf8.RuneCountInString(d.Problem) > MaxDetailChars {
			t.Fatalf("detail over the bound: %q %q", d.Field, d.Problem)
		}
	}
	if utf8.RuneCountInString(body.Message) > 3*MaxDetailChars {
		t.Fatalf("message of %d characters", utf8.RuneCountInString(body.Message))
	}
	if _, err := json.Marshal(errorBody{Error: body}); err != nil {
		t.Fatalf("error body does not encode: %v", err)
	}
}
