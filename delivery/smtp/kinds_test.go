package smtp_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/textproto"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery/provider"
	"github.com/heraldhq/herald/delivery/smtp"
	"github.com/heraldhq/herald/egress"
)

// scripted is a server that answers each step of one transaction with the
// reply given for it (250, 354 or 220 when none is given), "close" drops
// the connection instead of replying and "hang" stops answering.
func scripted(t *testing.T, replies map[string]string) smtp.Config {
	return fakeServer(t, func(c *textproto.Conn, raw net.Conn) {
		say := func(step, ok string) bool {
			switch r := replies[step]; r {
			case "":
				c.PrintfLine("%s", ok)
				return true
			case "close":
				raw.Close()
				return false
			case "hang":
				raw.SetReadDeadline(time.Now().Add(5 * time.Second))
				c.ReadLine() // until the client gives up and closes
				return false
			default:
				c.PrintfLine("%s", r)
				return false
			}
		}
		if !say("greeting", "220 mx.test ESMTP") {
			return
		}
		for range 2 { // startTLS's EHLO, then the client's own
			if _, err := c.ReadLine(); err != nil {
				return
			}
			c.PrintfLine("250 mx.test")
		}
		for _, step := range []string{"MAIL", "RCPT", "DATA"} {
			if _, err := c.ReadLine(); err != nil {
				return
			}
			ok := "250 ok"
			if step == "DATA" {
				ok = "354 go ahead"
			}
			if !say(step, ok) {
				c.ReadLine() // RSET or QUIT
				return
			}
		}
		if _, err := c.ReadDotBytes(); err != nil {
			return
		}
		say("body", "250 queued")
		c.ReadLine()
	})
}

// TestProviderKinds checks that every failure of Send matches exactly one
// of the provider kinds, the one CONTRACT.md §10 gives it.
func TestProviderKinds(t *testing.T) {
	kinds := []error{provider.ErrNotSent, provider.ErrOutcomeUnknown, provider.ErrRejected}
	refused := func(t *testing.T) smtp.Config {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		l.Close()
		return smtp.Config{Host: "127.0.0.1", Port: l.Addr().(*net.TCPAddr).Port, FromEmail: "noreply@herald.test"}
	}
	script := func(replies map[string]string) func(*testing.T) smtp.Config {
		return func(t *testing.T) smtp.Config { return scripted(t, replies) }
	}
	for _, tc := range []struct {
		name   string
		server func(*testing.T) smtp.Config
		opts   smtp.Options
		edit   func(*smtp.Config, *smtp.Message)
		want   error
	}{
		{name: "connection refused", server: refused, want: provider.ErrNotSent},
		{name: "dial refused by the egress policy", server: refused, want: provider.ErrNotSent,
			opts: smtp.Options{DialContext: func(context.Context, string, string) (net.Conn, error) {
				return nil, fmt.Errorf("dial: %w", egress.ErrRefused)
			}}},
		{name: "greeting 554", server: script(map[string]string{"greeting": "554 5.7.1 go away"}), want: provider.ErrNotSent},
		{name: "MAIL 550", server: script(map[string]string{"MAIL": "550 5.7.1 relaying denied"}), want: provider.ErrNotSent},
		{name: "MAIL 451", server: script(map[string]string{"MAIL": "451 4.3.0 later"}), want: provider.ErrNotSent},
		{name: "RCPT 550", server: script(map[string]string{"RCPT": "550 5.1.1 no such user"}), want: provider.ErrRejected},
		{name: "RCPT 450", server: script(map[string]string{"RCPT": "450 4.2.1 greylisted"}), want: provider.ErrNotSent},
		{name: "connection lost at RCPT", server: script(map[string]string{"RCPT": "close"}), want: provider.ErrNotSent},
		{name: "DATA 554", server: script(map[string]string{"DATA": "554 5.5.1 no valid recipients"}), want: provider.ErrNotSent},
		{name: "body 554", server: script(map[string]string{"body": "554 5.7.1 spam"}), want: provider.ErrRejected},
		{name: "body 451", server: script(map[string]string{"body": "451 4.3.0 queue full"}), want: provider.ErrNotSent},
		{name: "connection lost after the body", server: script(map[string]string{"body": "close"}), want: provider.ErrOutcomeUnknown},
		{name: "timeout after the body", server: script(map[string]string{"body": "hang"}), want: provider.ErrOutcomeUnknown,
			opts: smtp.Options{CommandTimeout: 200 * time.Millisecond}},
		{name: "invalid message", server: refused, want: provider.ErrRejected,
			edit: func(_ *smtp.Config, m *smtp.Message) { m.To = "not an address" }},
		{name: "invalid config", server: refused, want: provider.ErrNotSent,
			edit: func(c *smtp.Config, m *smtp.Message) { c.FromEmail = "nobody"; m.To = "not an address" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, msg := tc.server(t), hello
			if tc.edit != nil {
				tc.edit(&cfg, &msg)
			}
			_, err := newSender(t, tc.opts).Send(context.Background(), cfg, msg)
			var matched []error
			for _, k := range kinds {
				if errors.Is(err, k) {
					matched = append(matched, k)
				}
			}
			if len(matched) != 1 || matched[0] != tc.want {
				t.Errorf("err = %v matches %v, want only %v", err, matched, tc.want)
			}
		})
	}

	t.Run("closed sender", func(t *testing.T) {
		s := smtp.NewSender(smtp.Options{})
		s.Close()
		_, err := s.Send(context.Background(), refused(t), hello)
		if !errors.Is(err, smtp.ErrClosed) || !errors.Is(err, provider.ErrNotSent) || errors.Is(err, provider.ErrRejected) {
			t.Errorf("err = %v, want ErrClosed and only provider.ErrNotSent", err)
		}
	})
	t.Run("ctx ended after the body", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := newSender(t, smtp.Options{}).Send(ctx, scripted(t, map[string]string{"body": "hang"}), hello)
		if !errors.Is(err, provider.ErrOutcomeUnknown) || errors.Is(err, provider.ErrNotSent) {
			t.Errorf("err = %v, want only provider.ErrOutcomeUnknown", err)
		}
	})
}

