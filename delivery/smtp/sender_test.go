package smtp_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	gosmtp "github.com/emersion/go-smtp"

	"github.com/heraldhq/herald/delivery/smtp"
	"github.com/heraldhq/herald/internal/testsmtp"
	"github.com/heraldhq/herald/internal/testwait"
)

func newSender(t testing.TB, opts smtp.Options) *smtp.Sender {
	t.Helper()
	s := smtp.NewSender(opts)
	t.Cleanup(func() { s.Close() })
	return s
}

func send(t *testing.T, s *smtp.Sender, cfg smtp.Config, msg smtp.Message) smtp.Result {
	t.Helper()
	res, err := s.Send(context.Background(), cfg, msg)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	return res
}

var hello = smtp.Message{To: "ada@example.com", Subject: "Hello", Body: "Hello Ada"}

func TestSendSecurity(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sec     testsmtp.Security
		wantTLS bool
	}{
		{"plain", testsmtp.Plain, false},
		{"STARTTLS", testsmtp.StartTLS, true},
		{"implicit TLS", testsmtp.ImplicitTLS, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, testsmtp.Options{Security: tc.sec})
			send(t, newSender(t, ts.opts), ts.cfg, hello)
			got := ts.Messages()
			if len(got) != 1 {
				t.Fatalf("server received %d messages, want 1", len(got))
			}
			if got[0].TLS != tc.wantTLS {
				t.Errorf("message came over TLS = %v, want %v", got[0].TLS, tc.wantTLS)
			}
		})
	}
}

