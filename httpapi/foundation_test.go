package httpapi_test

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/service"
)

var keyFormat = regexp.MustCompile(`^hk_[0-9A-Za-z]{8}_[0-9A-Za-z]{32}$`)

func TestAdminCreatesTenantsAndKeys(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	r := h.Do("POST", "/v1/admin/tenants", h.AdminToken(), map[string]string{"name": "Acme"})
	if r.Status != http.StatusCreated {
		t.Fatalf("status %d %s", r.Status, r.Body)
	}
	var tn struct{ TenantID, Name, APIKey string }
	r.JSON(t, &tn)
	if !strings.HasPrefix(tn.TenantID, "ten_") || tn.Name != "Acme" || !keyFormat.MatchString(tn.APIKey) {
		t.Fatalf("tenant answer %+v", tn)
	}
	r = h.Do("POST", "/v1/admin/tenants/"+tn.TenantID+"/api-keys", h.AdminToken(), nil)
	var k struct{ APIKey, Prefix string }
	r.JSON(t, &k)
	if r.Status != http.StatusCreated || !keyFormat.MatchString(k.APIKey) || k.APIKey[:11] != k.Prefix {
		t.Fatalf("admin key: %d %s", r.Status, r.Body)
	}
	if r := h.Do("GET", "/v1/api-keys", k.APIKey, nil); r.Status != http.StatusOK {
		t.Fatalf("new key does not authenticate: %d", r.Status)
	}
	if r := h.Do("POST", "/v1/admin/tenants/ten_nope/api-keys", h.AdminToken(), nil); r.Status != http.StatusNotFound {
		t.Fatalf("unknown tenant: %d", r.Status)
	}
	if r := h.Do("POST", "/v1/admin/tenants", h.AdminToken(), map[string]string{"name": " "}); r.Status != 422 {
		t.Fatalf("blank name: %d", r.Status)
	}
}

func TestAdminAuth(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("Acme")
	for _, tok := range []string{"", "wrong", key} {
		r := h.Do("POST", "/v1/admin/tenants", tok, map[string]string{"name": "x"})
		if r.Status != http.StatusUnauthorized || r.Header.Get("WWW-Authenticate") != "Bearer" || r.ErrorCode() != "unauthorized" {
			t.Fatalf("admin with %q: %d %v %s", tok, r.Status, r.Header, r.Body)
		}
	}
}

