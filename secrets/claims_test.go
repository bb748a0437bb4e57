package secrets

import (
	"errors"
	"strings"
	"testing"
)

type linkClaims struct {
	Tenant     string `json:"t"`
	Subscriber string `json:"s"`
}

func TestClaimsRoundTripAndRefusals(t *testing.T) {
	old := testKey(1)
	cur := testKey(2)
	oldRing, err := NewKeyring(old)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := NewKeyring(cur, old)
	if err != nil {
		t.Fatal(err)
	}
	want := linkClaims{Tenant: "ten_1", Subscriber: "user-42"}
	tok, err := ring.SealClaims("u_", "unsubscribe", want)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok, "u_") || strings.ContainsAny(tok, ":/?#%+ ") || strings.Contains(tok, "user-42") {
		t.Fatalf("token %q is not an opaque URL-safe value", tok)
	}
	var got linkClaims
	if err := ring.OpenClaims("u_", "unsubscribe", tok, &got); err != nil || got != want {
		t.Fatalf("open: %+v %v", got, err)
	}

	// A token sealed before a rotation still opens after it.
	before, err := oldRing.SealClaims("u_", "unsubscribe", want)
	if err != nil {
		t.Fatal(err)
	}
	got = linkClaims{}
	if err := ring.OpenClaims("u_", "unsubscribe", before, &got); err != nil || got != want {
		t.Fatalf("open after rotation: %+v %v", got, err)
	}

	// Every one-byte change is refused.
	for i := range tok {
		for _, c := range []byte{'A', '.', '_', '0'} {
			if tok[i] == c {
				continue
			}
			bad := tok[:i] + string(c) + tok[i+1:]
			var into linkClaims
			err := ring.OpenClaims("u_", "unsubscribe", bad, &into)
			if err == nil {
				t.Fatalf("changed byte %d to %q: accepted (%+v)", i, c, into)
			}
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrDecrypt) && !errors.Is(err, ErrUnknownKey) {
				t.Fatalf("changed byte %d: unexpected error %v", i, err)
			}
		}
	}
	// Another purpose or prefix, a truncation, a key the ring lacks.
	otherRing, err := NewKeyring(testKey(3))
	if err != nil {
		t.Fatal(err)
	}
	for name, open := range map[string]func() error{
		"purpose":   func() error { return ring.OpenClaims("u_", "inbox", tok, &got) },
		"prefix":    func() error { return ring.OpenClaims("p_", "unsubscribe", tok, &got) },
		"truncated": func() error { return ring.OpenClaims("u_", "unsubscribe", tok[:len(tok)-4], &got) },
		"colon":     func() error { return ring.OpenClaims("u_", "unsubscribe", strings.Replace(tok, ".", ":", 1), &got) },
		"other key": func() error { return otherRing.OpenClaims("u_", "unsubscribe", tok, &got) },
	} {
		if err := open(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
