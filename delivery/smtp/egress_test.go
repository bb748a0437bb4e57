package smtp_test

import (
	"context"
	"errors"
	"net"
	"net/textproto"
	"strings"
	"testing"

	"github.com/emersion/go-sasl"
	"github.com/heraldhq/herald/delivery/smtp"
	"github.com/heraldhq/herald/egress"
	"github.com/heraldhq/herald/internal/testnet"
	"github.com/heraldhq/herald/internal/testsmtp"
)

// remoteAs dials as usual but makes the connection report another remote
// address: a loopback test server seen as one across a network.
func remoteAs(addr string) func(ctx context.Context, network, address string) (net.Conn, error) {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, network, address)
		if err != nil {
			return nil, err
		}
		return &seenAs{Conn: c, remote: &net.TCPAddr{IP: net.ParseIP(addr), Port: 25}}, nil
	}
}

type seenAs struct {
	net.Conn
	remote net.Addr
}

func (c *seenAs) RemoteAddr() net.Addr { return c.remote }

// TestAuthNeedsTLSAwayFromLoopback: with no STARTTLS on offer, a server
// that is not on loopback never receives the credentials, unless the
// channel allows it; with STARTTLS or on loopback they go as before.
func TestAuthNeedsTLSAwayFromLoopback(t *testing.T) {
	const user, pass = "herald", "s3cr3t-P@ss"
	for _, tc := range []struct {
		name     string
		sec      testsmtp.Security
		remote   string // "" = as dialled (loopback)
		insecure bool
		wantSent bool
	}{
		{"plain, remote", testsmtp.Plain, "198.51.100.7", false, false},
		{"plain, remote, allowInsecureAuth", testsmtp.Plain, "198.51.100.7", true, true},
		{"plain, loopback", testsmtp.Plain, "", false, true},
		{"STARTTLS, remote", testsmtp.StartTLS, "198.51.100.7", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, testsmtp.Options{Security: tc.sec, User: user, Password: pass, Mechs: []string{sasl.Plain}})
			cfg := ts.cfg
			cfg.Username, cfg.Password, cfg.AllowInsecureAuth = user, pass, tc.insecure
			opts := ts.opts
			if tc.remote != "" {
				opts.DialContext = remoteAs(tc.remote)
			}
			_, err := newSender(t, opts).Send(context.Background(), cfg, hello)
			if tc.wantSent {
				if err != nil || len(ts.Messages()) != 1 {
					t.Fatalf("err = %v, %d messages", err, len(ts.Messages()))
				}
				return
			}
			var e *smtp.Error
			if !errors.Is(err, smtp.ErrRejected) || !errors.As(err, &e) || e.Command != "AUTH" {
				t.Fatalf("err = %v, want a permanent AUTH refusal", err)
			}
			if msg := smtp.PublicMessage(err); !strings.Contains(msg, "TLS") {
				t.Errorf("public message %q does not say why", msg)
			}
			if ts.Accepted() != 0 {
				t.Fatal("the message went out")
			}
		})
	}
}

// TestEgressRefusedIsRejected: a dial the egress policy refuses fails the
// send for good, and the tenant's message names no address.
func TestEgressRefusedIsRejected(t *testing.T) {
	// A bare listener, not a testsmtp server: the refused send ends before
	// such a server would have started serving.
	l := testnet.Count(t)
	cfg := smtp.Config{Host: "localhost", Port: l.Port(), FromEmail: "noreply@herald.test"}
	_, err := newSender(t, smtp.Options{DialContext: egress.Policy{}.Dialer(0).DialContext}).Send(context.Background(), cfg, hello)
	if !errors.Is(err, smtp.ErrRejected) || !errors.Is(err, egress.ErrRefused) {
		t.Fatalf("err = %v, want ErrRejected and egress.ErrRefused", err)
	}
	if msg := smtp.PublicMessage(err); strings.Contains(msg, "127.0.0.1") || !strings.Contains(msg, "refused") {
		t.Errorf("public message %q", msg)
	}
	if l.Accepted() != 0 {
		t.Fatal("the server was reached")
	}
}

// TestPublicMessageHidesTheBanner: a TCP service that is no SMTP server
// answers with its banner; the tenant's message holds the reply code at
// most, never the banner.
func TestPublicMessageHidesTheBanner(t *testing.T) {
	for _, banner := range []string{"SSH-2.0-OpenSSH_9.6 internal-db-01", "554 internal-db-01 db_password=hunter2", "220 ok"} {
		cfg := fakeServer(t, func(c *textproto.Conn, raw net.Conn) {
			c.PrintfLine("%s", banner)
			if strings.HasPrefix(banner, "220") {
				c.ReadLine()
				c.PrintfLine("550 5.7.1 secret-relay.internal says db_password=hunter2")
			}
		})
		_, err := newSender(t, smtp.Options{}).Send(context.Background(), cfg, hello)
		if err == nil {
			t.Fatalf("%q: sent", banner)
		}
		msg := smtp.PublicMessage(err)
		if strings.Contains(msg, "internal") || strings.Contains(msg, "hunter2") || strings.Contains(msg, "OpenSSH") {
			t.Errorf("%q: public message %q", banner, msg)
		}
		if !strings.HasPrefix(msg, "smtp ") {
			t.Errorf("%q: public message %q", banner, msg)
		}
	}
}
