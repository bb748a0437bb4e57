package testsmtp

import (
	"context"
	"log/slog"
	"net"
	"testing"

	"github.com/heraldhq/herald/devmail"
)

// Catcher is a devmail catcher serving on loopback: a sink that accepts
// every message, for tests that count or read what arrived rather than
// script the server.
type Catcher struct {
	*devmail.Server
	Host string // the SMTP host, "127.0.0.1"
	Port int    // the SMTP port
}

// StartCatcher starts a devmail.Server with SMTP and HTTP on free loopback
// ports and its logs discarded; maxMessages is its inbox capacity (0:
// devmail.DefaultMaxMessages). t.Cleanup stops it and waits for Run to
// return.
func StartCatcher(t testing.TB, maxMessages int) *Catcher {
	t.Helper()
	srv, err := devmail.NewServer(devmail.Config{SMTPAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		MaxMessages: maxMessages, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	host, portText, err := net.SplitHostPort(srv.SMTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	port, err := net.LookupPort("tcp", portText)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return &Catcher{Server: srv, Host: host, Port: port}
}