func TestSendHeadersAndBody(t *testing.T) {
	ts := startServer(t, testsmtp.Options{})
	cfg := ts.cfg
	cfg.FromName = "Herald Café"
	msg := smtp.Message{
		To:      "ada@example.com",
		Subject: "Grüße ✓ — your weekly digest",
		Body:    "Hello Ada,\n\nünïcödé text, a line of = signs ===\n.a line starting with a dot\n" + strings.Repeat("long ", 40) + "\nend",
	}
	before := time.Now().Add(-time.Second)
	res := send(t, newSender(t, ts.opts), cfg, msg)

	got := ts.Messages()
	if len(got) != 1 {
		t.Fatalf("server received %d messages, want 1", len(got))
	}
	rcv := got[0]
	if rcv.From != cfg.FromEmail || len(rcv.To) != 1 || rcv.To[0] != msg.To {
		t.Errorf("envelope = %s -> %v, want %s -> [%s]", rcv.From, rcv.To, cfg.FromEmail, msg.To)
	}
	if i := bytes.IndexByte(bytes.ReplaceAll(rcv.Data, []byte("\r\n"), nil), '\n'); i >= 0 {
		t.Errorf("message has a bare LF at byte %d", i)
	}
	for line := range strings.SplitSeq(string(rcv.Data), "\r\n") {
		if len(line) > 78 {
			t.Errorf("line longer than 78 characters: %q", line)
		}
	}

	m, err := mail.ReadMessage(bytes.NewReader(rcv.Data))
	if err != nil {
		t.Fatal(err)
	}
	h := m.Header
	if !strings.Contains(h.Get("From"), "=?utf-8?q?") {
		t.Errorf("From = %q, want the non-ASCII name RFC 2047-encoded", h.Get("From"))
	}
	from, err := mail.ParseAddress(h.Get("From"))
	if err != nil || from.Name != cfg.FromName || from.Address != cfg.FromEmail {
		t.Errorf("From = %q parses to %v (%v), want %q <%s>", h.Get("From"), from, err, cfg.FromName, cfg.FromEmail)
	}
	if to := h.Get("To"); to != "<ada@example.com>" {
		t.Errorf("To = %q", to)
	}
	subject, err := new(mime.WordDecoder).DecodeHeader(h.Get("Subject"))
	if err != nil || subject != msg.Subject {
		t.Errorf("Subject = %q decodes to %q (%v), want %q", h.Get("Subject"), subject, err, msg.Subject)
	}
	date, err := h.Date()
	if err != nil || date.Before(before) || date.After(time.Now().Add(time.Second)) {
		t.Errorf("Date = %q (%v), want about now", h.Get("Date"), err)
	}
	if mid := h.Get("Message-ID"); mid != "<"+res.MessageID+">" || !strings.HasSuffix(res.MessageID, "@herald.test") {
		t.Errorf("Message-ID = %q, Result.MessageID = %q, want <id@herald.test> and the id", mid, res.MessageID)
	}
	for name, want := range map[string]string{
		"MIME-Version":              "1.0",
		"Content-Type":              "text/plain; charset=utf-8",
		"Content-Transfer-Encoding": "quoted-printable",
	} {
		if got := h.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	body, err := io.ReadAll(quotedprintable.NewReader(m.Body))
	if err != nil {
		t.Fatal(err)
	}
	// The last line gets its line break.
	if want := strings.ReplaceAll(msg.Body, "\n", "\r\n") + "\r\n"; string(body) != want {
		t.Errorf("body = %q, want %q", body, want)
	}
}

func TestSendHeaderDetails(t *testing.T) {
	ts := startServer(t, testsmtp.Options{})
	s := newSender(t, ts.opts)
	cfg := ts.cfg
	cfg.FromName = ""
	long := strings.TrimSpace(strings.Repeat("a fairly long subject ", 12))
	send(t, s, cfg, smtp.Message{To: "ada@example.com", Subject: long + "\r\nBcc: eve@example.com", Body: "  <p>Hi</p>"})

	m, err := mail.ReadMessage(bytes.NewReader(ts.Messages()[0].Data))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Header.Get("From"); got != "<noreply@herald.test>" {
		t.Errorf("From without a name = %q", got)
	}
	if got, want := m.Header.Get("Subject"), long+" Bcc: eve@example.com"; got != want {
		t.Errorf("Subject = %q, want %q (folded, CRLF flattened)", got, want)
	}
	if got := m.Header.Get("Bcc"); got != "" {
		t.Errorf("a CRLF in the subject injected Bcc: %q", got)
	}
	if got := m.Header.Get("Content-Type"); got != "text/html; charset=utf-8" {
		t.Errorf("Content-Type of an HTML body = %q", got)
	}
}

func TestAuth(t *testing.T) {
	const user, pass = "herald", "s3cr3t-P@ss"
	for _, tc := range []struct {
		name  string
		mechs []string
		sec   testsmtp.Security
	}{
		{"PLAIN", []string{sasl.Plain}, testsmtp.Plain},
		{"PLAIN over STARTTLS", []string{sasl.Plain}, testsmtp.StartTLS},
		{"LOGIN only", []string{sasl.Login}, testsmtp.Plain},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, testsmtp.Options{Security: tc.sec, User: user, Password: pass, Mechs: tc.mechs})
			cfg := ts.cfg
			cfg.Username, cfg.Password = user, pass
			send(t, newSender(t, ts.opts), cfg, hello)
			if got := ts.Messages(); len(got) != 1 || got[0].User != user {
				t.Fatalf("received %+v, want one message sent as %s", got, user)
			}
		})
	}

	t.Run("wrong password", func(t *testing.T) {
		ts := startServer(t, testsmtp.Options{User: user, Password: pass, Mechs: []string{sasl.Plain}})
		cfg := ts.cfg
		cfg.Username, cfg.Password = user, "wrong-password"
		_, err := newSender(t, ts.opts).Send(context.Background(), cfg, hello)
		if !errors.Is(err, smtp.ErrRejected) || errors.Is(err, smtp.ErrUnavailable) {
			t.Fatalf("err = %v, want ErrRejected only", err)
		}
		var e *smtp.Error
		if !errors.As(err, &e) || e.Command != "AUTH" || e.Code != 535 || e.EnhancedCode != "5.7.8" || e.Temporary {
			t.Errorf("err = %#v, want a permanent AUTH 535 5.7.8", e)
		}
		if n := ts.Accepted(); n != 0 {
			t.Errorf("server accepted %d messages", n)
		}
	})

	t.Run("no mechanism offered", func(t *testing.T) {
		ts := startServer(t, testsmtp.Options{})
		cfg := ts.cfg
		cfg.Username, cfg.Password = user, pass
		_, err := newSender(t, ts.opts).Send(context.Background(), cfg, hello)
		if !errors.Is(err, smtp.ErrRejected) || !strings.Contains(err.Error(), "AUTH") {
			t.Fatalf("err = %v, want ErrRejected naming AUTH", err)
		}
	})
}

