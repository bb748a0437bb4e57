package delivery_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"log"
	"math/big"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	gosmtp "github.com/emersion/go-smtp"
)

// security is how a mailServer speaks TLS.
type security int

const (
	plainSMTP   security = iota // no TLS offered
	startTLS                    // STARTTLS offered
	implicitTLS                 // TLS from the first byte
)

// mailServer is a real go-smtp server on loopback that keeps what it
// receives and lets a test script its replies. Hooks run on the server's
// connection goroutines.
type mailServer struct {
	Port  int
	Roots *x509.CertPool // trusts the server's certificate

	user, password string // AUTH (PLAIN and LOGIN) required when password is set
	echoSecret     bool   // a failed AUTH reply quotes the password it was given
	discard        bool   // count messages without keeping them

	// rcptHook runs on each RCPT; an error is the reply.
	rcptHook func(to string) error
	// dataHook runs on the nth message (from 1) once read; an error is the
	// reply and the message is not kept.
	dataHook func(n int) error

	mu       sync.Mutex
	datas    int
	received []receivedMail
	count    atomic.Int64 // messages accepted
}

// receivedMail is one message the server accepted.
type receivedMail struct {
	From string
	To   []string
	Data []byte
	TLS  bool
	User string
}

// mailOption sets up a mailServer before it starts.
type mailOption func(*mailServer)

func withAuth(user, password string) mailOption {
	return func(m *mailServer) { m.user, m.password = user, password }
}

func startMailServer(t testing.TB, sec security, opts ...mailOption) *mailServer {
	t.Helper()
	m := &mailServer{}
	for _, o := range opts {
		o(m)
	}
	cert, roots := testCert(t)
	m.Roots = roots
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}}
	srv := gosmtp.NewServer(m)
	srv.Domain = "mx.test"
	srv.AllowInsecureAuth = true
	srv.ErrorLog = log.New(io.Discard, "", 0)
	srv.ReadTimeout = 10 * time.Second
	srv.WriteTimeout = 10 * time.Second
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m.Port = l.Addr().(*net.TCPAddr).Port
	switch sec {
	case startTLS:
		srv.TLSConfig = tlsConfig
	case implicitTLS:
		l = tls.NewListener(l, tlsConfig)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(l)
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	return m
}

// messages returns a copy of what the server accepted, oldest first.
func (m *mailServer) messages() []receivedMail {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]receivedMail(nil), m.received...)
}

func (m *mailServer) NewSession(c *gosmtp.Conn) (gosmtp.Session, error) {
	return &mailSession{m: m, c: c}, nil
}

type mailSession struct {
	m    *mailServer
	c    *gosmtp.Conn
	user string
	from string
	to   []string
}

var _ gosmtp.AuthSession = (*mailSession)(nil)

func (s *mailSession) AuthMechanisms() []string {
	if s.m.password == "" {
		return nil
	}
	return []string{sasl.Plain, sasl.Login}
}

func (s *mailSession) Auth(mech string) (sasl.Server, error) {
	switch mech {
	case sasl.Plain:
		return sasl.NewPlainServer(func(_, user, pass string) error { return s.login(user, pass) }), nil
	case sasl.Login:
		return &loginServer{check: s.login}, nil
	}
	return nil, gosmtp.ErrAuthUnknownMechanism
}

func (s *mailSession) login(user, pass string) error {
	if user == s.m.user && pass == s.m.password {
		s.user = user
		return nil
	}
	msg := "Authentication failed"
	if s.m.echoSecret {
		msg += " for " + user + " with password " + pass
	}
	return &gosmtp.SMTPError{Code: 535, EnhancedCode: gosmtp.EnhancedCode{5, 7, 8}, Message: msg}
}

func (s *mailSession) Mail(from string, _ *gosmtp.MailOptions) error {
	if s.m.password != "" && s.user == "" {
		return gosmtp.ErrAuthRequired
	}
	s.from = from
	return nil
}

func (s *mailSession) Rcpt(to string, _ *gosmtp.RcptOptions) error {
	if s.m.rcptHook != nil {
		if err := s.m.rcptHook(to); err != nil {
			return err
		}
	}
	s.to = append(s.to, to)
	return nil
}

func (s *mailSession) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.m.mu.Lock()
	s.m.datas++
	n := s.m.datas
	s.m.mu.Unlock()
	if s.m.dataHook != nil {
		if err := s.m.dataHook(n); err != nil {
			return err
		}
	}
	s.m.count.Add(1)
	if s.m.discard {
		return nil
	}
	_, isTLS := s.c.TLSConnectionState()
	s.m.mu.Lock()
	s.m.received = append(s.m.received, receivedMail{From: s.from, To: s.to, Data: data, TLS: isTLS, User: s.user})
	s.m.mu.Unlock()
	return nil
}

func (s *mailSession) Reset() { s.from, s.to = "", nil }

func (s *mailSession) Logout() error { return nil }

// loginServer is the server side of AUTH LOGIN, which go-sasl lacks.
type loginServer struct {
	step  int
	user  string
	check func(user, pass string) error
}

func (l *loginServer) Next(response []byte) ([]byte, bool, error) {
	switch l.step {
	case 0:
		if response == nil {
			l.step = 1
			return []byte("Username:"), false, nil
		}
		l.user, l.step = string(response), 2
		return []byte("Password:"), false, nil
	case 1:
		l.user, l.step = string(response), 2
		return []byte("Password:"), false, nil
	case 2:
		l.step = 3
		return nil, true, l.check(l.user, string(response))
	}
	return nil, false, errors.New("unexpected LOGIN response")
}

// smtpReply is an SMTP error reply with an enhanced code.
func smtpReply(code int, enhanced gosmtp.EnhancedCode, msg string) error {
	return &gosmtp.SMTPError{Code: code, EnhancedCode: enhanced, Message: msg}
}

// testCert returns a self-signed certificate for 127.0.0.1 and a pool
// trusting it, made once per test binary.
func testCert(t testing.TB) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	c, err := certOnce()
	if err != nil {
		t.Fatal(err)
	}
	return c.cert, c.roots
}

type certPair struct {
	cert  tls.Certificate
	roots *x509.CertPool
}

var certOnce = sync.OnceValues(func() (certPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return certPair{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "herald delivery test SMTP"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return certPair{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return certPair{}, err
	}
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	return certPair{cert: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, roots: roots}, nil
})
