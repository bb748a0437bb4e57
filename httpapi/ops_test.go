package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testwait"
)

// TestMetricsEndpoint: GET /metrics needs no credentials and reports
// requests by route template (never the raw path), events appended, the
// projector's lag and the work consumers' backlog.
func TestMetricsEndpoint(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("Metrics")
	if r := h.Do("PUT", "/v1/subscribers/ada%40example.com", key, map[string]any{}); r.Status != 201 {
		t.Fatalf("PUT subscriber: %d %s", r.Status, r.Body)
	}
	h.Do("GET", "/v1/subscribers/nobody", key, nil)
	h.Do("GET", "/no/such/route/42", key, nil)
	// The work consumers' gauges are sampled from NATS at scrape time
	// (a 2 s bound, left out of a scrape that misses it) once the engine
	// made its consumers: scrape until they are there; the deadline
	// guards against a hang only.
	var body string
	testwait.For(t, "the work consumers' gauges", func() bool {
		r := h.Do("GET", "/metrics", "", nil)
		if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") {
			t.Fatalf("GET /metrics: %d %s", r.Status, r.Header.Get("Content-Type"))
		}
		body = string(r.Body)
		return strings.Contains(body, `herald_work_pending_messages{consumer="herald-runs"}`)
	})
	for _, want := range []string{
		`herald_http_requests_total{method="PUT",route="/v1/subscribers/{externalId}",status="201"} 1`,
		`herald_http_requests_total{method="GET",route="/v1/subscribers/{externalId}",status="404"} 1`,
		`herald_http_requests_total{method="POST",route="/v1/admin/tenants",status="201"} 1`,
		`herald_http_requests_total{method="GET",route="unmatched",status="404"} 1`,
		`herald_projector_lag_events`,
		`herald_work_pending_messages{consumer="herald-runs"}`,
		`herald_ready 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	for _, raw := range []string{"ada%40example.com", "ada@example.com", "/no/such/route"} {
		if strings.Contains(body, raw) {
			t.Errorf("/metrics holds the raw path %q", raw)
		}
	}
	if !strings.Contains(body, "herald_events_appended_total ") || strings.Contains(body, "herald_events_appended_total 0\n") {
		t.Error("no appended events counted")
	}
}

// TestAdminEventsEndpoint: the audit stream needs the admin token, checks
// its query, replays as NDJSON and follows.
func TestAdminEventsEndpoint(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	tenant, key := h.Tenant("Audit")
	h.Tenant("Other")
	if r := h.Do("GET", "/v1/admin/events", key, nil); r.Status != 401 || r.Header.Get("WWW-Authenticate") != "Bearer" {
		t.Fatalf("with a tenant key: %d", r.Status)
	}
	for _, q := range []string{"tenant=a.b", "since=yesterday", "follow=maybe"} {
		if r := h.Do("GET", "/v1/admin/events?"+q, h.AdminToken(), nil); r.Status != 422 || r.ErrorCode() != "validation_failed" {
			t.Errorf("?%s: %d %s", q, r.Status, r.Body)
		}
	}
	r := h.Do("GET", "/v1/admin/events?tenant="+tenant, h.AdminToken(), nil)
	if r.Status != 200 || r.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("replay: %d %s", r.Status, r.Header.Get("Content-Type"))
	}
	lines := bytes.Split(bytes.TrimSpace(r.Body), []byte("\n"))
	if len(lines) != 2 { // TenantCreated, APIKeyCreated
		t.Fatalf("%d lines: %s", len(lines), r.Body)
	}
	for _, l := range lines {
		var ev struct {
			Seq      uint64 `json:"seq"`
			TenantID string `json:"tenantId"`
			Type     string `json:"type"`
		}
		if err := json.Unmarshal(l, &ev); err != nil || ev.TenantID != tenant || ev.Seq == 0 {
			t.Fatalf("line %s: %v", l, err)
		}
	}
	if bytes.Contains(r.Body, []byte(key)) {
		t.Fatal("the replay holds the API key")
	}

	// Follow: a new event arrives on the open stream.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := h.API(h.AdminToken()).NewRequest(ctx, "GET", "/v1/admin/events?follow=true&type=TopicUpserted", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req) // the stream outlives a client timeout
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if r := h.Do("PUT", "/v1/topics/live", key, map[string]any{}); r.Status != 201 {
		t.Fatalf("PUT topic: %d", r.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	if !sc.Scan() || !strings.Contains(sc.Text(), `"type":"TopicUpserted"`) {
		t.Fatalf("follow: %q %v", sc.Text(), sc.Err())
	}
	// A graceful shutdown ends the stream rather than waiting for it.
	stopped := make(chan struct{})
	go func() { h.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("shutdown waited for the open audit stream")
	}
}