func TestPasswordNeverInErrors(t *testing.T) {
	const user, pass = "herald", "s3cr3t-P@ss"
	forms := []string{
		pass,
		base64.StdEncoding.EncodeToString([]byte(pass)),
		base64.StdEncoding.EncodeToString([]byte("\x00" + user + "\x00" + pass)),
	}
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()

	echo := startServer(t, testsmtp.Options{User: "someone-else", Password: "other", Mechs: []string{sasl.Plain}, EchoSecret: true})
	noAuth := startServer(t, testsmtp.Options{})
	rejecting := startServer(t, testsmtp.Options{OnRcpt: func(string) error {
		return &gosmtp.SMTPError{Code: 550, Message: "no relay for " + pass}
	}})
	untrusted := startServer(t, testsmtp.Options{Security: testsmtp.StartTLS})

	for _, tc := range []struct {
		name string
		ts   *testServer
		opts smtp.Options
		port int
	}{
		{"server echoes credentials", echo, echo.opts, 0},
		{"no AUTH offered", noAuth, noAuth.opts, 0},
		{"reply quotes password", rejecting, rejecting.opts, 0},
		{"untrusted certificate", untrusted, smtp.Options{}, 0},
		{"connection refused", noAuth, noAuth.opts, closedPort},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.ts.cfg
			cfg.Username, cfg.Password = user, pass
			if tc.port != 0 {
				cfg.Port = tc.port
			}
			_, err := newSender(t, tc.opts).Send(context.Background(), cfg, hello)
			if err == nil {
				t.Fatal("Send succeeded, want an error")
			}
			texts := []string{fmt.Sprintf("%v", err), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)}
			for e := err; e != nil; e = errors.Unwrap(e) {
				texts = append(texts, e.Error())
			}
			for _, text := range texts {
				for _, form := range forms {
					if strings.Contains(text, form) {
						t.Errorf("error text %q contains the password (as %q)", text, form)
					}
				}
			}
		})
	}

	t.Run("Config printing", func(t *testing.T) {
		cfg := smtp.Config{Host: "h", Port: 25, Username: user, Password: pass, FromEmail: "a@b.c"}
		var logged bytes.Buffer
		slog.New(slog.NewJSONHandler(&logged, nil)).Info("channel", "cfg", cfg)
		for _, text := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), logged.String()} {
			if strings.Contains(text, pass) {
				t.Errorf("%q shows the password", text)
			}
		}
	})
}

func TestTransientThenSuccess(t *testing.T) {
	script := testsmtp.Options{OnData: func(n int, _ *gosmtp.Conn) error {
		if n == 1 {
			return &gosmtp.SMTPError{Code: 451, EnhancedCode: gosmtp.EnhancedCode{4, 3, 0}, Message: "try again later"}
		}
		return nil
	}}
	ts := startServer(t, script)
	s := newSender(t, ts.opts)

	_, err := s.Send(context.Background(), ts.cfg, hello)
	if !errors.Is(err, smtp.ErrUnavailable) || errors.Is(err, smtp.ErrRejected) {
		t.Fatalf("first Send: err = %v, want ErrUnavailable only", err)
	}
	var e *smtp.Error
	if !errors.As(err, &e) || e.Code != 451 || e.EnhancedCode != "4.3.0" || e.Command != "DATA" || !e.Temporary {
		t.Errorf("first Send: err = %#v, want a temporary DATA 451 4.3.0", e)
	}
	send(t, s, ts.cfg, hello)
	ts.wantCounts(t, 1, 1, "the session survives a 451")
}

