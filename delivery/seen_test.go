package delivery_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/internal/testsmtp"
)

// apiRequests records the JetStream API requests every client of the
// server makes while it subscribes.
type apiRequests struct {
	mu   sync.Mutex
	seen []string // subject, and the request body when it has one
}

func watchAPI(t *testing.T, nc *nats.Conn) *apiRequests {
	t.Helper()
	r := &apiRequests{}
	sub, err := nc.Subscribe("$JS.API.>", func(m *nats.Msg) {
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
func TestSeenSendReadsNothingFromTheLog(t *testing.T) {
	m := testsmtp.Start(t, testsmtp.Options{})
	f := newFixture(t, m, false, nil)
	svc := newDirectService(t, f, f.dataDir, nil)
	ctx := context.Background()
	seen, err := f.h.Log().LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.h.Store().WaitFor(ctx, seen); err != nil {
		t.Fatal(err)
	}
	nc := f.h.Log().Conn()
	api := watchAPI(t, nc)

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
