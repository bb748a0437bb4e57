package devmail

import (
	"bytes"
	"encoding/base64"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"slices"
	"strings"
	"time"
)

// maxMultipartDepth bounds how deep parseMessage looks into nested parts.
const maxMultipartDepth = 5

// Message is one caught message.
type Message struct {
	// ID identifies the message within its Inbox.
	ID string `json:"id"`
	// From is the envelope sender (MAIL FROM).
	From string `json:"from"`
	// To are the envelope recipients (RCPT TO).
	To []string `json:"to"`
	// Subject is the Subject header, RFC 2047-decoded.
	Subject string `json:"subject"`
	// Date is the Date header; zero (and omitted in JSON) when absent or
	// unparsable.
	Date time.Time `json:"date,omitzero"`
	// MessageID is the Message-ID header without angle brackets.
	MessageID string `json:"messageId"`
	// Headers are all header fields, keys in canonical form ("Message-Id"),
	// values RFC 2047-decoded.
	Headers map[string][]string `json:"headers"`
	// ContentType is the media type of Body ("text/plain", "text/html").
	ContentType string `json:"contentType"`
	// Body is the decoded text: see the package doc for which part of a
	// multipart message it is.
	Body string `json:"body"`
	// Raw is the message as received.
	Raw string `json:"raw"`
	// ReceivedAt is when the inbox stored the message.
	ReceivedAt time.Time `json:"receivedAt"`
}

func (m Message) clone() Message {
	m.To = slices.Clone(m.To)
	if m.Headers != nil {
		h := make(map[string][]string, len(m.Headers))
		for k, v := range m.Headers {
			h[k] = slices.Clone(v)
		}
		m.Headers = h
	}
	return m
}

// parseMessage reads raw, received from from for to, into a Message. A
// message that does not parse is kept with its raw text as the body.
func parseMessage(from string, to []string, raw []byte) Message {
	m := Message{From: from, To: to, Raw: string(raw), ContentType: "text/plain", Body: string(raw)}
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return m
	}
	var dec mime.WordDecoder
	m.Headers = make(map[string][]string, len(msg.Header))
	for k, vs := range msg.Header {
		for _, v := range vs {
			if d, err := dec.DecodeHeader(v); err == nil {
				v = d
			}
			m.Headers[k] = append(m.Headers[k], v)
		}
	}
	m.Subject = textproto.MIMEHeader(m.Headers).Get("Subject")
	if d, err := msg.Header.Date(); err == nil {
		m.Date = d
	}
	m.MessageID = strings.Trim(strings.TrimSpace(msg.Header.Get("Message-Id")), "<>")
	if ct, body, ok := readPart(textproto.MIMEHeader(msg.Header), msg.Body, 0); ok {
		m.ContentType, m.Body = ct, body
	}
	return m
}

// readPart decodes one entity. For a multipart entity it returns the first
// text/plain part, else the first text/html part, else nothing (ok false).
func readPart(h textproto.MIMEHeader, r io.Reader, depth int) (contentType, body string, ok bool) {
	mediaType, params, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil {
		mediaType = "text/plain"
	}
	switch strings.ToLower(strings.TrimSpace(h.Get("Content-Transfer-Encoding"))) {
	case "quoted-printable":
		r = quotedprintable.NewReader(r)
	case "base64":
		r = base64.NewDecoder(base64.StdEncoding, r)
	}

	if !strings.HasPrefix(mediaType, "multipart/") {
		data, err := io.ReadAll(r)
		if err != nil && len(data) == 0 {
			return "", "", false
		}
		return mediaType, string(data), true
	}
	if params["boundary"] == "" || depth >= maxMultipartDepth {
		return "", "", false
	}
	mr := multipart.NewReader(r, params["boundary"])
	var htmlBody string
	var haveHTML bool
	for {
		p, err := mr.NextRawPart()
		if err != nil {
			break
		}
		ct, b, ok := readPart(p.Header, p, depth+1)
		switch {
		case !ok:
		case ct == "text/plain":
			return ct, b, true
		case ct == "text/html" && !haveHTML:
			htmlBody, haveHTML = b, true
		}
	}
	return "text/html", htmlBody, haveHTML
}