func TestRejected(t *testing.T) {
	script := testsmtp.Options{OnRcpt: func(to string) error {
		if to == "nobody@example.com" {
			return &gosmtp.SMTPError{Code: 550, EnhancedCode: gosmtp.EnhancedCode{5, 1, 1}, Message: "no such user"}
		}
		return nil
	}}
	ts := startServer(t, script)
	s := newSender(t, ts.opts)

	_, err := s.Send(context.Background(), ts.cfg, smtp.Message{To: "nobody@example.com", Subject: "x", Body: "x"})
	if !errors.Is(err, smtp.ErrRejected) || errors.Is(err, smtp.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrRejected only", err)
	}
	var e *smtp.Error
	if !errors.As(err, &e) || e.Code != 550 || e.EnhancedCode != "5.1.1" || e.Command != "RCPT" {
		t.Errorf("err = %#v, want RCPT 550 5.1.1", e)
	}
	if want := "smtp: RCPT: 550 5.1.1 no such user"; err.Error() != want {
		t.Errorf("err.Error() = %q, want %q", err, want)
	}
	if _, ok := errors.AsType[*gosmtp.SMTPError](err); !ok {
		t.Errorf("err does not unwrap to *gosmtp.SMTPError")
	}

	send(t, s, ts.cfg, hello)
	if got := ts.Messages(); len(got) != 1 || got[0].To[0] != hello.To {
		t.Errorf("received %+v, want only the message to %s", got, hello.To)
	}
	if n := ts.Connections(); n != 1 {
		t.Errorf("server saw %d connections, want 1 (RSET keeps the session)", n)
	}
}

func TestSMTPUTF8Needed(t *testing.T) {
	ts := startServer(t, testsmtp.Options{})
	s := newSender(t, ts.opts)
	_, err := s.Send(context.Background(), ts.cfg, smtp.Message{To: "josé@example.com", Subject: "x", Body: "x"})
	e, ok := errors.AsType[*smtp.Error](err)
	if !errors.Is(err, smtp.ErrRejected) || !ok || e.Command != "MAIL" || !strings.Contains(e.Message, "SMTPUTF8") {
		t.Fatalf("err = %v, want a permanent MAIL error naming SMTPUTF8", err)
	}
	send(t, s, ts.cfg, hello)
	if n := ts.Connections(); n != 1 {
		t.Errorf("%d connections, want 1: the session survives a refusal decided locally", n)
	}
}

func TestConnectionReuse(t *testing.T) {
	ts := startServer(t, testsmtp.Options{Security: testsmtp.StartTLS})
	s := newSender(t, ts.opts)
	for range 3 {
		send(t, s, ts.cfg, hello)
	}
	if n := ts.Connections(); n != 1 {
		t.Errorf("3 sends on one channel used %d connections, want 1", n)
	}

	other := ts.cfg
	other.FromEmail = "alerts@herald.test"
	send(t, s, other, hello)
	if n := ts.Connections(); n != 2 {
		t.Errorf("another channel used %d connections in all, want 2", n)
	}
	if n := ts.Accepted(); n != 4 {
		t.Errorf("server accepted %d messages, want 4", n)
	}
}

func TestNoReuse(t *testing.T) {
	ts := startServer(t, testsmtp.Options{})
	opts := ts.opts
	opts.MaxIdlePerChannel = -1
	s := newSender(t, opts)
	send(t, s, ts.cfg, hello)
	send(t, s, ts.cfg, hello)
	if n := ts.Connections(); n != 2 {
		t.Errorf("MaxIdlePerChannel -1: %d connections for 2 sends, want 2", n)
	}
}

func TestIdleTimeout(t *testing.T) {
	ts := startServer(t, testsmtp.Options{})
	opts := ts.opts
	opts.IdleTimeout = 20 * time.Millisecond
	s := newSender(t, opts)
	send(t, s, ts.cfg, hello)
	testwait.For(t, "the idle session to end", func() bool { return ts.Logouts() == 1 })
	send(t, s, ts.cfg, hello)
	if n := ts.Connections(); n != 2 {
		t.Errorf("%d connections, want 2 (the idle one expired)", n)
	}
}