func TestTenantKeysListCreateRevoke(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("Acme")
	_, otherKey := h.Tenant("Other")
	r := h.Do("POST", "/v1/api-keys", key, nil)
	if r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	var second struct{ APIKey, Prefix string }
	r.JSON(t, &second)

	r = h.Do("GET", "/v1/api-keys", key, nil)
	var l struct {
		Data []struct {
			Prefix    string
			CreatedAt string
			APIKey    string `json:"apiKey"`
		}
		NextCursor *string
	}
	r.JSON(t, &l)
	if len(l.Data) != 2 || l.NextCursor != nil || strings.Contains(string(r.Body), key[12:]) {
		t.Fatalf("list: %s", r.Body)
	}
	for _, d := range l.Data {
		if d.APIKey != "" || !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`).MatchString(d.CreatedAt) {
			t.Fatalf("list item %+v", d)
		}
	}
	// Paging.
	r = h.Do("GET", "/v1/api-keys?limit=1", key, nil)
	r.JSON(t, &l)
	if len(l.Data) != 1 || l.NextCursor == nil {
		t.Fatalf("page 1: %s", r.Body)
	}
	r = h.Do("GET", "/v1/api-keys?limit=1&cursor="+*l.NextCursor, key, nil)
	r.JSON(t, &l)
	if len(l.Data) != 1 || l.NextCursor != nil {
		t.Fatalf("page 2: %s", r.Body)
	}

	// Another tenant cannot see or revoke these keys.
	if r := h.Do("DELETE", "/v1/api-keys/"+second.Prefix, otherKey, nil); r.Status != http.StatusNotFound {
		t.Fatalf("cross-tenant revoke: %d", r.Status)
	}
	if r := h.Do("DELETE", "/v1/api-keys/"+second.Prefix, key, nil); r.Status != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", r.Status, r.Body)
	}
	if r := h.Do("GET", "/v1/api-keys", second.APIKey, nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("revoked key accepted: %d", r.Status)
	}
	if r := h.Do("DELETE", "/v1/api-keys/"+second.Prefix, key, nil); r.Status != http.StatusNotFound {
		t.Fatalf("second revoke: %d", r.Status)
	}
	// A key that differs in its secret part only is refused.
	last := "a"
	if strings.HasSuffix(key, "a") {
		last = "b"
	}
	forged := key[:len(key)-1] + last
	if r := h.Do("GET", "/v1/api-keys", forged, nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("forged key accepted: %d", r.Status)
	}
}

func TestGenericErrors(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("Acme")
	cases := []struct {
		name, method, path string
		body               any
		status             int
		code               string
	}{
		{"unknown route", "GET", "/v1/nope", nil, 404, "not_found"},
		{"wrong method", "PATCH", "/v1/api-keys", nil, 405, "method_not_allowed"},
		{"malformed", "POST", "/v1/api-keys", `{"a":`, 400, "invalid_json"},
		{"trailing data", "POST", "/v1/api-keys", `{} {}`, 400, "invalid_json"},
		{"not an object", "POST", "/v1/api-keys", `[1]`, 422, "validation_failed"},
		{"unknown field", "POST", "/v1/api-keys", `{"Name":"x"}`, 422, "validation_failed"},
		{"too large", "POST", "/v1/api-keys", `{"x":"` + strings.Repeat("a", 1<<20) + `"}`, 413, "body_too_large"},
		{"limit zero", "GET", "/v1/api-keys?limit=0", nil, 422, "validation_failed"},
		{"limit too big", "GET", "/v1/api-keys?limit=501", nil, 422, "validation_failed"},
		{"bad cursor", "GET", "/v1/api-keys?cursor=!!", nil, 422, "validation_failed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := h.Do(c.method, c.path, key, c.body)
			if r.Status != c.status || r.ErrorCode() != c.code {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			if r.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("content type %q", r.Header.Get("Content-Type"))
			}
		})
	}
	r := h.Do("POST", "/v1/admin/tenants", h.AdminToken(), `{"name":7}`)
	m := r.Map(t)
	details := m["error"].(map[string]any)["details"].([]any)
	if r.Status != 422 || details[0].(map[string]any)["field"] != "name" {
		t.Fatalf("wrong type: %d %s", r.Status, r.Body)
	}
}

func TestHealthAndReadiness(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	if r := h.Do("GET", "/healthz", "", nil); r.Status != 200 {
		t.Fatalf("healthz %d", r.Status)
	}
	if r := h.Do("GET", "/readyz", "", nil); r.Status != 200 {
		t.Fatalf("readyz %d", r.Status)
	}
}

func TestRestartKeepsTenantsAndRebuildsProjections(t *testing.T) {
	dir := t.TempDir()
	h := testherald.Start(t, testherald.Options{DataDir: dir})
	_, key := h.Tenant("Acme")
	admin := h.AdminToken()
	h.Stop()

	h = testherald.Start(t, testherald.Options{DataDir: dir})
	if h.AdminToken() != admin {
		t.Fatal("admin token changed across restart")
	}
	if r := h.Do("GET", "/v1/api-keys", key, nil); r.Status != 200 {
		t.Fatalf("key lost on restart: %d", r.Status)
	}
	h.Stop()

	if err := os.Remove(filepath.Join(dir, service.ProjectionsFile)); err != nil {
		t.Fatal(err)
	}
	h = testherald.Start(t, testherald.Options{DataDir: dir})
	if r := h.Do("GET", "/v1/api-keys", key, nil); r.Status != 200 {
		t.Fatalf("key lost after projections were deleted: %d", r.Status)
	}
}
