package devmail

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/emersion/go-sasl"
	gosmtp "github.com/emersion/go-smtp"
)

// backend is the go-smtp backend that accepts everything into an inbox.
type backend struct {
	inbox  *Inbox
	logger *slog.Logger
}

var _ gosmtp.Backend = (*backend)(nil)

func (b *backend) NewSession(c *gosmtp.Conn) (gosmtp.Session, error) {
	return &session{b: b, remote: c.Conn().RemoteAddr().String()}, nil
}

// session collects one SMTP session's transactions. go-smtp calls it from
// the session's goroutine only.
type session struct {
	b      *backend
	remote string
	from   string
	to     []string
}

var _ gosmtp.AuthSession = (*session)(nil)

func (s *session) AuthMechanisms() []string { return []string{sasl.Plain, sasl.Login} }

// Auth accepts any credentials; they are neither kept nor logged.
func (s *session) Auth(mech string) (sasl.Server, error) {
	switch mech {
	case sasl.Plain:
		return sasl.NewPlainServer(func(string, string, string) error { return nil }), nil
	case sasl.Login:
		return new(loginServer), nil
	}
	return nil, gosmtp.ErrAuthUnknownMechanism
}

func (s *session) Mail(from string, _ *gosmtp.MailOptions) error {
	s.from, s.to = from, nil
	return nil
}

func (s *session) Rcpt(to string, _ *gosmtp.RcptOptions) error {
	s.to = append(s.to, to)
	return nil
}

func (s *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err // too large, or the session broke: go-smtp answers
	}
	m := s.b.inbox.Add(parseMessage(s.from, s.to, raw))
	s.b.logger.Info("devmail: message caught",
		"id", m.ID, "from", m.From, "to", m.To, "subject", m.Subject, "bytes", len(raw), "remote", s.remote)
	return nil
}

func (s *session) Reset() { s.from, s.to = "", nil }

func (s *session) Logout() error { return nil }

// loginServer is the server side of AUTH LOGIN (go-sasl has only the
// client); it accepts any credentials.
type loginServer struct{ step int }

func (l *loginServer) Next(response []byte) (challenge []byte, done bool, err error) {
	switch l.step {
	case 0:
		if response == nil { // no initial response: ask for the user name
			l.step = 1
			return []byte("Username:"), false, nil
		}
		l.step = 2
		return []byte("Password:"), false, nil
	case 1:
		l.step = 2
		return []byte("Password:"), false, nil
	case 2:
		l.step = 3
		return nil, true, nil
	}
	return nil, false, errors.New("unexpected AUTH LOGIN response")
}

// errorLog hands go-smtp's error log to slog.
type errorLog struct{ logger *slog.Logger }

var _ gosmtp.Logger = errorLog{}

func (l errorLog) Printf(format string, v ...any) {
	l.logger.Warn("devmail: smtp: " + fmt.Sprintf(format, v...))
}

func (l errorLog) Println(v ...any) {
	l.logger.Warn("devmail: smtp: " + strings.TrimSuffix(fmt.Sprintln(v...), "\n"))
}