func TestStaleSessionReplaced(t *testing.T) {
	for _, tc := range []struct {
		name  string
		check time.Duration
	}{
		{"NOOP finds out", -1},        // every reuse is checked
		{"MAIL finds out", time.Hour}, // reused unchecked: the retry before DATA
		{"the default finds out", 0},  // reused within 1s: unchecked
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, testsmtp.Options{})
			opts := ts.opts
			opts.CheckAfterIdle = tc.check
			s := newSender(t, opts)
			send(t, s, ts.cfg, hello)
			ts.CloseConns() // the server drops the idle session
			send(t, s, ts.cfg, hello)
			ts.wantCounts(t, 2, 2, "the dropped session is not reused")
		})
	}
}

func TestMaxOpenPerChannel(t *testing.T) {
	script := testsmtp.Options{OnData: func(int, *gosmtp.Conn) error {
		time.Sleep(5 * time.Millisecond) // the sends overlap
		return nil
	}}
	ts := startServer(t, script)
	opts := ts.opts
	opts.MaxOpenPerChannel, opts.MaxIdlePerChannel = 2, 2
	s := newSender(t, opts)
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if _, err := s.Send(context.Background(), ts.cfg, hello); err != nil {
				t.Errorf("Send: %v", err)
			}
		})
	}
	wg.Wait()
	ts.wantCounts(t, 20, 2, "MaxOpenPerChannel")
}

