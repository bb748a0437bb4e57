package smtp_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/mail"
	"strings"
	"testing"

	"github.com/heraldhq/herald/delivery/email"
	"github.com/heraldhq/herald/delivery/provider"
	"github.com/heraldhq/herald/delivery/smtp"
	"github.com/heraldhq/herald/internal/testsmtp"
)

func TestParseConfig(t *testing.T) {
	c, err := smtp.ParseConfig(map[string]any{"host": "smtp.example.com", "port": 587.0, "secure": true, "username": "u",
		"password": "p", "fromEmail": "a@example.com", "fromName": "A"})
	want := smtp.Config{Host: "smtp.example.com", Port: 587, Secure: true, Username: "u", Password: "p",
		FromEmail: "a@example.com", FromName: "A"}
	if err != nil || c != want {
		t.Fatalf("ParseConfig = %v, %v", c, err)
	}
	if _, err := smtp.ParseConfig(map[string]any{"host": "h", "port": 25.5, "fromEmail": "a@example.com"}); !errors.Is(err, smtp.ErrInvalid) {
		t.Fatalf("a fractional port: %v", err)
	}
	if _, err := smtp.ParseConfig(map[string]any{"password": "p"}); err == nil || strings.Contains(err.Error(), `"p"`) {
		t.Fatalf("an empty config: %v", err)
	}
}

// TestSendCarriesTheWholeContent: the provider hands html, text and
// replyTo to the composer: one multipart/alternative message with its
// Reply-To, and the Message-ID derived from the send's key, returned.
func TestSendCarriesTheWholeContent(t *testing.T) {
	m := testsmtp.Start(t, testsmtp.Options{})
	p, err := smtp.New(map[string]any{"host": "127.0.0.1", "port": float64(m.Port), "fromEmail": "noreply@herald.test"},
		provider.Deps{Dial: (&net.Dialer{}).DialContext})
	if err != nil {
		t.Fatal(err)
	}
	defer p.(io.Closer).Close()
	id, err := p.Send(context.Background(), provider.Message{Tenant: "ten_1", IdempotencyKey: "run_1:mail", To: "ada@example.com",
		Content: []byte(`{"subject":"Hi","html":"<p>Hi</p>","text":"Hi","replyTo":"help@herald.test"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if want := email.MessageID("ten_1", "run_1:mail", "noreply@herald.test"); id != want {
		t.Errorf("id %q, want %q", id, want)
	}
	got := m.Messages()
	if len(got) != 1 {
		t.Fatalf("%d messages", len(got))
	}
	msg, err := mail.ReadMessage(bytes.NewReader(got[0].Data))
	if err != nil {
		t.Fatal(err)
	}
	if ct := msg.Header.Get("Content-Type"); !strings.HasPrefix(ct, "multipart/alternative;") {
		t.Errorf("Content-Type %q", ct)
	}
	if rt := msg.Header.Get("Reply-To"); rt != "<help@herald.test>" && rt != "help@herald.test" {
		t.Errorf("Reply-To %q", rt)
	}
	if body, _ := io.ReadAll(msg.Body); !bytes.Contains(body, []byte("text/plain")) || !bytes.Contains(body, []byte("<p>Hi</p>")) {
		t.Errorf("body %s", body)
	}
}
