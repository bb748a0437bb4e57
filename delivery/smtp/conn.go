package smtp

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/emersion/go-sasl"
	gosmtp "github.com/emersion/go-smtp"
	"github.com/heraldhq/herald/egress"
)

// quitTimeout bounds the QUIT that politely ends a session nobody waits for.
const quitTimeout = 2 * time.Second

// conn is one authenticated SMTP session. It belongs to one Send at a time,
// or to the pool while idle.
type conn struct {
	raw    net.Conn // the TCP connection: closing it aborts any I/O on client
	client *gosmtp.Client
	idle   *time.Timer // closes the session when it sat in the pool too long
	// lastUsed is when the session last went back to the pool.
	lastUsed time.Time
}

// dial opens a session for cfg: TCP, TLS (implicit or STARTTLS), EHLO and
// AUTH. ctx bounds all of it.
func (s *Sender) dial(ctx context.Context, cfg Config, red redactor) (*conn, error) {
	raw, err := s.dialTCP(ctx, net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)))
	if errors.Is(err, egress.ErrRefused) {
		return nil, &Error{Command: "connect", Message: red.apply(err.Error()), Err: err, public: "smtp connect: " + egress.PublicMessage}
	}
	if err != nil {
		return nil, newError(ctx, "connect", err, red)
	}
	stop := context.AfterFunc(ctx, func() { raw.Close() })
	defer stop()
	c, command, err := s.handshake(ctx, raw, cfg)
	if err != nil {
		raw.Close()
		return nil, newError(ctx, command, err, red)
	}
	return c, nil
}

// dialTCP opens the TCP connection through Options.DialContext, within
// Options.DialTimeout.
func (s *Sender) dialTCP(ctx context.Context, address string) (net.Conn, error) {
	if s.opts.DialContext == nil {
		d := net.Dialer{Timeout: s.opts.DialTimeout}
		return d.DialContext(ctx, "tcp", address)
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.DialTimeout)
	defer cancel()
	return s.opts.DialContext(ctx, "tcp", address)
}

// handshake runs the session's opening on raw. On failure it names the
// command that failed.
func (s *Sender) handshake(ctx context.Context, raw net.Conn, cfg Config) (*conn, string, error) {
	tlsConfig := s.opts.TLSConfig.Clone()
	if tlsConfig == nil {
		tlsConfig = &tls.Config{}
	}
	tlsConfig.ServerName = cfg.Host

	var nc net.Conn
	encrypted := true
	if cfg.Secure {
		raw.SetDeadline(time.Now().Add(s.opts.CommandTimeout))
		tc := tls.Client(raw, tlsConfig)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, "connect", err
		}
		raw.SetDeadline(time.Time{})
		nc = tc
	} else {
		var command string
		var err error
		if nc, command, err = s.startTLS(ctx, raw, tlsConfig); err != nil {
			return nil, command, err
		}
		encrypted = false
		if g, ok := nc.(*greetedConn); ok {
			_, encrypted = g.Conn.(*tls.Conn)
		}
	}

	client := gosmtp.NewClient(nc)
	client.CommandTimeout = s.opts.CommandTimeout
	client.SubmissionTimeout = s.opts.CommandTimeout
	if err := client.Hello(s.opts.LocalName); err != nil {
		return nil, "connect", err
	}
	if cfg.Username != "" {
		if !encrypted && !cfg.AllowInsecureAuth && !isLoopback(raw.RemoteAddr()) {
			return nil, "AUTH", errInsecureAuth()
		}
		if err := authenticate(client, cfg); err != nil {
			return nil, "AUTH", err
		}
	}
	return &conn{raw: raw, client: client}, "", nil
}

// errInsecureAuth refuses to send credentials over a connection without
// TLS to a server that is not on loopback.
func errInsecureAuth() *Error {
	const msg = "refusing to authenticate without TLS: the server offers no STARTTLS " +
		"(set secure for implicit TLS, or allowInsecureAuth on a trusted network)"
	return &Error{Command: "AUTH", Message: msg, public: "smtp AUTH: " + msg}
}

// isLoopback reports whether addr, the server end of a session, is a
// loopback address: credentials in clear never leave the machine.
func isLoopback(addr net.Addr) bool {
	ta, ok := addr.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// startTLS reads the greeting, asks EHLO and, when the server offers
// STARTTLS, switches raw to TLS. It returns the connection to build the
// client on, which replays the greeting the client insists on reading.
//
// go-smtp v0.25 can start TLS only on a client it creates itself and then
// fails when the server lacks STARTTLS, so this opening is spoken here.
func (s *Sender) startTLS(ctx context.Context, raw net.Conn, tlsConfig *tls.Config) (net.Conn, string, error) {
	raw.SetDeadline(time.Now().Add(s.opts.CommandTimeout))
	defer raw.SetDeadline(time.Time{})
	text := textproto.NewReader(bufio.NewReader(raw))

	_, greeting, err := text.ReadResponse(220)
	if err != nil {
		return nil, "connect", replyError(err)
	}
	greeting, _, _ = strings.Cut(greeting, "\n")
	replay := "220 " + greeting + "\r\n"
	// plain hands the session on unencrypted, with anything the server sent
	// early (and the reader buffered) still to be read.
	plain := func() net.Conn {
		pending, _ := text.R.Peek(text.R.Buffered())
		return &greetedConn{Conn: raw, greeting: replay + string(pending)}
	}

	if _, err := fmt.Fprintf(raw, "EHLO %s\r\n", s.opts.LocalName); err != nil {
		return nil, "connect", err
	}
	_, ext, err := text.ReadResponse(250)
	if err != nil {
		if _, ok := errors.AsType[*textproto.Error](err); ok {
			// An EHLO refused by a HELO-only server: no STARTTLS. The client
			// asks again and falls back to HELO itself.
			return plain(), "", nil
		}
		return nil, "connect", err
	}
	if !slices.ContainsFunc(strings.Split(ext, "\n")[1:], func(l string) bool {
		return strings.EqualFold(strings.TrimSpace(l), "STARTTLS")
	}) {
		return plain(), "", nil
	}

	if _, err := fmt.Fprintf(raw, "STARTTLS\r\n"); err != nil {
		return nil, "STARTTLS", err
	}
	if _, _, err := text.ReadResponse(220); err != nil {
		return nil, "STARTTLS", replyError(err)
	}
	if text.R.Buffered() > 0 {
		// Bytes sent before the handshake would be taken as if they came
		// over TLS (CVE-2011-0411 style injection).
		return nil, "STARTTLS", errors.New("server sent data after its STARTTLS reply")
	}
	tc := tls.Client(raw, tlsConfig)
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, "STARTTLS", err
	}
	return &greetedConn{Conn: tc, greeting: replay}, "", nil
}

