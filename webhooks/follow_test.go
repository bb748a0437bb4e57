package webhooks_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testwait"
)

// sources lists the webhooks source consumers on the EVENTS stream.
func sources(t *testing.T, h *testherald.Herald) []string {
	t.Helper()
	ctx := context.Background()
	st, err := h.Log().JetStream().Stream(ctx, eventlog.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	lister := st.ListConsumers(ctx)
	for info := range lister.Info() {
		if strings.HasPrefix(info.Name, "herald-webhooks-source") {
			out = append(out, info.Name)
		}
	}
	if err := lister.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// waitSources waits until the source consumers are exactly want.
func waitSources(t *testing.T, h *testherald.Herald, want []string) {
	t.Helper()
	slices.Sort(want)
	testwait.Until(t, "the source consumers", func() error {
		if got := sources(t, h); !slices.Equal(got, want) {
			return fmt.Errorf("%v, want %v", got, want)
		}
		return nil
	})
}

func tenantSources(tenant string) []string {
	var out []string
	for _, agg := range []string{"run", "delivery", "inbox"} {
		out = append(out, "herald-webhooks-source-"+tenant+"-"+agg)
	}
	return out
}

// TestSourcesFollowOnlyTenantsWithEndpoints: the events of a tenant
// without endpoints reach no source consumer; a tenant's sources exist
// while it has an endpoint, start right after the endpoint's creation (an
// event stored before the sources exist is still sent), and are deleted
// with its last endpoint; a restart prunes source consumers of no tenant.
func TestSourcesFollowOnlyTenantsWithEndpoints(t *testing.T) {
	dir := t.TempDir()
	h := startService(t, dir, nil)
	a := newFixture(t, h, "Acme")
	b := newFixture(t, h, "Globex")
	b.inApp("run_b0")
	time.Sleep(1500 * time.Millisecond) // more than one reconcile of the follower
	if got := sources(t, h); len(got) != 0 {
		t.Fatalf("source consumers %v while no tenant has an endpoint", got)
	}

	recv := newReceiver(t, nil)
	hookID, _ := a.webhook(recv.URL, events.HookDeliverySent)
	a.inApp("run_a1") // at once: likely before the follower saw the endpoint
	recv.waitFor(t, "the delivery.sent of run_a1", func(got []received) bool { return len(got) == 1 })
	waitSources(t, h, tenantSources(a.tenant))

	a.call("DELETE", "/v1/webhooks/"+hookID, nil, 204)
	waitSources(t, h, nil)

	// A stray source (the single-consumer layout of an earlier version)
	// is deleted at the next start.
	if _, err := h.Log().JetStream().CreateConsumer(context.Background(), eventlog.EventsStream, jetstream.ConsumerConfig{
		Durable: "herald-webhooks-source-run", FilterSubject: "ev.*.run.*", AckPolicy: jetstream.AckExplicitPolicy,
	}); err != nil {
		t.Fatal(err)
	}
	h.Stop()
	h = startService(t, dir, nil)
	waitSources(t, h, nil)
}