// TestBadAddressMark: a 5xx reply to RCPT whose enhanced code says the
// address does not exist is marked provider.ErrBadAddress beside
// provider.ErrRejected; no other failure is.
func TestBadAddressMark(t *testing.T) {
	for _, tc := range []struct {
		step, reply string
		want        bool
	}{
		{"RCPT", "550 5.1.1 no such user", true},
		{"RCPT", "550 5.1.2 no such domain", true},
		{"RCPT", "553 5.1.3 bad address syntax", true},
		{"RCPT", "556 5.1.10 recipient address has null MX", true},
		{"RCPT", "550 5.1.0 address rejected", false},
		{"RCPT", "550 no such user", false}, // no enhanced code: maybe a policy
		{"RCPT", "550 5.7.1 relaying denied", false},
		{"RCPT", "550 5.1.8 bad sender domain", false},
		{"RCPT", "450 4.1.1 mailbox unavailable for now", false},
		{"MAIL", "550 5.1.1 sender unknown", false},
		{"body", "550 5.1.1 no such user", false},
	} {
		t.Run(tc.step+" "+tc.reply, func(t *testing.T) {
			_, err := newSender(t, smtp.Options{}).Send(context.Background(), scripted(t, map[string]string{tc.step: tc.reply}), hello)
			if err == nil {
				t.Fatal("sent")
			}
			if got := errors.Is(err, provider.ErrBadAddress); got != tc.want {
				t.Fatalf("err %v: marked ErrBadAddress %v, want %v", err, got, tc.want)
			}
			if tc.want && !errors.Is(err, provider.ErrRejected) {
				t.Fatalf("err %v: marked but not rejected", err)
			}
		})
	}
}
