package projections_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
)

// While the projector is still applying one tenant's broadcast, another
// tenant's send reads at once unless one of its own settings is among
// what is left; the broadcasting tenant waits as WaitFor does.
func TestWaitForTenantPassesAnotherTenantsBacklog(t *testing.T) {
	log, st := followed(t)
	ctx := context.Background()
	put := func(tenant, id string) uint64 {
		return appendChannelEvent(t, log, tenant, eventlog.AggSubscriber, id, events.SubscriberUpserted, t0,
			events.SubscriberUpsertedData{SubscriberID: id, Contacts: map[string][]string{"email": {id + "@example.com"}}})
	}
	runEvent := func(tenant string) uint64 {
		// An event of a run: the projector skips what it cannot decode,
		// and only its subject matters here.
		return appendChannelEvent(t, log, tenant, eventlog.AggRun, "run_x", "NotARunEvent", t0, struct{}{})
	}
	if err := st.WaitFor(ctx, put("ten_quiet", "before")); err != nil {
		t.Fatal(err)
	}

	release := st.HoldApply()
	held := true
	defer func() {
		if held {
			release()
		}
	}()
	for range 1500 {
		runEvent("ten_noisy")
	}
	quiet := runEvent("ten_quiet")
	if err := st.WaitForTenant(ctx, "ten_quiet", quiet); err != nil {
		t.Fatalf("a quiet tenant's send waits for another's backlog: %v", err)
	}
	if st.Applied() >= quiet {
		t.Fatal("the projector was held, yet applied the event waited for")
	}
	if err := st.WaitForTenant(ctx, "ten_other", quiet); err != nil {
		t.Fatalf("a tenant with no events waits: %v", err)
	}

	// The tenant that is the backlog waits for it; so does a tenant whose
	// own subscriber change is in it, and a plain WaitFor.
	changed := put("ten_quiet", "changed")
	after := runEvent("ten_quiet")
	waiting := map[string]func(ctx context.Context) error{
		"noisy":   func(ctx context.Context) error { return st.WaitForTenant(ctx, "ten_noisy", quiet) },
		"changed": func(ctx context.Context) error { return st.WaitForTenant(ctx, "ten_quiet", after) },
		"WaitFor": func(ctx context.Context) error { return st.WaitFor(ctx, quiet) },
	}
	for name, wait := range waiting {
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		err := wait(short)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s: returned %v while the projector held what it waits for", name, err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- st.WaitForTenant(ctx, "ten_quiet", after) }()
	release()
	held = false
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st.Applied() < changed {
		t.Fatalf("returned at #%d, before its subscriber change #%d was applied", st.Applied(), changed)
	}
	sub, err := st.Subscriber("ten_quiet", "changed")
	if err != nil || sub.Contacts["email"][0] != "changed@example.com" {
		t.Fatalf("the change is not read after the wait: %+v, %v", sub, err)
	}
}
