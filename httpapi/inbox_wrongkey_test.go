package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/testherald"
)

// A tenant API key on an inbox route, or an inbox token on a tenant route,
// is a 401 whose message says which credential the route takes, instead
// of calling a key that may well be valid "invalid".
func TestWrongCredentialKindIsNamed(t *testing.T) {
	f := newInboxFixture(t, testherald.Options{}, "ada")
	tok := f.token("ada")
	for _, c := range []struct{ method, path, cred, want string }{
		{"GET", "/v1/inbox/counts", f.key, "inbox token"},
		{"GET", "/v1/inbox/stream", f.key, "inbox token"},
		{"POST", "/v1/inbox/read-all", f.key, "inbox token"},
		{"GET", "/v1/subscribers/ada", tok, "tenant API key"},
	} {
		r := f.h.Do(c.method, c.path, c.cred, nil)
		expectCode(t, r, http.StatusUnauthorized, "unauthorized")
		var body struct{ Error struct{ Message string } }
		r.JSON(t, &body)
		if !strings.Contains(body.Error.Message, c.want) {
			t.Errorf("%s %s: message %q does not name the %s it takes", c.method, c.path, body.Error.Message, c.want)
		}
		if strings.Contains(string(r.Body), c.cred) {
			t.Errorf("%s %s: the answer echoes the credential", c.method, c.path)
		}
	}
	// Other bad credentials keep the plain answer.
	r := f.h.Do("GET", "/v1/inbox/counts", "hit_x.y.z", nil)
	expectCode(t, r, http.StatusUnauthorized, "unauthorized")
	if strings.Contains(string(r.Body), "tenant API key") {
		t.Errorf("a bad inbox token is answered %s", r.Body)
	}
}
