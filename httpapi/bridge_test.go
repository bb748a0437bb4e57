package httpapi_test

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/testherald"
)

var signingSecretFormat = regexp.MustCompile(`^whsec_[0-9A-Za-z]{32}$`)

// bridgeAnswer decodes a PUT /v1/bridge answer, failing on any key beyond
// webhookUrl and signingSecret.
func bridgeAnswer(t *testing.T, r testherald.Response) (url, secret string) {
	t.Helper()
	if r.Status != http.StatusOK {
		t.Fatalf("put bridge: %d %s", r.Status, r.Body)
	}
	var m map[string]string
	r.JSON(t, &m)
	if len(m) != 2 || !signingSecretFormat.MatchString(m["signingSecret"]) {
		t.Fatalf("put bridge answer %s", r.Body)
	}
	return m["webhookUrl"], m["signingSecret"]
}

func TestBridgeRegistration(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("Acme")
	_, otherKey := h.Tenant("Other")

	r := h.Do("GET", "/v1/bridge", key, nil)
	if r.Status != http.StatusNotFound || r.ErrorCode() != "bridge_not_configured" {
		t.Fatalf("get before put: %d %s", r.Status, r.Body)
	}

	url, first := bridgeAnswer(t, h.Do("PUT", "/v1/bridge", key, map[string]string{"webhookUrl": "https://bridge.example.com/api/herald"}))
	if url != "https://bridge.example.com/api/herald" {
		t.Fatalf("webhookUrl %q", url)
	}
	r = h.Do("GET", "/v1/bridge", key, nil)
	var view map[string]any
	r.JSON(t, &view)
	if r.Status != http.StatusOK || len(view) != 2 || view["webhookUrl"] != url || view["configured"] != true {
		t.Fatalf("get: %d %s", r.Status, r.Body)
	}

	// Every PUT rotates the secret.
	url2, second := bridgeAnswer(t, h.Do("PUT", "/v1/bridge", key, map[string]string{"webhookUrl": "http://127.0.0.1:4000/bridge"}))
	if second == first {
		t.Fatal("a second PUT kept the signing secret")
	}
	_, third := bridgeAnswer(t, h.Do("PUT", "/v1/bridge", key, map[string]string{"webhookUrl": url2}))
	if third == second || third == first {
		t.Fatal("a PUT of the same URL kept the signing secret")
	}
	r = h.Do("GET", "/v1/bridge", key, nil)
	r.JSON(t, &view)
	if view["webhookUrl"] != url2 {
		t.Fatalf("get after rotation: %s", r.Body)
	}

	// Another tenant's binding is its own.
	if r := h.Do("GET", "/v1/bridge", otherKey, nil); r.Status != http.StatusNotFound {
		t.Fatalf("other tenant sees the binding: %d %s", r.Status, r.Body)
	}

	for _, bad := range []string{
		"", "not a url", "/relative/path", "bridge.example.com", "ftp://bridge.example.com/x",
		"http://", "https:///path", "https://:443/x", "mailto:ops@example.com", "http:bridge.example.com",
		"https://user:pass@bridge.example.com/", "https://bridge example.com/",
	} {
		r := h.Do("PUT", "/v1/bridge", key, map[string]string{"webhookUrl": bad})
		if r.Status != http.StatusUnprocessableEntity || r.ErrorCode() != "validation_failed" ||
			!slices.Equal(problems(t, r), []string{"webhookUrl"}) {
			t.Errorf("PUT %q: %d %s", bad, r.Status, r.Body)
		}
	}
	for _, body := range []string{`{}`, `{"webhookUrl":42}`, `{"webhookURL":"https://x.example"}`} {
		if r := h.Do("PUT", "/v1/bridge", key, body); r.Status != http.StatusUnprocessableEntity {
			t.Errorf("PUT %s: %d %s", body, r.Status, r.Body)
		}
	}
	// Refused PUTs changed nothing.
	r = h.Do("GET", "/v1/bridge", key, nil)
	if r.JSON(t, &view); view["webhookUrl"] != url2 {
		t.Fatalf("after refused PUTs: %s", r.Body)
	}
	if r := h.Do("PUT", "/v1/bridge", "", map[string]string{"webhookUrl": url2}); r.Status != http.StatusUnauthorized {
		t.Fatalf("PUT without a key: %d", r.Status)
	}
	for _, s := range []string{first, second, third} {
		if strings.Contains(string(r.Body), s) {
			t.Fatal("GET /v1/bridge shows a signing secret")
		}
	}
}
