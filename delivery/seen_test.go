package delivery_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/embedded"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/internal/testsmtp"
	"github.com/heraldhq/herald/secrets"
)

// apiRequests records the JetStream API requests one client of the
// server makes while it subscribes: those whose reply goes to an inbox of
// the client's connection.
type apiRequests struct {
	mu   sync.Mutex
	seen []string // subject, and the request body when it has one
}

// watchAPI records the requests of client, subscribing on nc.
func watchAPI(t *testing.T, nc, client *nats.Conn) *apiRequests {
	t.Helper()
	inbox := client.NewRespInbox()
	prefix := inbox[:strings.LastIndexByte(inbox, '.')+1]
	r := &apiRequests{}
	sub, err := nc.Subscribe("$JS.API.>", func(m *nats.Msg) {
		if !strings.HasPrefix(m.Reply, prefix) {
			return
		}
		r.mu.Lock()
		r.seen = append(r.seen, m.Subject+" "+string(m.Data))
		r.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return r
}

// matching returns the requests recorded so far that contain s.
func (r *apiRequests) matching(t *testing.T, nc *nats.Conn, s string) []string {
	t.Helper()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, req := range r.seen {
		if strings.Contains(req, s) {
			out = append(out, req)
		}
	}
	return out
}

// TestSeenSendReadsNothingFromTheLog: a send of a new key whose caller
// names what it has seen (the engine) costs its two appends: it reads
// neither the key's ledger nor the stream's last sequence. A repeat of
// the key still answers the first result and sends nothing.
//
// The send has a connection of its own, to a server the service reaches
// over TCP, so that only the send's requests are counted and not those of
// the service's background work (a consumer's start, a follower's catch-up).
func TestSeenSendReadsNothingFromTheLog(t *testing.T) {
	ctx := context.Background()
	srv, err := embedded.Start(embedded.Config{StoreDir: t.TempDir(), Listen: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	m := testsmtp.Start(t, testsmtp.Options{})
	env := map[string]string{
		"HERALD_NATS_URL":             srv.ClientURL(),
		"HERALD_ALLOW_PRIVATE_EGRESS": "true",
		"HERALD_MASTER_KEY":           base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)),
	}
	keys, _, err := secrets.LoadKeyring(func(k string) string { return env[k] }, "", false)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixtureEnv(t, m, false, nil, slog.LevelDebug, env)
	sendNC, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sendNC.Close)
	sendLog, err := eventlog.Attach(ctx, sendNC, eventlog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	svc := newDirectService(t, f, f.dataDir, func(c *delivery.Config) { c.Log, c.Keys = sendLog, keys })
	seen, err := f.h.Log().LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.h.Store().WaitFor(ctx, seen); err != nil {
		t.Fatal(err)
	}
	nc := f.h.Log().Conn()
	api := watchAPI(t, nc, sendNC)

	req := request("run_seen:s")
	req.Seen = seen
	first, err := svc.Deliver(ctx, f.tenant, req)
	if err != nil || first.Status != "sent" {
		t.Fatalf("Deliver = %+v, %v", first, err)
	}
	key := eventlog.Subject(f.tenant, eventlog.AggDelivery, "run_seen:s")
	if got := api.matching(t, nc, key); len(got) != 0 {
		t.Errorf("a new key's send read its ledger: %q", got)
	}
	if got := api.matching(t, nc, "STREAM.INFO"); len(got) != 0 {
		t.Errorf("a send with Seen read the stream's state: %q", got)
	}

	again, err := svc.Deliver(ctx, f.tenant, req)
	if err != nil || again != first {
		t.Fatalf("repeat = %+v, %v; want %+v", again, err, first)
	}
	if n := m.Accepted(); n != 1 {
		t.Fatalf("server received %d messages, want 1", n)
	}
}
