package email_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/emersion/go-message"
	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/delivery/email"
)

// TestComposeListUnsubscribe: a ListUnsubscribe URL gives the two RFC 8058
// headers, a long URL stays on one line under the RFC 5322 bound, none
// gives neither, and a URL that is not http(s) or holds a line break is
// refused.
func TestComposeListUnsubscribe(t *testing.T) {
	u := "https://herald.example/u/" + strings.Repeat("AbC.d-_", 60)
	m := base(wire.EmailContent{Subject: "Digest", Body: "hi"})
	m.ListUnsubscribe = u
	data, err := email.Compose(m)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(data), "\r\n") {
		if len(line) > 998 {
			t.Fatalf("line over 998 characters: %q", line)
		}
	}
	e, err := message.Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Header.Get("List-Unsubscribe"); got != "<"+u+">" {
		t.Errorf("List-Unsubscribe %q", got)
	}
	if got := e.Header.Get("List-Unsubscribe-Post"); got != "List-Unsubscribe=One-Click" {
		t.Errorf("List-Unsubscribe-Post %q", got)
	}

	m.ListUnsubscribe = ""
	h, _, _ := compose(t, m)
	if h.Has("List-Unsubscribe") || h.Has("List-Unsubscribe-Post") {
		t.Error("headers without a URL")
	}
	for _, bad := range []string{"mailto:x@example.com", "https://h.example/u/a\r\nBcc: x@example.com", "https://h.example/u/a>b"} {
		m.ListUnsubscribe = bad
		if _, err := email.Compose(m); !errors.Is(err, email.ErrInvalid) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
