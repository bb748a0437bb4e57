package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/testherald"
)

// TestInboundTokenRotationTakesNoBody: POST
// /v1/channels/{key}/inbound-token takes its input from its path alone,
// as the other path-only commands: a body with a field is 422
// validation_failed; no body, or {}, rotates.
func TestInboundTokenRotationTakesNoBody(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("Acme")
	h.MailChannel(key, 2525)
	r := h.Do("POST", "/v1/channels/email-smtp/inbound-token", key, map[string]any{"token": "mine"})
	expectCode(t, r, http.StatusUnprocessableEntity, "validation_failed")
	if !strings.Contains(string(r.Body), "token") {
		t.Fatalf("the refusal does not name the field: %s", r.Body)
	}
	expectCode(t, h.Do("POST", "/v1/channels/email-smtp/inbound-token", key, []int{1}), http.StatusUnprocessableEntity, "validation_failed")
	for _, body := range []any{nil, map[string]any{}} {
		if r := h.Do("POST", "/v1/channels/email-smtp/inbound-token", key, body); r.Status != http.StatusOK {
			t.Fatalf("rotation with body %v: %d %s", body, r.Status, r.Body)
		}
	}
}

// TestRefusedInboxTokenSpeaksOfAnInboxToken: an inbox route refusing a
// revoked, deleted subscriber's or malformed inbox token says so in the
// words of an inbox token, not of an API key.
func TestRefusedInboxTokenSpeaksOfAnInboxToken(t *testing.T) {
	f := newInboxFixture(t, testherald.Options{}, "ada")
	revoked := f.token("ada")
	f.call("POST", "/v1/subscribers/ada/inbox-tokens/revoke", f.key, nil, http.StatusNoContent)
	for name, tok := range map[string]string{"revoked": revoked, "malformed": "hit_nonsense", "missing": ""} {
		r := f.h.Do("GET", "/v1/inbox/counts", tok, nil)
		expectCode(t, r, http.StatusUnauthorized, "unauthorized")
		var body struct{ Error struct{ Message string } }
		r.JSON(t, &body)
		if !strings.Contains(body.Error.Message, "inbox token") || strings.Contains(body.Error.Message, "API key") {
			t.Errorf("a %s inbox token: %q, want words of an inbox token", name, body.Error.Message)
		}
	}
}
