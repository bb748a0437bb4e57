package devmail

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	gosmtp "github.com/emersion/go-smtp"
)

// Defaults of Config.
const (
	DefaultSMTPAddr        = "127.0.0.1:1025"
	DefaultHTTPAddr        = "127.0.0.1:8025"
	DefaultMaxMessageBytes = 10 << 20
)

// shutdownTimeout bounds how long Run waits for HTTP requests in flight.
const shutdownTimeout = 5 * time.Second

// Config configures a Server. The zero value is ready to use.
type Config struct {
	// SMTPAddr is the SMTP listen address. Empty means DefaultSMTPAddr; a
	// port of 0 picks a free one (see Server.SMTPAddr).
	SMTPAddr string
	// HTTPAddr is the HTTP listen address. Empty means DefaultHTTPAddr; a
	// port of 0 picks a free one (see Server.HTTPAddr).
	HTTPAddr string
	// Logger receives a line per caught message and the servers' errors.
	// Nil means slog.Default().
	Logger *slog.Logger
	// MaxMessages is the inbox capacity. Zero means DefaultMaxMessages.
	MaxMessages int
	// MaxMessageBytes is the largest message accepted; SMTP refuses larger
	// ones with 552. Zero means DefaultMaxMessageBytes.
	MaxMessageBytes int64
}

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	var errs []error
	for _, a := range []struct{ name, addr string }{{"SMTPAddr", c.SMTPAddr}, {"HTTPAddr", c.HTTPAddr}} {
		if a.addr == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			errs = append(errs, fmt.Errorf("devmail: %s %q: %w", a.name, a.addr, err))
		}
	}
	if c.MaxMessages < 0 {
		errs = append(errs, fmt.Errorf("devmail: MaxMessages %d is negative", c.MaxMessages))
	}
	if c.MaxMessageBytes < 0 {
		errs = append(errs, fmt.Errorf("devmail: MaxMessageBytes %d is negative", c.MaxMessageBytes))
	}
	return errors.Join(errs...)
}

func (c *Config) setDefaults() {
	if c.SMTPAddr == "" {
		c.SMTPAddr = DefaultSMTPAddr
	}
	if c.HTTPAddr == "" {
		c.HTTPAddr = DefaultHTTPAddr
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = DefaultMaxMessageBytes
	}
}

// Server is the catcher: an SMTP server filling an Inbox and an HTTP server
// showing it. A Server runs once. Its methods are safe for concurrent use.
type Server struct {
	cfg   Config
	inbox *Inbox
	smtp  *gosmtp.Server
	http  *http.Server

	mu     sync.Mutex
	smtpLn net.Listener // nil until Listen
	httpLn net.Listener
	ran    bool
}

// NewServer returns a Server for cfg, not yet listening. It fails when
// cfg.Validate does.
func NewServer(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	s := &Server{cfg: cfg, inbox: NewInbox(cfg.MaxMessages)}

	s.smtp = gosmtp.NewServer(&backend{inbox: s.inbox, logger: cfg.Logger})
	s.smtp.Domain = "devmail.localhost"
	s.smtp.AllowInsecureAuth = true
	s.smtp.MaxMessageBytes = cfg.MaxMessageBytes
	s.smtp.EnableSMTPUTF8 = true
	s.smtp.ErrorLog = errorLog{cfg.Logger}

	s.http = &http.Server{
		Handler:           s.routes(),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
	}
	return s, nil
}

// Inbox returns the inbox the server fills.
func (s *Server) Inbox() *Inbox { return s.inbox }

// Listen binds both addresses, so that SMTPAddr and HTTPAddr report them
// before Run. It binds neither when one fails. Calling it again does
// nothing; after Run it fails with ErrServerClosed. Listen must be followed
// by Run, which closes the listeners.
func (s *Server) Listen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ran {
		return ErrServerClosed
	}
	return s.listenLocked()
}

func (s *Server) listenLocked() error {
	if s.smtpLn != nil {
		return nil
	}
	smtpLn, err := net.Listen("tcp", s.cfg.SMTPAddr)
	if err != nil {
		return fmt.Errorf("devmail: smtp: %w", err)
	}
	httpLn, err := net.Listen("tcp", s.cfg.HTTPAddr)
	if err != nil {
		smtpLn.Close()
		return fmt.Errorf("devmail: http: %w", err)
	}
	s.smtpLn, s.httpLn = smtpLn, httpLn
	return nil
}

// SMTPAddr returns the bound SMTP address ("127.0.0.1:41234"), or the
// configured one before Listen.
func (s *Server) SMTPAddr() string { return s.boundOr(&s.smtpLn, s.cfg.SMTPAddr) }

// HTTPAddr returns the bound HTTP address, or the configured one before
// Listen.
func (s *Server) HTTPAddr() string { return s.boundOr(&s.httpLn, s.cfg.HTTPAddr) }

// boundOr returns the address *ln is bound to, or configured while *ln
// is nil (before Listen).
func (s *Server) boundOr(ln *net.Listener, configured string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if *ln != nil {
		return (*ln).Addr().String()
	}
	return configured
}

// Run listens (unless Listen did already) and serves SMTP and HTTP until
// ctx is cancelled, then closes both: SMTP sessions still open are cut, HTTP
// requests in flight get up to 5s to finish. It returns nil after a
// cancellation, the error when a listener fails (the other is then shut down
// too), and ErrServerClosed when the server ran before.
func (s *Server) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.ran {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.ran = true
	err := s.listenLocked()
	smtpLn, httpLn := s.smtpLn, s.httpLn
	s.mu.Unlock()
	if err != nil {
		return err
	}

	logger := s.cfg.Logger
	logger.Info("devmail: catching mail", "smtp", smtpLn.Addr().String(), "http", "http://"+httpLn.Addr().String())

	errc := make(chan error, 2)
	go func() {
		if err := s.smtp.Serve(smtpLn); err != nil {
			errc <- fmt.Errorf("devmail: smtp: %w", err)
			return
		}
		errc <- nil
	}()
	go func() {
		if err := s.http.Serve(httpLn); !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("devmail: http: %w", err)
			return
		}
		errc <- nil
	}()

	var first error
	pending := cap(errc)
	select {
	case <-ctx.Done():
	case first = <-errc:
		pending--
	}

	s.smtp.Close()
	smtpLn.Close() // in case Close ran before Serve registered the listener
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := s.http.Shutdown(sctx); err != nil {
		s.http.Close()
	}
	for ; pending > 0; pending-- {
		if err := <-errc; first == nil {
			first = err
		}
	}
	logger.Info("devmail: stopped")
	return first
}
