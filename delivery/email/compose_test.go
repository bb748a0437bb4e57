package email_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-message"
	gomail "github.com/emersion/go-message/mail"
	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/delivery/email"
)

var date = time.Date(2026, 11, 24, 1, 2, 3, 0, time.FixedZone("", 3600))

func base(c wire.EmailContent) email.Message {
	return email.Message{
		FromEmail: "noreply@herald.test", FromName: "Herald Café", To: "ada@example.com",
		MessageID: "abc.herald@herald.test", Date: date, Content: c,
	}
}

// compose composes m, checks what every message must satisfy (CRLF only,
// short lines, a final line break, the same bytes twice) and parses it
// back with go-message's reader.
func compose(t *testing.T, m email.Message) (*gomail.Header, *message.Entity, []byte) {
	t.Helper()
	data, err := email.Compose(m)
	if err != nil {
		t.Fatal(err)
	}
	again, err := email.Compose(m)
	if err != nil || !bytes.Equal(data, again) {
		t.Errorf("composing the same message twice gave different bytes (%v)", err)
	}
	if i := bytes.IndexByte(bytes.ReplaceAll(data, []byte("\r\n"), nil), '\n'); i >= 0 {
		t.Errorf("bare LF in the message: %q", data)
	}
	if !bytes.HasSuffix(data, []byte("\r\n")) {
		t.Errorf("message does not end with CRLF")
	}
	for line := range strings.SplitSeq(string(data), "\r\n") {
		if len(line) > 78 {
			t.Errorf("line longer than 78 characters: %q", line)
		}
	}
	e, err := message.Read(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("go-message cannot read the message: %v\n%s", err, data)
	}
	return &gomail.Header{Header: e.Header}, e, data
}

func body(t *testing.T, e *message.Entity) string {
	t.Helper()
	b, err := io.ReadAll(e.Body) // the reader undoes quoted-printable
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestComposeBodyAloneKeepsTheRule(t *testing.T) {
	text := "Hello Ada,\n\nünïcödé text, a line of = signs ===\n.a dot line\n" + strings.Repeat("long ", 40) + "\nend"
	m := base(wire.EmailContent{Subject: "Grüße ✓ — your weekly digest", Body: text})
	h, e, data := compose(t, m)

	var names []string
	for f := h.Fields(); f.Next(); {
		names = append(names, f.Key())
	}
	if got := strings.Join(names, " "); got != "Date Message-Id From To Subject Mime-Version Content-Type Content-Transfer-Encoding" {
		t.Errorf("header fields in order: %s", got)
	}
	if !strings.Contains(string(data), "=?utf-8?q?") {
		t.Errorf("no RFC 2047 encoded word in %s", data)
	}
	from, err := h.AddressList("From")
	if err != nil || len(from) != 1 || from[0].Name != "Herald Café" || from[0].Address != "noreply@herald.test" {
		t.Errorf("From = %q parses to %v (%v)", h.Get("From"), from, err)
	}
	if got := h.Get("To"); got != "<ada@example.com>" {
		t.Errorf("To = %q", got)
	}
	if s, err := h.Subject(); err != nil || s != m.Content.Subject {
		t.Errorf("Subject = %q (%v), want %q", s, err, m.Content.Subject)
	}
	if d, err := h.Date(); err != nil || !d.Equal(date) {
		t.Errorf("Date = %q (%v)", h.Get("Date"), err)
	}
	if id, err := h.MessageID(); err != nil || id != m.MessageID {
		t.Errorf("Message-Id = %q (%v)", id, err)
	}
	if h.Has("Reply-To") {
		t.Errorf("Reply-To without a replyTo: %q", h.Get("Reply-To"))
	}
	for name, want := range map[string]string{
		"MIME-Version":              "1.0",
		"Content-Type":              "text/plain; charset=utf-8",
		"Content-Transfer-Encoding": "quoted-printable",
	} {
		if got := h.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if got, want := body(t, e), strings.ReplaceAll(text, "\n", "\r\n")+"\r\n"; got != want {
		t.Errorf("body = %q, want %q", got, want)
	}

	m.Content.Body = "  <p>Hi</p>"
	if h, _, _ := compose(t, m); h.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Errorf("Content-Type of an HTML body = %q", h.Get("Content-Type"))
	}
}

func TestComposeAlternative(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content wire.EmailContent
	}{
		{"html and text", wire.EmailContent{HTML: "<p>Hallo <b>Ada</b> – ✓</p>", Text: "Hallo Ada – ✓"}},
		{"body fills the text", wire.EmailContent{HTML: "<p>Hallo <b>Ada</b> – ✓</p>", Body: "Hallo Ada – ✓"}},
		{"body fills the html", wire.EmailContent{Body: "<p>Hallo <b>Ada</b> – ✓</p>", Text: "Hallo Ada – ✓"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.content.Subject = "Hi"
			h, e, _ := compose(t, base(tc.content))
			if typ, params, err := h.ContentType(); err != nil || typ != "multipart/alternative" || !strings.Contains(params["boundary"], "=_") {
				t.Fatalf("Content-Type = %q (%v)", h.Get("Content-Type"), err)
			}
			mr := e.MultipartReader()
			if mr == nil {
				t.Fatal("not multipart")
			}
			var got []string
			for {
				p, err := mr.NextPart()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				typ, params, _ := p.Header.ContentType()
				if params["charset"] != "utf-8" || p.Header.Get("Content-Transfer-Encoding") != "quoted-printable" {
					t.Errorf("part header %v", p.Header.Map())
				}
				got = append(got, typ+": "+body(t, p))
			}
			want := []string{"text/plain: Hallo Ada – ✓\r\n", "text/html: <p>Hallo <b>Ada</b> – ✓</p>\r\n"}
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("parts = %q, want %q", got, want)
			}
		})
	}
}

