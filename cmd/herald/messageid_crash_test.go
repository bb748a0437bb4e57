package main

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	gosmtp "github.com/emersion/go-smtp"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/internal/testapi"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testnet"
	"github.com/heraldhq/herald/internal/testsmtp"
	"github.com/heraldhq/herald/internal/testwait"
)

// TestCrashAfterTheServerTookTheMessage kills the child (SIGKILL) in the
// one window where a send is made twice: the SMTP server has read the
// message and holds its 250, and the process has recorded no outcome.
// The server then keeps the message, as a server whose reply was lost
// does. After the restart the takeover sends it again: the second copy
// carries the first one's Message-ID, so that the receiver drops it, and
// the ledger shows the attempt replaced and the resend sent under that
// id.
func TestCrashAfterTheServerTookTheMessage(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: starts child processes")
	}
	t.Parallel() // it mostly waits on the child
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	mail := testsmtp.Start(t, testsmtp.Options{OnData: func(n int, _ *gosmtp.Conn) error {
		if n == 1 {
			close(held)
			<-release
		}
		return nil
	}})
	let := func() { once.Do(func() { close(release) }) }
	t.Cleanup(let) // before the server's cleanup, which would wait on the hook

	dataDir, addr := t.TempDir(), testnet.FreeAddr(t)
	child := startChild(t, dataDir, addr)
	tn, err := childAdmin(t, dataDir, addr).CreateTenant(t.Context(), "Held")
	if err != nil {
		t.Fatal(err)
	}
	a := newAPI(t, "http://"+addr, tn.APIKey)
	a.must("POST", "/v1/channels", map[string]any{"channelKey": "email-smtp",
		"config": map[string]any{"host": "127.0.0.1", "port": mail.Port, "fromEmail": "noreply@herald.test"}}, 201)
	a.must("PUT", "/v1/subscribers/u1", map[string]any{"contacts": map[string]any{"email": []string{"u1@example.com"}}}, 200, 201)
	testherald.ServeBridge(t, testapi.New("http://"+addr, tn.APIKey), bridge.NewRegistry().MustRegister(testherald.Ping(nil)))
	a.must("POST", "/v1/sync", nil, 200)

	body := a.must("POST", "/v1/events", map[string]any{"workflowId": "ping", "to": map[string]any{"subscriberId": "u1"}}, 202)
	var res struct{ Runs []struct{ RunID string } }
	if err := json.Unmarshal(body, &res); err != nil || len(res.Runs) != 1 {
		t.Fatalf("trigger answered %s", body)
	}
	runID := res.Runs[0].RunID
	select {
	case <-held:
	case <-time.After(testwait.HangGuard):
		t.Fatal("the message never reached the server")
	}
	child.Kill()
	let() // the server keeps the message; its 250 goes to a dead connection
	startChild(t, dataDir, addr)

	testwait.For(t, "the run completed after the restart", func() bool {
		st, body := a.do("GET", "/v1/runs/"+runID, nil)
		var run struct{ Status string }
		return st == http.StatusOK && json.Unmarshal(body, &run) == nil && run.Status == "completed"
	})
	msgs := mail.Messages()
	if len(msgs) != 2 {
		t.Fatalf("%d messages, want the one taken before the kill and the takeover's copy", len(msgs))
	}
	first, second := msgs[0].MessageID(), msgs[1].MessageID()
	if first == "" || second != first {
		t.Fatalf("the takeover sent Message-ID %q after %q: a receiver cannot tell it is the same message", second, first)
	}
	rows, err := testapi.All[struct {
		Status            string
		ProviderMessageID string
		Error             struct{ Code string }
	}](t.Context(), a.c, "/v1/deliveries?runId="+runID)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Status != "failed" || rows[0].Error.Code != "lease_expired" ||
		rows[1].Status != "sent" || rows[1].ProviderMessageID != first {
		t.Fatalf("deliveries %+v, want the killed attempt replaced (lease_expired) and the resend sent as %s", rows, first)
	}
}
