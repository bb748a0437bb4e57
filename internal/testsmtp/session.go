package testsmtp

import (
	"errors"
	"io"

	"github.com/emersion/go-sasl"
	gosmtp "github.com/emersion/go-smtp"
)

// backend is the go-smtp side of a Server.
type backend struct{ s *Server }

var _ gosmtp.Backend = backend{}

func (b backend) NewSession(c *gosmtp.Conn) (gosmtp.Session, error) {
	b.s.mu.Lock()
	b.s.conns = append(b.s.conns, c)
	b.s.mu.Unlock()
	return &session{s: b.s, c: c}, nil
}

// session is one SMTP session; go-smtp calls it from the session's
// goroutine only.
type session struct {
	s    *Server
	c    *gosmtp.Conn
	user string
	from string
	to   []string
}

var _ gosmtp.AuthSession = (*session)(nil)

func (s *session) AuthMechanisms() []string {
	if s.s.opts.Mechs != nil {
		return s.s.opts.Mechs
	}
	if s.s.opts.Password == "" {
		return nil
	}
	return []string{sasl.Plain, sasl.Login}
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
	if user == s.s.opts.User && pass == s.s.opts.Password {
		s.user = user
		return nil
	}
	msg := "Authentication failed"
	if s.s.opts.EchoSecret {
		msg += " for " + user + " with password " + pass
	}
	return Reply(535, gosmtp.EnhancedCode{5, 7, 8}, msg)
}

func (s *session) Mail(from string, _ *gosmtp.MailOptions) error {
	if s.s.opts.Password != "" && s.user == "" {
		return gosmtp.ErrAuthRequired
	}
	if err := s.step(&s.s.mails, s.s.opts.OnMail); err != nil {
		return err
	}
	s.from = from
	return nil
}

func (s *session) Rcpt(to string, _ *gosmtp.RcptOptions) error {
	if hook := s.s.opts.OnRcpt; hook != nil {
		if err := hook(to); err != nil {
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
	if err := s.step(&s.s.bodies, s.s.opts.OnData); err != nil {
		return err
	}
	s.s.accepted.Add(1)
	if s.s.opts.Discard {
		return nil
	}
	_, isTLS := s.c.TLSConnectionState()
	s.s.mu.Lock()
	s.s.received = append(s.s.received, Message{From: s.from, To: s.to, Data: data, TLS: isTLS, User: s.user})
	s.s.mu.Unlock()
	return nil
}

// step counts one more MAIL or DATA in *counter, which the server's mutex
// guards, then runs hook, if any, with the new count.
func (s *session) step(counter *int, hook func(n int, c *gosmtp.Conn) error) error {
	s.s.mu.Lock()
	*counter++
	n := *counter
	s.s.mu.Unlock()
	if hook == nil {
		return nil
	}
	return hook(n, s.c)
}

func (s *session) Reset() { s.from, s.to = "", nil }

func (s *session) Logout() error {
	s.s.logouts.Add(1)
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
