package webhooks_test

import (
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testlog"
	"github.com/heraldhq/herald/internal/testwait"
)

// TestFailedAttemptLogsNoURLSecrets: an attempt that fails at the network
// level is logged with the endpoint's host and path, never with its URL's
// query (Go's error quotes the whole URL).
func TestFailedAttemptLogsNoURLSecrets(t *testing.T) {
	var logs testlog.Buffer
	h := testherald.Start(t, testherald.Options{Env: map[string]string{"HERALD_WEBHOOK_RETRY_BASE": "100ms"},
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	f := newFixture(t, h, "Acme")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := ln.Addr().String()
	ln.Close() // nothing listens: every attempt is refused
	// Credentials in the URL are refused at save; a token in the query is not.
	f.webhook("http://"+host+"/hook?token=SECRET", events.HookDeliverySent)
	f.inApp("run_1")
	testwait.For(t, "a failed attempt logged", func() bool { return strings.Contains(logs.String(), "webhooks: attempt failed") })
	out := logs.String()
	for _, secret := range []string{"SECRET", "token="} {
		if strings.Contains(out, secret) {
			t.Errorf("%q in the log:\n%s", secret, out)
		}
	}
	if !strings.Contains(out, "http://"+host+"/hook") {
		t.Errorf("the endpoint's host and path are not in the log:\n%s", out)
	}
}
