package email

import (
	"bytes"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"net/mail"
	"strings"
	"time"
	"unicode"

	"github.com/emersion/go-message"
	gomail "github.com/emersion/go-message/mail"
	"github.com/heraldhq/herald/bridge/wire"
)

// Message is what Compose renders: the sender, the one recipient, the
// message's identity and the send step's content.
type Message struct {
	// FromEmail is the sender's bare address. Required.
	FromEmail string
	// FromName is the sender's display name; empty for none.
	FromName string
	// To is the recipient's bare address. Required.
	To string
	// MessageID is the Message-Id header's value without angle brackets
	// ("left@right"). Required: every try of one send carries the same id
	// (see MessageID), so that mail clients drop a duplicate.
	MessageID string
	// Date is the Date header's value. Required.
	Date time.Time
	// Content is the send step's email content. Its ReplyTo, when set, is
	// an address with an optional name ("Support <help@example.com>").
	Content wire.EmailContent
	// ListUnsubscribe, when set, is an https or http URL sent as
	// List-Unsubscribe: <URL> with List-Unsubscribe-Post:
	// List-Unsubscribe=One-Click (RFC 8058). Empty: neither header.
	ListUnsubscribe string
}

// Compose renders m as an RFC 5322 message with CRLF line endings (see the
// package doc). The same m always gives the same bytes. It fails, with an
// error wrapping ErrInvalid, on an address or Message-ID that is missing or
// not well formed.
func Compose(m Message) ([]byte, error) {
	if err := m.check(); err != nil {
		return nil, err
	}
	var replyTo *mail.Address
	if m.Content.ReplyTo != "" {
		a, err := mail.ParseAddress(m.Content.ReplyTo)
		if err != nil {
			return nil, fmt.Errorf("%w: replyTo %.80q: %w", ErrInvalid, m.Content.ReplyTo, err)
		}
		replyTo = a
	}
	html, text := parts(m.Content)

	// go-message writes the fields last set first: they are set here in
	// the reverse of the documented order.
	var h gomail.Header
	switch {
	case html != "" && text != "":
		h.SetContentType("multipart/alternative", map[string]string{"boundary": boundary(m.MessageID)})
	case html != "":
		setTextPart(&h.Header, "text/html")
	default:
		setTextPart(&h.Header, "text/plain")
	}
	h.Set("MIME-Version", "1.0")
	if m.ListUnsubscribe != "" {
		h.Set("List-Unsubscribe-Post", "List-Unsubscribe=One-Click")
		h.Set("List-Unsubscribe", "<"+m.ListUnsubscribe+">")
	}
	h.SetSubject(strings.Join(strings.FieldsFunc(m.Content.Subject, isCRLF), " "))
	if replyTo != nil {
		h.SetAddressList("Reply-To", []*gomail.Address{replyTo})
	}
	h.SetAddressList("To", []*gomail.Address{{Address: m.To}})
	h.SetAddressList("From", []*gomail.Address{{Name: m.FromName, Address: m.FromEmail}})
	h.SetMessageID(m.MessageID)
	h.SetDate(m.Date)

	var b bytes.Buffer
	b.Grow(1024 + (len(html)+len(text))*3/2)
	w, err := message.CreateWriter(&b, h.Header)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if html != "" && text != "" {
		for _, p := range []struct{ typ, body string }{{"text/plain", text}, {"text/html", html}} {
			var ph message.Header
			setTextPart(&ph, p.typ)
			pw, err := w.CreatePart(ph)
			if err != nil {
				return nil, err
			}
			writeBody(pw, p.body)
			if err := pw.Close(); err != nil {
				return nil, err
			}
		}
	} else {
		writeBody(w, html+text)
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	if !bytes.HasSuffix(b.Bytes(), []byte("\r\n")) {
		b.WriteString("\r\n") // a message ends with a line break
	}
	return b.Bytes(), nil
}

// Bodies returns the HTML and text bodies of c, either possibly empty, as
// Compose sends them: an email provider whose API takes the bodies rather
// than a composed message sends these.
func Bodies(c wire.EmailContent) (html, text string) { return parts(c) }

// parts returns the HTML and text bodies of c (see the package doc).
func parts(c wire.EmailContent) (html, text string) {
	html, text = c.HTML, c.Text
	if c.Body == "" {
		return html, text
	}
	if LooksLikeHTML(c.Body) {
		if html == "" {
			html = c.Body
		}
	} else if text == "" {
		text = c.Body
	}
	return html, text
}

// LooksLikeHTML reports whether body is sent as HTML when it comes alone:
// it starts with '<' after leading white space.
func LooksLikeHTML(body string) bool {
	return strings.HasPrefix(strings.TrimLeftFunc(body, unicode.IsSpace), "<")
}

func setTextPart(h *message.Header, typ string) {
	h.Set("Content-Transfer-Encoding", "quoted-printable")
	h.SetContentType(typ, map[string]string{"charset": "utf-8"})
}

// writeBody writes body to the part's encoder with a final line break. The
// quoted-printable writer turns LF and CRLF alike into CRLF. Writes end in
// a bytes.Buffer, which cannot fail.
func writeBody(w *message.Writer, body string) {
	w.Write([]byte(body))
	if body != "" && !strings.HasSuffix(body, "\n") {
		w.Write([]byte("\n"))
	}
}

// boundary derives the multipart boundary from the Message-ID. "=_" never
// occurs in quoted-printable text, so no part can contain the boundary.
func boundary(messageID string) string {
	sum := sha256.Sum256([]byte(messageID))
	return "=_herald_" + hex.EncodeToString(sum[:12])
}

// check reports the missing or malformed addresses and Message-ID of m.
func (m Message) check() error {
	for _, f := range []struct{ name, v string }{{"from", m.FromEmail}, {"to", m.To}, {"messageID", m.MessageID}} {
		left, right, ok := strings.Cut(f.v, "@")
		if !ok || left == "" || right == "" || strings.ContainsFunc(f.v, isSpaceOrSpecial) {
			return fmt.Errorf("%w: %s %.80q is not a bare left@right", ErrInvalid, f.name, f.v)
		}
	}
	if m.ListUnsubscribe != "" && (!strings.HasPrefix(m.ListUnsubscribe, "https://") && !strings.HasPrefix(m.ListUnsubscribe, "http://") ||
		strings.ContainsFunc(m.ListUnsubscribe, isSpaceOrSpecial)) {
		return fmt.Errorf("%w: listUnsubscribe %.80q is not an http(s) URL", ErrInvalid, m.ListUnsubscribe)
	}
	if strings.ContainsFunc(m.FromName, isCRLF) {
		return fmt.Errorf("%w: fromName contains a line break", ErrInvalid)
	}
	if m.Date.IsZero() {
		return fmt.Errorf("%w: no date", ErrInvalid)
	}
	return nil
}

func isCRLF(r rune) bool { return r == '\r' || r == '\n' }

func isSpaceOrSpecial(r rune) bool {
	return unicode.IsSpace(r) || unicode.IsControl(r) || r == '<' || r == '>' || r == ','
}

// MessageID derives the Message-ID of every try of one send from the
// tenant and the idempotency key: "<26 base32 characters>.herald@<the
// sender's domain>", or @herald.invalid when that domain is not a plain
// host name. Every provider of a send derives the same id.
func MessageID(tenant, idempotencyKey, fromEmail string) string {
	sum := sha256.Sum256([]byte(tenant + "\x00" + idempotencyKey))
	local := strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:16]))
	domain := fromEmail[strings.LastIndexByte(fromEmail, '@')+1:]
	if !plainHost(domain) {
		domain = "herald.invalid"
	}
	return local + ".herald@" + domain
}

// plainHost reports whether s is labels of letters, digits and hyphens
// joined by dots.
func plainHost(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || strings.IndexFunc(label, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-')
		}) >= 0 {
			return false
		}
	}
	return true
}
