package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/testherald"
)

// TestHomePage: GET / answers a small HTML page, without credentials and
// without script, that links the health checks, the OpenAPI document and
// the docs; other unknown paths keep the JSON 404.
func TestHomePage(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	r := h.Do("GET", "/", "", nil)
	if r.Status != http.StatusOK || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %d %s", r.Status, r.Header.Get("Content-Type"))
	}
	body := string(r.Body)
	for _, want := range []string{`href="/healthz"`, `href="/v1/openapi.json"`, `href="https://github.com/heraldhq/herald/tree/main/docs"`, "Herald"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %s:\n%s", want, body)
		}
	}
	csp := r.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") || strings.Contains(body, "<script") {
		t.Errorf("the page may run script: CSP %q", csp)
	}
	if r := h.Do("GET", "/nothing-here", "", nil); r.Status != http.StatusNotFound || !strings.Contains(string(r.Body), `"not_found"`) {
		t.Fatalf("GET /nothing-here: %d %s", r.Status, r.Body)
	}
	if r := h.Do("POST", "/", "", nil); r.Status != http.StatusMethodNotAllowed {
		t.Fatalf("POST /: %d", r.Status)
	}
}
