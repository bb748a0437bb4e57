package httpapi_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/heraldhq/herald/internal/testherald"
)

// Audit item 5: no per-tenant rate limit. With HERALD_RATE_LIMIT=2 (a
// burst of 4), a tenant's fifth request at once is 429 rate_limited with
// the §2 error body and a Retry-After of whole seconds; another tenant is
// not affected, nor are the admin routes.
func TestTenantOverItsRateIsRefused(t *testing.T) {
	h := testherald.Start(t, testherald.Options{Env: map[string]string{"HERALD_RATE_LIMIT": "2"}})
	_, busy := h.Tenant("Busy")
	_, calm := h.Tenant("Calm")
	var refused testherald.Response
	for i := range 20 {
		r := h.Do("GET", "/v1/subscribers", busy, nil)
		if r.Status == http.StatusTooManyRequests {
			refused = r
			if i < 4 {
				t.Fatalf("refused request %d, within the burst of 4", i+1)
			}
			break
		}
		if r.Status != http.StatusOK {
			t.Fatalf("request %d: %d %s", i+1, r.Status, r.Body)
		}
	}
	if refused.Status != http.StatusTooManyRequests {
		t.Fatal("20 requests at once were all allowed with a limit of 2/s")
	}
	m := refused.Map(t)
	e, _ := m["error"].(map[string]any)
	if refused.ErrorCode() != "rate_limited" || e["message"] == "" || refused.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("429 body: %s (%s)", refused.Body, refused.Header.Get("Content-Type"))
	}
	if n, err := strconv.Atoi(refused.Header.Get("Retry-After")); err != nil || n < 1 {
		t.Fatalf("Retry-After %q, want whole seconds ≥ 1", refused.Header.Get("Retry-After"))
	}
	if r := h.Do("GET", "/v1/subscribers", calm, nil); r.Status != http.StatusOK {
		t.Fatalf("another tenant: %d %s", r.Status, r.Body)
	}
	for range 10 {
		if r := h.Do("POST", "/v1/admin/tenants", h.AdminToken(), map[string]string{"name": "x"}); r.Status != http.StatusCreated {
			t.Fatalf("admin route limited: %d %s", r.Status, r.Body)
		}
	}
}

// HERALD_RATE_LIMIT=0 turns the limit off.
func TestRateLimitOff(t *testing.T) {
	h := testherald.Start(t, testherald.Options{Env: map[string]string{"HERALD_RATE_LIMIT": "0"}})
	_, key := h.Tenant("Acme")
	for i := range 50 {
		if r := h.Do("GET", "/v1/subscribers", key, nil); r.Status != http.StatusOK {
			t.Fatalf("request %d: %d %s", i+1, r.Status, r.Body)
		}
	}
}
