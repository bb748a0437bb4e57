package devmail_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	netsmtp "net/smtp"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	gosmtp "github.com/emersion/go-smtp"

	"github.com/heraldhq/herald/delivery/smtp"
	"github.com/heraldhq/herald/devmail"
	"github.com/heraldhq/herald/internal/testwait"
)

// startDevmail runs a devmail on free loopback ports until the test ends.
func startDevmail(t testing.TB, cfg devmail.Config) *devmail.Server {
	t.Helper()
	cfg.SMTPAddr, cfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Logger = slog.New(slog.DiscardHandler)
	srv, err := devmail.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return srv
}

// channel is an email-smtp channel config pointing at srv.
func channel(t testing.TB, srv *devmail.Server) smtp.Config {
	t.Helper()
	host, port, err := net.SplitHostPort(srv.SMTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	p, _ := net.LookupPort("tcp", port)
	return smtp.Config{Host: host, Port: p, FromEmail: "noreply@herald.test", FromName: "Herald Café"}
}

func getJSON(t *testing.T, url string, status int, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != status {
		t.Fatalf("GET %s: %s, want %d", url, resp.Status, status)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("GET %s: Content-Type %q", url, ct)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

func TestCatchAndList(t *testing.T) {
	srv := startDevmail(t, devmail.Config{})
	base := "http://" + srv.HTTPAddr()
	sender := smtp.NewSender(smtp.Options{})
	defer sender.Close()

	cfg := channel(t, srv)
	cfg.Username, cfg.Password = "anyone", "any password" // AUTH PLAIN, any credentials
	msg := smtp.Message{To: "ada@example.com", Subject: "Grüße, Ada", Body: "Hello Ada,\nünïcödé = fine.\n"}
	res, err := sender.Send(context.Background(), cfg, msg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Inbox().Wait(ctx, 1); err != nil {
		t.Fatal(err)
	}

	var list struct{ Messages []devmail.Message }
	getJSON(t, base+"/api/messages", http.StatusOK, &list)
	if len(list.Messages) != 1 {
		t.Fatalf("API lists %d messages, want 1", len(list.Messages))
	}
	m := list.Messages[0]
	checks := []struct{ field, got, want string }{
		{"from", m.From, "noreply@herald.test"},
		{"to", strings.Join(m.To, ","), "ada@example.com"},
		{"subject", m.Subject, msg.Subject},
		{"messageId", m.MessageID, res.MessageID},
		{"contentType", m.ContentType, "text/plain"},
		{"body", m.Body, "Hello Ada,\r\nünïcödé = fine.\r\n"},
		{"headers.From", strings.Join(m.Headers["From"], ","), "Herald Café <noreply@herald.test>"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.field, c.got, c.want)
		}
	}
	if time.Since(m.Date) > time.Minute || time.Since(m.ReceivedAt) > time.Minute {
		t.Errorf("date %v, receivedAt %v: want about now", m.Date, m.ReceivedAt)
	}
	if !strings.Contains(m.Raw, "Content-Transfer-Encoding: quoted-printable") {
		t.Errorf("raw lacks the original encoding: %q", m.Raw)
	}

	var one devmail.Message
	getJSON(t, base+"/api/messages/"+m.ID, http.StatusOK, &one)
	if one.ID != m.ID || one.Subject != m.Subject {
		t.Errorf("GET one = %+v, want the listed message", one)
	}
	var notFound struct{ Error string }
	getJSON(t, base+"/api/messages/999", http.StatusNotFound, &notFound)
	if notFound.Error == "" {
		t.Error("404 without an error message")
	}
}

func TestPage(t *testing.T) {
	srv := startDevmail(t, devmail.Config{})
	sender := smtp.NewSender(smtp.Options{})
	defer sender.Close()
	for _, subject := range []string{"First", "<script>alert(1)</script>"} {
		if _, err := sender.Send(context.Background(), channel(t, srv), smtp.Message{To: "ada@example.com", Subject: subject, Body: "<p>hi</p>"}); err != nil {
			t.Fatal(err)
		}
	}

	resp, err := http.Get("http://" + srv.HTTPAddr() + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	page := string(body)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	if strings.Contains(page, "<script>alert") || !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the page does not escape the subject")
	}
	if !strings.Contains(page, "&lt;p&gt;hi&lt;/p&gt;") {
		t.Error("the page does not show the HTML body escaped")
	}
	if i, j := strings.Index(page, "alert(1)"), strings.Index(page, "First"); i < 0 || j < 0 || i > j {
		t.Error("the page does not list the newest message first")
	}

	resp404, err := http.Get("http://" + srv.HTTPAddr() + "/nothing-here")
	if err != nil {
		t.Fatal(err)
	}
	resp404.Body.Close()
	if resp404.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nothing-here: %s", resp404.Status)
	}
}

func TestClearAPI(t *testing.T) {
	srv := startDevmail(t, devmail.Config{})
	srv.Inbox().Add(devmail.Message{Subject: "x"})
	req, _ := http.NewRequest(http.MethodDelete, "http://"+srv.HTTPAddr()+"/api/messages", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || srv.Inbox().Len() != 0 {
		t.Errorf("DELETE: %s, %d messages left", resp.Status, srv.Inbox().Len())
	}
}

// TestAcceptsAnything sends through other clients: no AUTH, AUTH LOGIN, and
// a hand-written multipart message with a base64 part and encoded subject.
func TestAcceptsAnything(t *testing.T) {
	srv := startDevmail(t, devmail.Config{MaxMessages: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	raw := "From: Someone <someone@elsewhere.test>\r\n" +
		"To: a@x.test, b@y.test\r\n" +
		"Subject: =?UTF-8?B?w4dhIHZhIT8=?=\r\n" +
		"Message-ID: <abc@elsewhere.test>\r\n" +
		"MIME-Version: 1.0\r\n" +
		"Content-Type: multipart/alternative; boundary=XYZ\r\n" +
		"\r\n" +
		"--XYZ\r\n" +
		"Content-Type: text/html; charset=utf-8\r\n" +
		"\r\n" +
		"<p>html</p>\r\n" +
		"--XYZ\r\n" +
		"Content-Type: text/plain; charset=utf-8\r\n" +
		"Content-Transfer-Encoding: base64\r\n" +
		"\r\n" +
		"w4dhIHZhIGJpZW4K\r\n" +
		"--XYZ--\r\n"
	if err := netsmtp.SendMail(srv.SMTPAddr(), nil, "someone@elsewhere.test", []string{"a@x.test", "b@y.test"}, []byte(raw)); err != nil {
		t.Fatal(err)
	}
	if err := srv.Inbox().Wait(ctx, 1); err != nil {
		t.Fatal(err)
	}
	m := srv.Inbox().Messages()[0]
	if m.Subject != "Ça va!?" || m.Body != "Ça va bien\n" || m.ContentType != "text/plain" ||
		m.MessageID != "abc@elsewhere.test" || len(m.To) != 2 {
		t.Errorf("multipart message parsed as %+v", m)
	}

	c, err := gosmtp.Dial(srv.SMTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Auth(sasl.NewLoginClient("user", "pass")); err != nil {
		t.Fatalf("AUTH LOGIN: %v", err)
	}
	if err := c.SendMail("x@x.test", []string{"y@y.test"}, strings.NewReader("not really a message")); err != nil {
		t.Fatal(err)
	}
	c.Quit()
	if err := srv.Inbox().Wait(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if m := srv.Inbox().Messages()[0]; !strings.Contains(m.Body, "not really a message") {
		t.Errorf("an unparsable message is kept with its raw body, got %+v", m)
	}

	if err := netsmtp.SendMail(srv.SMTPAddr(), nil, "a@a.test", []string{"b@b.test"}, []byte("Subject: third\r\n\r\nx\r\n")); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the third message", func() bool { return srv.Inbox().Messages()[0].Subject == "third" })
	if n := srv.Inbox().Len(); n != 2 {
		t.Errorf("MaxMessages 2 holds %d messages", n)
	}
}

func TestRunLifecycle(t *testing.T) {
	srv, err := devmail.NewServer(devmail.Config{SMTPAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	smtpAddr, httpAddr := srv.SMTPAddr(), srv.HTTPAddr()

	// A second server on the same SMTP address binds nothing.
	clash, _ := devmail.NewServer(devmail.Config{SMTPAddr: smtpAddr, HTTPAddr: "127.0.0.1:0"})
	if err := clash.Listen(); err == nil {
		t.Error("Listen on a taken address succeeded")
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()

	// An idle SMTP session must not hold the shutdown up.
	idle, err := gosmtp.Dial(smtpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if err := idle.Noop(); err != nil {
		t.Fatal(err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after cancel: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	for _, addr := range []string{smtpAddr, httpAddr} {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after Run returned", addr)
		}
	}
	if err := srv.Run(context.Background()); !errors.Is(err, devmail.ErrServerClosed) {
		t.Errorf("second Run: %v, want ErrServerClosed", err)
	}
	if err := srv.Listen(); !errors.Is(err, devmail.ErrServerClosed) {
		t.Errorf("Listen after Run: %v, want ErrServerClosed", err)
	}

	if _, err := devmail.NewServer(devmail.Config{SMTPAddr: "no-port", MaxMessages: -1}); err == nil ||
		!strings.Contains(err.Error(), "SMTPAddr") || !strings.Contains(err.Error(), "MaxMessages") {
		t.Errorf("NewServer with a bad config: %v, want both problems", err)
	}
}

// BenchmarkTimeToInbox measures one message from Sender.Send until the
// inbox's OnMessage hook sees it, over a reused session.
func BenchmarkTimeToInbox(b *testing.B) {
	srv := startDevmail(b, devmail.Config{})
	caught := make(chan struct{}, 1)
	srv.Inbox().OnMessage(func(devmail.Message) { caught <- struct{}{} })
	sender := smtp.NewSender(smtp.Options{})
	defer sender.Close()
	cfg := channel(b, srv)
	msg := smtp.Message{To: "ada@example.com", Subject: "bench", Body: "Hello Ada"}
	ctx := context.Background()
	for b.Loop() {
		if _, err := sender.Send(ctx, cfg, msg); err != nil {
			b.Fatal(err)
		}
		<-caught
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}
