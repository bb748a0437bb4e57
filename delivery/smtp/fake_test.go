package smtp_test

import (
	"context"
	"errors"
	"net"
	"net/textproto"
	"strings"
	"testing"

	"github.com/heraldhq/herald/delivery/smtp"
)

// fakeServer accepts one connection on loopback and runs script on it, for
// server behaviour go-smtp's server will not produce. It returns a channel
// config pointing at it.
func fakeServer(t *testing.T, script func(c *textproto.Conn, raw net.Conn)) smtp.Config {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		raw, err := l.Accept()
		if err != nil {
			return
		}
		defer raw.Close()
		script(textproto.NewConn(raw), raw)
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
	})
	return smtp.Config{Host: "127.0.0.1", Port: l.Addr().(*net.TCPAddr).Port, FromEmail: "noreply@herald.test"}
}

// expect reads one command line and fails the test unless it starts with
// prefix.
func expect(t *testing.T, c *textproto.Conn, prefix string) string {
	line, err := c.ReadLine()
	if err != nil || !strings.HasPrefix(line, prefix) {
		t.Errorf("server read %q (%v), want %s", line, err, prefix)
	}
	return line
}

func TestGreetingRefused(t *testing.T) {
	for _, tc := range []struct {
		greeting string
		want     error
		code     int
		enhanced string
	}{
		{"554 5.7.1 no service for you", smtp.ErrRejected, 554, "5.7.1"},
		{"421 mx.test busy, try later", smtp.ErrUnavailable, 421, ""},
	} {
		t.Run(tc.greeting[:3], func(t *testing.T) {
			cfg := fakeServer(t, func(c *textproto.Conn, _ net.Conn) { c.PrintfLine("%s", tc.greeting) })
			_, err := newSender(t, smtp.Options{}).Send(context.Background(), cfg, hello)
			e, ok := errors.AsType[*smtp.Error](err)
			if !errors.Is(err, tc.want) || !ok || e.Command != "connect" || e.Code != tc.code || e.EnhancedCode != tc.enhanced {
				t.Errorf("err = %v (%#v), want %v from connect, %d %q", err, e, tc.want, tc.code, tc.enhanced)
			}
		})
	}
}

func TestSTARTTLSFailures(t *testing.T) {
	offer := func(c *textproto.Conn) {
		c.PrintfLine("220 mx.test ESMTP")
		expect(t, c, "EHLO localhost")
		c.PrintfLine("250-mx.test")
		c.PrintfLine("250 STARTTLS")
		expect(t, c, "STARTTLS")
	}
	t.Run("refused", func(t *testing.T) {
		cfg := fakeServer(t, func(c *textproto.Conn, _ net.Conn) {
			offer(c)
			c.PrintfLine("454 4.7.0 TLS not available")
		})
		_, err := newSender(t, smtp.Options{}).Send(context.Background(), cfg, hello)
		e, ok := errors.AsType[*smtp.Error](err)
		if !errors.Is(err, smtp.ErrUnavailable) || !ok || e.Command != "STARTTLS" || e.Code != 454 {
			t.Errorf("err = %v, want ErrUnavailable from STARTTLS 454, no fallback to plain", err)
		}
	})
	t.Run("data injected before the handshake", func(t *testing.T) {
		cfg := fakeServer(t, func(c *textproto.Conn, raw net.Conn) {
			offer(c)
			raw.Write([]byte("220 go ahead\r\n250 injected\r\n"))
		})
		_, err := newSender(t, smtp.Options{}).Send(context.Background(), cfg, hello)
		if !errors.Is(err, smtp.ErrUnavailable) || !strings.Contains(err.Error(), "after its STARTTLS reply") {
			t.Errorf("err = %v, want the injection refused", err)
		}
	})
}

// TestHELOOnlyServer checks a server that refuses EHLO: the session falls
// back to HELO and sends in plain.
func TestHELOOnlyServer(t *testing.T) {
	got := make(chan string, 1)
	cfg := fakeServer(t, func(c *textproto.Conn, _ net.Conn) {
		c.PrintfLine("220 mx.test SMTP")
		expect(t, c, "EHLO")
		c.PrintfLine("502 command not recognized")
		expect(t, c, "EHLO")
		c.PrintfLine("502 command not recognized")
		expect(t, c, "HELO localhost")
		c.PrintfLine("250 mx.test")
		expect(t, c, "MAIL FROM:<noreply@herald.test>")
		c.PrintfLine("250 ok")
		expect(t, c, "RCPT TO:<ada@example.com>")
		c.PrintfLine("250 ok")
		expect(t, c, "DATA")
		c.PrintfLine("354 go ahead")
		data, err := c.ReadDotBytes()
		if err != nil {
			t.Error(err)
		}
		got <- string(data)
		c.PrintfLine("250 queued")
		expect(t, c, "QUIT")
		c.PrintfLine("221 bye")
	})
	s := smtp.NewSender(smtp.Options{})
	if _, err := s.Send(context.Background(), cfg, hello); err != nil {
		t.Fatal(err)
	}
	if data := <-got; !strings.Contains(data, "Hello Ada") {
		t.Errorf("server received %q", data)
	}
	s.Close()
}
