package smtp_test

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

	"github.com/heraldhq/herald/delivery/smtp"
)

// backend is a go-smtp server backend that records what it receives and lets
// a test script failures. Hooks run on the server's connection goroutines.
type backend struct {
	user, password string   // AUTH is required when password is set
	mechs          []string // offered AUTH mechanisms; nil means PLAIN
	echoSecret     bool     // a failed AUTH reply quotes the password tried
	discard        bool     // count messages without keeping them

	// mailHook runs on the nth MAIL command (from 1); an error is the reply.
	mailHook func(n int, c *gosmtp.Conn) error
	// rcptHook runs on each RCPT; an error is the reply.
	rcptHook func(to string) error
	// dataHook runs on the nth message, read in full; an error is the reply
	// and the message is not recorded.
	dataHook func(n int, c *gosmtp.Conn) error

	mu       sync.Mutex
	mails    int
	datas    int
	received []received
	conns    []*gosmtp.Conn
	count    atomic.Int64 // messages accepted
	logouts  atomic.Int64 // sessions ended
}

type received struct {
	From string
	To   []string
	Data []byte
	TLS  bool
	User string
}

func (be *backend) NewSession(c *gosmtp.Conn) (gosmtp.Session, error) {
	be.mu.Lock()
	be.conns = append(be.conns, c)
	be.mu.Unlock()
	return &session{be: be, c: c}, nil
}

func (be *backend) messages() []received {
	be.mu.Lock()
	defer be.mu.Unlock()
	return append([]received(nil), be.received...)
}

// closeConns cuts every connection the server holds, without a reply.
func (be *backend) closeConns() {
	be.mu.Lock()
	defer be.mu.Unlock()
	for _, c := range be.conns {
		c.Close()
	}
}

type session struct {
	be   *backend
	c    *gosmtp.Conn
	user string
	from string
	to   []string
}

var _ gosmtp.AuthSession = (*session)(nil)

func (s *session) AuthMechanisms() []string {
	if s.be.mechs != nil {
		return s.be.mechs
	}
	if s.be.password == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (s *session) Auth(mech string) (sasl.Server, error) {
	switch mech {
	case sasl.Plain:
		return sasl.NewPlainServer(func(_, user, pass string) error { return s.login(user, pass) }), nil
	case sasl.Login:
		return &loginServer{check: s.login}, nil
	}
	return nil, gosmtp.ErrAuthUnknownMechanism
}

func (s *session) login(user, pass string) error {
	if user == s.be.user && pass == s.be.password {
		s.user = user
		return nil
	}
	msg := "Authentication failed"
	if s.be.echoSecret {
		msg += " for " + user + " with password " + pass
	}
	return &gosmtp.SMTPError{Code: 535, EnhancedCode: gosmtp.EnhancedCode{5, 7, 8}, Message: msg}
}

func (s *session) Mail(from string, _ *gosmtp.MailOptions) error {
	if s.be.password != "" && s.user == "" {
		return gosmtp.ErrAuthRequired
	}
	s.be.mu.Lock()
	s.be.mails++
	n := s.be.mails
	s.be.mu.Unlock()
	if s.be.mailHook != nil {
		if err := s.be.mailHook(n, s.c); err != nil {
			return err
		}
	}
	s.from = from
	return nil
}

func (s *session) Rcpt(to string, _ *gosmtp.RcptOptions) error {
	if s.be.rcptHook != nil {
		if err := s.be.rcptHook(to); err != nil {
			return err
		}
	}
	s.to = append(s.to, to)
	return nil
}

func (s *session) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.be.mu.Lock()
	s.be.datas++
	n := s.be.datas
	s.be.mu.Unlock()
	if s.be.dataHook != nil {
		if err := s.be.dataHook(n, s.c); err != nil {
			return err
		}
	}
	s.be.count.Add(1)
	if s.be.discard {
		return nil
	}
	_, isTLS := s.c.TLSConnectionState()
	s.be.mu.Lock()
	s.be.received = append(s.be.received, received{From: s.from, To: s.to, Data: data, TLS: isTLS, User: s.user})
	s.be.mu.Unlock()
	return nil
}

func (s *session) Reset() { s.from, s.to = "", nil }

func (s *session) Logout() error {
	s.be.logouts.Add(1)
	return nil
}

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

// countingListener counts accepted connections.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

type security int

const (
	plain       security = iota // no TLS offered
	startTLS                    // STARTTLS offered
	implicitTLS                 // TLS from the first byte
)

// testServer is a go-smtp server on loopback.
type testServer struct {
	be       *backend
	listener *countingListener
	cfg      smtp.Config  // a channel config pointing at the server
	opts     smtp.Options // options trusting the server's certificate
}

// connections is how many connections the server accepted.
func (ts *testServer) connections() int { return int(ts.listener.n.Load()) }

func startServer(t testing.TB, sec security, be *backend) *testServer {
	t.Helper()
	cert, roots := testCert(t)
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}}

	srv := gosmtp.NewServer(be)
	srv.Domain = "mx.test"
	srv.AllowInsecureAuth = true
	srv.ErrorLog = log.New(io.Discard, "", 0)
	srv.ReadTimeout = 10 * time.Second

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	switch sec {
	case startTLS:
		srv.TLSConfig = tlsConfig
	case implicitTLS:
		l = tls.NewListener(l, tlsConfig)
	}
	cl := &countingListener{Listener: l}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(cl)
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})

	addr := l.Addr().(*net.TCPAddr)
	return &testServer{
		be:       be,
		listener: cl,
		cfg: smtp.Config{
			Host:      "127.0.0.1",
			Port:      addr.Port,
			Secure:    sec == implicitTLS,
			FromEmail: "noreply@herald.test",
			FromName:  "Herald",
		},
		opts: smtp.Options{
			TLSConfig:      &tls.Config{RootCAs: roots},
			CommandTimeout: 5 * time.Second,
			DialTimeout:    5 * time.Second,
		},
	}
}

// testCert returns a self-signed certificate for 127.0.0.1 and a pool that
// trusts it, made once per test binary.
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
		Subject:               pkix.Name{CommonName: "herald test SMTP"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
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
