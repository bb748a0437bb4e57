// Package testsmtp runs SMTP servers on loopback for tests.
//
// # Basics
//
// [Start] runs a real go-smtp server that records every message it accepts
// and lets a test script it: which security it speaks ([Plain], [StartTLS],
// [ImplicitTLS], with a self-signed certificate that [Server.Roots]
// trusts), whether AUTH is required, and hooks on MAIL, RCPT and DATA that
// answer with an error ([Reply]) or cut the connection. [StartCatcher]
// runs a [devmail] catcher instead, for tests that need a sink rather than
// a script. t.Cleanup stops either.
//
// # Caveats
//
// Hooks run on the server's connection goroutines, several at once when
// clients open several connections: they must be safe for concurrent use.
package testsmtp

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gosmtp "github.com/emersion/go-smtp"
)

// Security is how a Server speaks TLS.
type Security int

const (
	Plain       Security = iota // no TLS offered
	StartTLS                    // STARTTLS offered
	ImplicitTLS                 // TLS from the first byte
)

// Options script a Server. The zero value is a plain server without AUTH
// that accepts and keeps every message.
type Options struct {
	// Security is how the server speaks TLS. Zero: Plain.
	Security Security
	// User and Password are the only credentials AUTH accepts; when
	// Password is set, MAIL before a successful AUTH is refused. Zero: no
	// AUTH required.
	User, Password string
	// Mechs are the AUTH mechanisms offered (of PLAIN and LOGIN). Nil:
	// PLAIN and LOGIN when Password is set, none otherwise.
	Mechs []string
	// EchoSecret makes a failed AUTH reply quote the user and password it
	// was given (a careless server). Zero: it quotes neither.
	EchoSecret bool
	// Discard counts accepted messages without keeping them (for
	// benchmarks). Zero: Messages returns them.
	Discard bool

	// OnMail runs on the nth MAIL command (from 1) with the session's
	// connection; an error is the reply. Nil: MAIL is accepted.
	OnMail func(n int, c *gosmtp.Conn) error
	// OnRcpt runs on each RCPT; an error is the reply. Nil: every
	// recipient is accepted.
	OnRcpt func(to string) error
	// OnData runs on the nth message (from 1), read in full, with the
	// session's connection; an error is the reply and the message is not
	// accepted. Nil: every message is accepted.
	OnData func(n int, c *gosmtp.Conn) error
}

// Message is one message a Server accepted.
type Message struct {
	From string
	To   []string
	Data []byte
	TLS  bool   // received over TLS
	User string // the AUTH user, "" without AUTH
}

// Server is a go-smtp server on 127.0.0.1 recording what it receives. Its
// methods are safe for concurrent use.
type Server struct {
	Port  int            // the SMTP port on 127.0.0.1
	Roots *x509.CertPool // trusts the server's certificate

	opts        Options
	connections atomic.Int64
	accepted    atomic.Int64
	logouts     atomic.Int64

	mu       sync.Mutex
	mails    int
	bodies   int
	received []Message
	conns    []*gosmtp.Conn

	close func() // stops the server, once
}

// Start starts a server scripted by opts on a free loopback port. t.Cleanup
// closes it and waits until it has stopped.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	cert, roots := testCert(t)
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}}
	s := &Server{Roots: roots, opts: opts}

	srv := gosmtp.NewServer(backend{s})
	srv.Domain = "mx.test"
	srv.AllowInsecureAuth = true
	srv.ErrorLog = log.New(io.Discard, "", 0)
	srv.ReadTimeout = 10 * time.Second
	srv.WriteTimeout = 10 * time.Second

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Port = l.Addr().(*net.TCPAddr).Port
	switch opts.Security {
	case StartTLS:
		srv.TLSConfig = tlsConfig
	case ImplicitTLS:
		l = tls.NewListener(l, tlsConfig)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(&countingListener{Listener: l, n: &s.connections})
	}()
	s.close = sync.OnceFunc(func() {
		srv.Close()
		// A Close that runs before Serve registered the listener does not
		// reach it: closing it here ends Serve's Accept either way.
		l.Close()
		<-done
	})
	t.Cleanup(s.close)
	return s
}

// Close stops the server before the test ends: later connections are
// refused. It waits until the server has stopped; calling it again does
// nothing.
func (s *Server) Close() { s.close() }

// Messages returns a copy of the messages accepted and kept, oldest first.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.received...)
}

// Accepted is how many messages the server accepted (kept or discarded).
func (s *Server) Accepted() int { return int(s.accepted.Load()) }

// Bodies is how many message bodies the server read in full, accepted or
// refused by OnData.
func (s *Server) Bodies() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bodies
}

// Connections is how many connections the server accepted.
func (s *Server) Connections() int { return int(s.connections.Load()) }

// Logouts is how many sessions have ended.
func (s *Server) Logouts() int { return int(s.logouts.Load()) }

// CloseConns cuts every connection the server holds, without a reply.
func (s *Server) CloseConns() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
}

// Reply is an SMTP error reply with an enhanced code, for hooks to return.
func Reply(code int, enhanced gosmtp.EnhancedCode, msg string) error {
	return &gosmtp.SMTPError{Code: code, EnhancedCode: enhanced, Message: msg}
}

// countingListener counts accepted connections.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}
