package smtp

import (
	"bytes"
	"crypto/rand"
	"mime"
	"mime/quotedprintable"
	"net/mail"
	"strings"
	"time"
	"unicode"
)

// maxHeaderLine is where compose folds a header line (RFC 5322 2.1.1
// recommends 78 characters).
const maxHeaderLine = 78

// compose renders msg as an RFC 5322 message with CRLF line endings, dated
// now. It returns the message and its Message-ID without angle brackets.
// cfg and msg must have passed Validate.
func compose(cfg Config, msg Message, now time.Time) (data []byte, messageID string) {
	messageID = msg.MessageID
	if messageID == "" {
		domain := cfg.FromEmail[strings.LastIndexByte(cfg.FromEmail, '@')+1:]
		messageID = strings.ToLower(rand.Text()) + "@" + domain
	}

	contentType := "text/plain; charset=utf-8"
	if strings.HasPrefix(strings.TrimLeftFunc(msg.Body, unicode.IsSpace), "<") {
		contentType = "text/html; charset=utf-8"
	}
	subject := strings.Join(strings.FieldsFunc(msg.Subject, isCRLF), " ")

	var b bytes.Buffer
	b.Grow(512 + len(msg.Body)*3/2)
	writeHeader(&b, "Date", now.Format(time.RFC1123Z))
	writeHeader(&b, "Message-ID", "<"+messageID+">")
	writeHeader(&b, "From", (&mail.Address{Name: cfg.FromName, Address: cfg.FromEmail}).String())
	writeHeader(&b, "To", (&mail.Address{Address: msg.To}).String())
	writeHeader(&b, "Subject", mime.QEncoding.Encode("utf-8", subject))
	writeHeader(&b, "MIME-Version", "1.0")
	writeHeader(&b, "Content-Type", contentType)
	writeHeader(&b, "Content-Transfer-Encoding", "quoted-printable")
	b.WriteString("\r\n")

	// The quoted-printable writer turns LF and CRLF alike into CRLF and keeps
	// lines within 76 characters. Writes to a bytes.Buffer cannot fail.
	qp := quotedprintable.NewWriter(&b)
	qp.Write([]byte(msg.Body))
	qp.Close()
	if !bytes.HasSuffix(b.Bytes(), []byte("\r\n")) {
		b.WriteString("\r\n") // a message ends with a line break
	}
	return b.Bytes(), messageID
}

func isCRLF(r rune) bool { return r == '\r' || r == '\n' }

// writeHeader writes "name: value" CRLF, folding at spaces so that lines stay
// within maxHeaderLine where the words allow it. Unfolding (removing each
// CRLF) gives the value back unchanged.
func writeHeader(b *bytes.Buffer, name, value string) {
	b.WriteString(name)
	b.WriteByte(':')
	line := len(name) + 1
	for i, word := range strings.Split(value, " ") {
		if i > 0 && line+1+len(word) > maxHeaderLine {
			b.WriteString("\r\n")
			line = 0
		}
		b.WriteByte(' ')
		b.WriteString(word)
		line += 1 + len(word)
	}
	b.WriteString("\r\n")
}
