package smtp_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"testing"

	"github.com/heraldhq/herald/delivery/smtp"
	"github.com/heraldhq/herald/internal/testsmtp"
)

// TestSendAlternative parses the message the server received with the
// standard library's MIME reader, not the writer's own.
func TestSendAlternative(t *testing.T) {
	ts := startServer(t, testsmtp.Options{})
	msg := smtp.Message{
		To: "ada@example.com", Subject: "Your digest",
		HTML: "<p>Hallo <b>Ada</b> ✓</p>", Text: "Hallo Ada ✓\nline two",
		ReplyTo: "Support Équipe <help@herald.test>",
	}
	res := send(t, newSender(t, ts.opts), ts.cfg, msg)

	m, err := mail.ReadMessage(bytes.NewReader(ts.Messages()[0].Data))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Header.Get("Message-ID"); got != "<"+res.MessageID+">" {
		t.Errorf("Message-ID = %q, want <%s>", got, res.MessageID)
	}
	rt, err := mail.ParseAddress(m.Header.Get("Reply-To"))
	if err != nil || rt.Name != "Support Équipe" || rt.Address != "help@herald.test" {
		t.Errorf("Reply-To = %q parses to %v (%v)", m.Header.Get("Reply-To"), rt, err)
	}
	typ, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if err != nil || typ != "multipart/alternative" {
		t.Fatalf("Content-Type = %q (%v)", m.Header.Get("Content-Type"), err)
	}
	mr := multipart.NewReader(m.Body, params["boundary"])
	var got []string
	for {
		p, err := mr.NextPart() // undoes quoted-printable
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(p)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p.Header.Get("Content-Type")+": "+string(b))
	}
	want := []string{
		"text/plain; charset=utf-8: Hallo Ada ✓\r\nline two\r\n",
		"text/html; charset=utf-8: <p>Hallo <b>Ada</b> ✓</p>\r\n",
	}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("parts = %q, want %q", got, want)
	}
}

func TestSendRefusesABadReplyTo(t *testing.T) {
	ts := startServer(t, testsmtp.Options{})
	msg := hello
	msg.ReplyTo = "help@herald.test\r\nBcc: eve@example.com"
	if _, err := newSender(t, ts.opts).Send(context.Background(), ts.cfg, msg); !errors.Is(err, smtp.ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
	if n := len(ts.Messages()); n != 0 {
		t.Fatalf("server received %d messages", n)
	}
}