// replyError turns a reply read by net/textproto into go-smtp's type, which
// newError classifies, splitting off an enhanced status code ("5.7.1 ...").
func replyError(err error) error {
	te, ok := errors.AsType[*textproto.Error](err)
	if !ok {
		return err
	}
	se := &gosmtp.SMTPError{Code: te.Code, Message: te.Msg}
	if first, rest, ok := strings.Cut(te.Msg, " "); ok {
		var c gosmtp.EnhancedCode
		if n, _ := fmt.Sscanf(first, "%d.%d.%d", &c[0], &c[1], &c[2]); n == 3 && c[0] == te.Code/100 {
			se.EnhancedCode, se.Message = c, rest
		}
	}
	return se
}

// greetedConn hands a fresh go-smtp client a session whose greeting was
// already read, by serving the greeting again before the connection's data.
type greetedConn struct {
	net.Conn
	greeting string
}

func (c *greetedConn) Read(p []byte) (int, error) {
	if c.greeting != "" {
		n := copy(p, c.greeting)
		c.greeting = c.greeting[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// authenticate prefers PLAIN and falls back to LOGIN.
func authenticate(c *gosmtp.Client, cfg Config) error {
	switch {
	case c.SupportsAuth(sasl.Plain):
		return c.Auth(sasl.NewPlainClient("", cfg.Username, cfg.Password))
	case c.SupportsAuth(sasl.Login):
		return c.Auth(sasl.NewLoginClient(cfg.Username, cfg.Password))
	}
	_, offered := c.Extension("AUTH")
	if offered == "" {
		offered = "none"
	}
	return &Error{
		Command: "AUTH",
		Message: "server offers no AUTH mechanism this client speaks (PLAIN, LOGIN); offered: " + offered,
		public:  "smtp AUTH: the server offers no AUTH mechanism this client speaks (PLAIN, LOGIN)",
	}
}

// transaction is how far one mail transaction got.
type transaction struct {
	command     string // the command that failed, "" on success
	bodyStarted bool   // the server accepted DATA: retrying could deliver twice
	err         error
}

// send runs MAIL, RCPT and DATA for one message.
func (c *conn) send(from, to string, data []byte) transaction {
	opts := &gosmtp.MailOptions{Size: int64(len(data))}
	if !isASCII(from) || !isASCII(to) {
		if ok, _ := c.client.Extension("SMTPUTF8"); !ok {
			const msg = "server does not support SMTPUTF8, which a non-ASCII address needs"
			return transaction{command: "MAIL", err: &Error{Command: "MAIL", Message: msg, public: "smtp MAIL: " + msg}}
		}
		opts.UTF8 = true
	}
	if err := c.client.Mail(from, opts); err != nil {
		return transaction{command: "MAIL", err: err}
	}
	if err := c.client.Rcpt(to, nil); err != nil {
		return transaction{command: "RCPT", err: err}
	}
	w, err := c.client.Data()
	if err != nil {
		return transaction{command: "DATA", err: err}
	}
	if _, err := w.Write(data); err != nil {
		return transaction{command: "DATA", bodyStarted: true, err: err}
	}
	if err := w.Close(); err != nil {
		return transaction{command: "DATA", bodyStarted: true, err: err}
	}
	return transaction{bodyStarted: true}
}

// recover readies the session for the next transaction after a failed one.
// It reports false when the session is not worth keeping: the failure was
// neither an SMTP reply nor decided here, the reply was 421 (the server is
// closing), or RSET failed.
func (c *conn) recover(err error) bool {
	if _, ok := errors.AsType[*Error](err); ok {
		return true // refused here, before MAIL: the session is untouched
	}
	se, ok := errors.AsType[*gosmtp.SMTPError](err)
	if !ok || se.Code == 421 {
		return false
	}
	return c.client.Reset() == nil
}

// quit ends the session politely, bounded by quitTimeout.
func (c *conn) quit() {
	c.client.CommandTimeout = quitTimeout
	c.client.Quit()
	c.raw.Close()
}

// brokenSession reports whether err says the session itself died (network
// error or a 421 reply) rather than the server refusing the message.
func brokenSession(err error) bool {
	if _, ok := errors.AsType[*Error](err); ok {
		return false // decided here, before anything was sent
	}
	if se, ok := errors.AsType[*gosmtp.SMTPError](err); ok {
		return se.Code == 421
	}
	return true
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
