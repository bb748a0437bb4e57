package links_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/heraldhq/herald/preferences/links"
	"github.com/heraldhq/herald/secrets"
)

func keyring(t *testing.T, current byte, previous ...byte) *secrets.Keyring {
	t.Helper()
	var prev [][]byte
	for _, b := range previous {
		prev = append(prev, bytes.Repeat([]byte{b}, secrets.KeySize))
	}
	k, err := secrets.NewKeyring(bytes.Repeat([]byte{current}, secrets.KeySize), prev...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func token(t *testing.T, url, prefix string) string {
	t.Helper()
	tok, ok := strings.CutPrefix(url, prefix)
	if !ok {
		t.Fatalf("%s does not start with %s", url, prefix)
	}
	return tok
}

// TestTokens: a token opens to its claims for its own purpose only; any
// byte changed, a token of another key, or an oversized one is ErrInvalid;
// tokens are opaque; they open after a rotation while the previous key is
// kept, and not once it is dropped.
func TestTokens(t *testing.T) {
	m := links.New(keyring(t, 1), "https://herald.example/")
	c := links.Claims{Tenant: "ten_abc", Subscriber: "ann@example.com", Workflow: "digest"}
	u, err := m.URL(links.Unsubscribe, c)
	if err != nil {
		t.Fatal(err)
	}
	tok := token(t, u, "https://herald.example/u/")
	if strings.Contains(tok, "ann") || strings.Contains(tok, "ten_abc") || strings.Contains(tok, "digest") || strings.ContainsAny(tok, "/?#%+ ") {
		t.Fatalf("token %s is not opaque and URL-safe", tok)
	}
	if got, err := m.Open(links.Unsubscribe, tok); err != nil || got != c {
		t.Fatalf("open: %+v %v", got, err)
	}
	if _, err := m.Open(links.Preferences, tok); !errors.Is(err, links.ErrInvalid) {
		t.Fatalf("an unsubscribe token opened the preference page: %v", err)
	}
	for i := range tok {
		b := []byte(tok)
		b[i] ^= 1
		if _, err := m.Open(links.Unsubscribe, string(b)); !errors.Is(err, links.ErrInvalid) {
			t.Fatalf("byte %d changed: %v", i, err)
		}
	}
	if _, err := m.Open(links.Unsubscribe, strings.Repeat("a", links.MaxTokenChars+1)); !errors.Is(err, links.ErrInvalid) {
		t.Fatal("an oversized token")
	}
	if _, err := links.New(keyring(t, 2), "").Open(links.Unsubscribe, tok); !errors.Is(err, links.ErrInvalid) {
		t.Fatal("another key opened the token")
	}
	rotated := links.New(keyring(t, 2, 1), "")
	if got, err := rotated.Open(links.Unsubscribe, tok); err != nil || got != c {
		t.Fatalf("after a rotation keeping the old key: %+v %v", got, err)
	}
	if rotated.Enabled() || !m.Enabled() {
		t.Fatal("Enabled follows the public URL")
	}

	l, err := m.For(c, false)
	if err != nil || l.Unsubscribe == nil || !strings.HasPrefix(*l.Unsubscribe, "https://herald.example/u/") ||
		!strings.HasPrefix(l.Preferences, "https://herald.example/p/") {
		t.Fatalf("links %+v %v", l, err)
	}
	if got, err := m.Open(links.Preferences, token(t, l.Preferences, "https://herald.example/p/")); err != nil || got != c {
		t.Fatalf("preference token: %+v %v", got, err)
	}
	if l, err := m.For(c, true); err != nil || l.Unsubscribe != nil {
		t.Fatalf("critical: %+v %v", l, err)
	}
}