func TestComposeSinglePartOfEachKind(t *testing.T) {
	for _, tc := range []struct {
		content wire.EmailContent
		typ     string
	}{
		{wire.EmailContent{HTML: "Hi <b>Ada</b>"}, "text/html"},
		{wire.EmailContent{Text: "<not html>"}, "text/plain"},
		{wire.EmailContent{}, "text/plain"},
	} {
		h, e, _ := compose(t, base(tc.content))
		if got := h.Get("Content-Type"); got != tc.typ+"; charset=utf-8" {
			t.Errorf("%+v: Content-Type = %q", tc.content, got)
		}
		if got, want := body(t, e), tc.content.HTML+tc.content.Text; strings.TrimSuffix(got, "\r\n") != want {
			t.Errorf("%+v: body = %q", tc.content, got)
		}
	}
}

func TestComposeHeaders(t *testing.T) {
	m := base(wire.EmailContent{Subject: strings.Repeat("a fairly long subject ", 12) + "\r\nBcc: eve@example.com", Body: "x", ReplyTo: "Équipe Support <help@example.com>"})
	m.FromName = ""
	h, _, _ := compose(t, m)
	if got := h.Get("From"); got != "<noreply@herald.test>" {
		t.Errorf("From without a name = %q", got)
	}
	if h.Has("Bcc") {
		t.Errorf("a CRLF in the subject injected Bcc: %q", h.Get("Bcc"))
	}
	if s, _ := h.Subject(); s != strings.Repeat("a fairly long subject ", 12)+" Bcc: eve@example.com" {
		t.Errorf("Subject = %q", s)
	}
	rt, err := h.AddressList("Reply-To")
	if err != nil || len(rt) != 1 || rt[0].Name != "Équipe Support" || rt[0].Address != "help@example.com" {
		t.Errorf("Reply-To = %q parses to %v (%v)", h.Get("Reply-To"), rt, err)
	}
	if !strings.HasPrefix(h.Get("Reply-To"), "=?utf-8?q?") {
		t.Errorf("Reply-To name not RFC 2047-encoded: %q", h.Get("Reply-To"))
	}
}

func TestComposeRefusesMalformedMessages(t *testing.T) {
	for name, edit := range map[string]func(*email.Message){
		"replyTo with a line break": func(m *email.Message) { m.Content.ReplyTo = "a@example.com\r\nBcc: eve@example.com" },
		"replyTo not an address":    func(m *email.Message) { m.Content.ReplyTo = "nobody" },
		"no to":                     func(m *email.Message) { m.To = "" },
		"to with a space":           func(m *email.Message) { m.To = "ada @example.com" },
		"from with a line break":    func(m *email.Message) { m.FromEmail = "a@b\r\nBcc: c@d" },
		"fromName with a CR":        func(m *email.Message) { m.FromName = "x\ry" },
		"messageID with brackets":   func(m *email.Message) { m.MessageID = "<a@b>" },
		"no messageID":              func(m *email.Message) { m.MessageID = "" },
		"no date":                   func(m *email.Message) { m.Date = time.Time{} },
	} {
		m := base(wire.EmailContent{Subject: "x", Body: "x"})
		edit(&m)
		if _, err := email.Compose(m); !errors.Is(err, email.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
}

func TestMessageID(t *testing.T) {
	a := email.MessageID("t1", "run:step", "noreply@herald.test")
	if a != email.MessageID("t1", "run:step", "x@herald.test") || !strings.HasSuffix(a, ".herald@herald.test") || len(a) != 26+len(".herald@herald.test") {
		t.Errorf("MessageID = %q", a)
	}
	if a == email.MessageID("t2", "run:step", "noreply@herald.test") {
		t.Error("two tenants share a Message-ID")
	}
	if got := email.MessageID("t1", "run:step", "noreply@[127.0.0.1]"); !strings.HasSuffix(got, ".herald@herald.invalid") {
		t.Errorf("MessageID for a literal domain = %q", got)
	}
}
