package smtp

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/mail"
	"strconv"
	"strings"
)

// Config is the decrypted configuration of one "email-smtp" channel.
//
// A Config holds a password in clear. Its String, GoString and LogValue
// methods redact it, so printing or logging a Config does not leak it.
type Config struct {
	// Host is the SMTP server's name or IP address; it is also the name its
	// TLS certificate must carry. Required.
	Host string
	// Port is the server's TCP port, 1-65535. Required.
	Port int
	// Secure selects implicit TLS. When false, STARTTLS is used if the server
	// offers it, plain SMTP otherwise.
	Secure bool
	// Username, when set, makes the session authenticate (PLAIN, or LOGIN
	// when the server offers only LOGIN). Empty means no AUTH.
	Username string
	// Password goes with Username.
	Password string
	// AllowInsecureAuth lets the session authenticate over a connection
	// without TLS (a server offering no STARTTLS, Secure false). False: such
	// a session fails with ErrRejected before AUTH, unless the server is on
	// a loopback address; the password never crosses a network in clear.
	AllowInsecureAuth bool
	// FromEmail is the envelope sender and the address in the From header.
	// Required: a bare address such as "noreply@example.com".
	FromEmail string
	// FromName is the display name in the From header; empty means none.
	FromName string
}

// String formats c for people, with the password redacted.
func (c Config) String() string {
	return fmt.Sprintf("{Host:%s Port:%d Secure:%t Username:%s Password:%s AllowInsecureAuth:%t FromEmail:%s FromName:%s}",
		c.Host, c.Port, c.Secure, c.Username, redactedIfSet(c.Password), c.AllowInsecureAuth, c.FromEmail, c.FromName)
}

// GoString is String for %#v.
func (c Config) GoString() string { return "smtp.Config" + c.String() }

// LogValue implements slog.LogValuer, with the password redacted.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("host", c.Host),
		slog.Int("port", c.Port),
		slog.Bool("secure", c.Secure),
		slog.String("username", c.Username),
		slog.String("password", redactedIfSet(c.Password)),
		slog.Bool("allowInsecureAuth", c.AllowInsecureAuth),
		slog.String("fromEmail", c.FromEmail),
		slog.String("fromName", c.FromName),
	)
}

func redactedIfSet(s string) string {
	if s == "" {
		return ""
	}
	return "[REDACTED]"
}

// Validate reports every problem of c at once, each wrapping ErrInvalid.
func (c Config) Validate() error {
	var errs []error
	if c.Host == "" {
		errs = append(errs, fmt.Errorf("%w: host is required", ErrInvalid))
	} else if strings.ContainsFunc(c.Host, isSpaceOrControl) {
		errs = append(errs, fmt.Errorf("%w: host %q contains white space or control characters", ErrInvalid, c.Host))
	}
	if c.Port < 1 || c.Port > 65535 {
		errs = append(errs, fmt.Errorf("%w: port %d is outside 1-65535", ErrInvalid, c.Port))
	}
	if err := checkAddress(c.FromEmail); err != nil {
		errs = append(errs, fmt.Errorf("%w: fromEmail: %w", ErrInvalid, err))
	}
	return errors.Join(errs...)
}

// checkAddress accepts a bare address: "a@example.com", not "A <a@example.com>".
func checkAddress(s string) error {
	if s == "" {
		return errors.New("an address is required")
	}
	a, err := mail.ParseAddress(s)
	if err != nil {
		return fmt.Errorf("%q is not an email address", s)
	}
	if a.Address != s || a.Name != "" {
		return fmt.Errorf("%q is not a bare email address", s)
	}
	return nil
}

func isSpaceOrControl(r rune) bool { return r <= ' ' || r == 0x7f }

// key identifies the channel for connection reuse: sessions are shared only
// between sends with the same server, security, credentials and sender. The
// password enters as a hash, so the pool holds no copy of it.
func (c Config) key() string {
	sum := sha256.Sum256([]byte(c.Password))
	return strings.Join([]string{
		c.Host, strconv.Itoa(c.Port), strconv.FormatBool(c.Secure),
		c.Username, hex.EncodeToString(sum[:]), c.FromEmail, strconv.FormatBool(c.AllowInsecureAuth),
	}, "\x00")
}

// Message is one email to send.
type Message struct {
	// To is the only recipient: a bare address. Required.
	To string
	// Subject may be any UTF-8 text; it is encoded as RFC 2047 requires.
	Subject string
	// Body is sent as text/html when it starts with '<' after leading white
	// space, as text/plain otherwise; either way UTF-8, quoted-printable.
	Body string
	// HTML and Text, both set, make a multipart/alternative message; one
	// alone is sent as its type, and Body, when set, fills the other
	// (package email has the rule).
	HTML, Text string
	// ReplyTo, when set, is the Reply-To address, with an optional name
	// ("Support <help@example.com>").
	ReplyTo string
	// MessageID, when set, is the Message-ID header's value without angle
	// brackets ("id-left@id-right", RFC 5322 3.6.4 dot-atom text on both
	// sides). A caller that may send the same message again (a retry after
	// a lost reply) sets the same id each time, so that mail clients can
	// drop the duplicate. Empty means a random id (see the package doc).
	MessageID string
	// ListUnsubscribe, when set, is the one-click unsubscribe URL sent as
	// List-Unsubscribe with List-Unsubscribe-Post (RFC 8058).
	ListUnsubscribe string
}

// Validate reports whether To is a bare email address, ReplyTo, when set,
// an email address, and MessageID, when set, a valid message id; its error
// wraps ErrInvalid.
func (m Message) Validate() error {
	var errs []error
	if err := checkAddress(m.To); err != nil {
		errs = append(errs, fmt.Errorf("%w: to: %w", ErrInvalid, err))
	}
	if m.ReplyTo != "" {
		if _, err := mail.ParseAddress(m.ReplyTo); err != nil {
			errs = append(errs, fmt.Errorf("%w: replyTo %.80q is not an email address", ErrInvalid, m.ReplyTo))
		}
	}
	if m.MessageID != "" && !validMessageID(m.MessageID) {
		errs = append(errs, fmt.Errorf("%w: messageID %.80q is not id-left@id-right of atom characters and dots", ErrInvalid, m.MessageID))
	}
	return errors.Join(errs...)
}

// maxMessageIDLen bounds Message.MessageID, so that the header fits one
// line of 998 characters.
const maxMessageIDLen = 900

// validMessageID reports whether id is "left@right", each side dot-atom
// text (RFC 5322 3.2.3): atoms of atext joined by single dots.
func validMessageID(id string) bool {
	if len(id) > maxMessageIDLen {
		return false
	}
	left, right, ok := strings.Cut(id, "@")
	return ok && dotAtom(left) && dotAtom(right)
}

func dotAtom(s string) bool {
	if s == "" {
		return false
	}
	for _, atom := range strings.Split(s, ".") {
		if atom == "" || strings.IndexFunc(atom, func(r rune) bool { return !isAtext(r) }) >= 0 {
			return false
		}
	}
	return true
}

// isAtext reports whether r is an RFC 5322 atext character (ASCII only).
func isAtext(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	}
	return strings.ContainsRune("!#$%&'*+-/=?^_`{|}~", r)
}

// Result describes a message the server accepted.
type Result struct {
	// MessageID is the Message-ID header's value without the angle
	// brackets: "<MessageID>" is what the recipient's headers show.
	MessageID string
}