func TestMaxOpenWaitEndsWithCtx(t *testing.T) {
	release := make(chan struct{})
	script := testsmtp.Options{OnData: func(n int, _ *gosmtp.Conn) error {
		if n == 1 {
			<-release
		}
		return nil
	}}
	ts := startServer(t, script)
	opts := ts.opts
	opts.MaxOpenPerChannel = 1
	s := newSender(t, opts)
	first := make(chan error, 1)
	go func() {
		_, err := s.Send(context.Background(), ts.cfg, hello)
		first <- err
	}()
	testwait.For(t, "the first send to hold the only session", func() bool { return ts.Connections() == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := s.Send(ctx, ts.cfg, hello)
	if !errors.Is(err, smtp.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a send waiting for a session past its deadline: %v, want ErrUnavailable and DeadlineExceeded", err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("first send: %v", err)
	}
	send(t, s, ts.cfg, hello) // the session came back: no new connection
	if n := ts.Connections(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

func TestRetryBeforeData(t *testing.T) {
	script := testsmtp.Options{OnMail: func(n int, c *gosmtp.Conn) error {
		if n == 2 { // the reused session dies after NOOP, at MAIL
			c.Close()
		}
		return nil
	}}
	ts := startServer(t, script)
	s := newSender(t, ts.opts)
	send(t, s, ts.cfg, hello)
	send(t, s, ts.cfg, hello)
	ts.wantCounts(t, 2, 2, "one retry on a new one")
}

func TestNoRetryAfterData(t *testing.T) {
	script := testsmtp.Options{OnData: func(n int, c *gosmtp.Conn) error {
		if n == 2 { // the server takes the message, then the reply is lost
			c.Close()
		}
		return nil
	}}
	ts := startServer(t, script)
	s := newSender(t, ts.opts)
	send(t, s, ts.cfg, hello)
	_, err := s.Send(context.Background(), ts.cfg, hello)
	if !errors.Is(err, smtp.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if datas := ts.Bodies(); datas != 2 {
		t.Errorf("the server saw %d message bodies, want 2: no resend after DATA", datas)
	}
}

func TestContextEndsSend(t *testing.T) {
	release := make(chan struct{})
	script := testsmtp.Options{OnData: func(int, *gosmtp.Conn) error {
		<-release
		return nil
	}}
	ts := startServer(t, script)
	t.Cleanup(func() { close(release) }) // runs before the server closes
	s := newSender(t, ts.opts)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := s.Send(ctx, ts.cfg, hello)
	if !errors.Is(err, smtp.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrUnavailable and context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Send returned after %v, want soon after the deadline", d)
	}

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Send(cancelled, ts.cfg, hello); !errors.Is(err, context.Canceled) || !errors.Is(err, smtp.ErrUnavailable) {
		t.Errorf("Send with a cancelled ctx: err = %v", err)
	}
}

func TestUntrustedCertificate(t *testing.T) {
	ts := startServer(t, testsmtp.Options{Security: testsmtp.StartTLS})
	_, err := newSender(t, smtp.Options{}).Send(context.Background(), ts.cfg, hello)
	if !errors.Is(err, smtp.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if _, ok := errors.AsType[*tls.CertificateVerificationError](err); !ok {
		t.Errorf("err = %v, want it to wrap the certificate verification error", err)
	}
	if n := ts.Accepted(); n != 0 {
		t.Errorf("server accepted %d messages over an untrusted session", n)
	}
}

func TestInvalid(t *testing.T) {
	_, err := newSender(t, smtp.Options{}).Send(context.Background(), smtp.Config{Port: 70000, FromEmail: "Bob <bob@example.com>"}, smtp.Message{To: "not an address"})
	if !errors.Is(err, smtp.ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
	for _, want := range []string{"host", "port", "fromEmail", "to"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %q, want it to name %s", err, want)
		}
	}

	defer func() {
		if recover() == nil {
			t.Error("NewSender with a bad LocalName did not panic")
		}
	}()
	smtp.NewSender(smtp.Options{LocalName: "bad\r\nname"})
}

func TestClose(t *testing.T) {
	ts := startServer(t, testsmtp.Options{})
	s := smtp.NewSender(ts.opts)
	send(t, s, ts.cfg, hello)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the idle session to end", func() bool { return ts.Logouts() == 1 })
	if _, err := s.Send(context.Background(), ts.cfg, hello); !errors.Is(err, smtp.ErrClosed) {
		t.Errorf("Send after Close: err = %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestConcurrentSends(t *testing.T) {
	const workers, each = 8, 10
	ts := startServer(t, testsmtp.Options{Security: testsmtp.StartTLS, Discard: true})
	opts := ts.opts
	opts.MaxIdlePerChannel = workers
	s := newSender(t, opts)
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for range workers {
		wg.Go(func() {
			for range each {
				if _, err := s.Send(context.Background(), ts.cfg, hello); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := ts.Accepted(); n != workers*each {
		t.Errorf("server accepted %d messages, want %d", n, workers*each)
	}
	if n := ts.Connections(); n > workers {
		t.Errorf("%d connections for %d workers", n, workers)
	}
}

// BenchmarkSend measures sequential sends on one reused plain session.
func BenchmarkSend(b *testing.B) {
	ts := startServer(b, testsmtp.Options{Discard: true})
	s := newSender(b, ts.opts)
	ctx := context.Background()
	for b.Loop() {
		if _, err := s.Send(ctx, ts.cfg, hello); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "sends/s")
}

// BenchmarkSendParallel measures concurrent sends over STARTTLS sessions.
func BenchmarkSendParallel(b *testing.B) {
	ts := startServer(b, testsmtp.Options{Security: testsmtp.StartTLS, Discard: true})
	opts := ts.opts
	opts.MaxIdlePerChannel = 64
	s := newSender(b, opts)
	ctx := context.Background()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Send(ctx, ts.cfg, hello); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "sends/s")
}

func TestSendWithMessageID(t *testing.T) {
	ts := startServer(t, testsmtp.Options{})
	s := newSender(t, ts.opts)
	msg := hello
	msg.MessageID = "k5v2q7.herald@herald.test"
	for range 2 {
		if res := send(t, s, ts.cfg, msg); res.MessageID != msg.MessageID {
			t.Fatalf("Result.MessageID = %q, want %q", res.MessageID, msg.MessageID)
		}
	}
	for i, rcv := range ts.Messages() {
		m, err := mail.ReadMessage(bytes.NewReader(rcv.Data))
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Header.Get("Message-ID"); got != "<"+msg.MessageID+">" {
			t.Errorf("message %d: Message-ID = %q, want <%s>", i, got, msg.MessageID)
		}
	}

	for _, bad := range []string{"no-at-sign", "a@", "@b", "a b@c", "a@b@c", "a..b@c", "<a@b>", "a@b\r\nBcc: x@y", strings.Repeat("a", 900) + "@b"} {
		msg.MessageID = bad
		if _, err := s.Send(context.Background(), ts.cfg, msg); !errors.Is(err, smtp.ErrInvalid) {
			t.Errorf("MessageID %q: err = %v, want ErrInvalid", bad, err)
		}
	}
}
