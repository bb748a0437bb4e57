package projections

import (
	"fmt"
	"testing"
)

func TestAheadClear(t *testing.T) {
	run := func(tenant string) string { return "ev." + tenant + ".run.cnVu" }
	sub := func(tenant string) string { return "ev." + tenant + ".subscriber.c3Vi" }
	type step struct {
		receive []string // subjects received, from the next sequence on
		applied uint64   // then applied up to this (0: nothing)
		tenant  string
		seq     uint64
		want    bool
		waits   bool // not clear because seq is not received yet
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"another tenant's runs do not hold a send", []step{
			{receive: []string{run("a"), run("a"), run("b")}, tenant: "b", seq: 3, want: true},
		}},
		{"not received yet", []step{
			{receive: []string{run("a")}, tenant: "b", seq: 2, want: false, waits: true},
			{receive: []string{run("b")}, tenant: "b", seq: 2, want: true},
		}},
		{"the tenant's own settings hold it until applied", []step{
			{receive: []string{run("a"), sub("b"), run("b")}, tenant: "b", seq: 3, want: false},
			{applied: 1, tenant: "b", seq: 3, want: false},
			{applied: 2, tenant: "b", seq: 3, want: true},
		}},
		{"settings after seq do not hold it", []step{
			{receive: []string{run("b"), sub("b")}, tenant: "b", seq: 1, want: true},
		}},
		{"another tenant's settings do not hold it", []step{
			{receive: []string{sub("a"), run("b")}, tenant: "b", seq: 2, want: true},
		}},
		{"an event of no tenant holds everyone", []step{
			{receive: []string{"other.subject", run("b")}, tenant: "b", seq: 2, want: false},
			{applied: 1, tenant: "b", seq: 2, want: true},
		}},
		{"a subject of another shape holds everyone", []step{
			{receive: []string{"ev..run.x", run("b")}, tenant: "b", seq: 2, want: false},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var a ahead
			a.reset(0)
			next := uint64(1)
			for i, s := range c.steps {
				for _, subj := range s.receive {
					a.receive(next, subj)
					next++
				}
				if s.applied != 0 {
					a.applied(s.applied)
				}
				ok, received := a.clear(s.tenant, s.seq)
				if ok != s.want || (received != nil) != s.waits {
					t.Fatalf("step %d: clear(%q, %d) = %v, waits %v; want %v, waits %v", i, s.tenant, s.seq, ok, received != nil, s.want, s.waits)
				}
			}
		})
	}
}

// The tenant the projector's lag is about waits for it; one with a small
// share of it does not, however busy.
func TestAheadHeavyTenantWaits(t *testing.T) {
	var a ahead
	a.reset(0)
	seq := uint64(0)
	receive := func(tenant string, n int) {
		for range n {
			seq++
			a.receive(seq, "ev."+tenant+".run.x")
		}
	}
	receive("noisy", heavyEvents-1)
	receive("quiet", 10)
	if ok, _ := a.clear("noisy", seq); !ok {
		t.Fatalf("below %d events, the noisy tenant waits", heavyEvents)
	}
	receive("noisy", 1)
	if ok, _ := a.clear("noisy", seq); ok {
		t.Fatal("the tenant that is most of the lag does not wait for it")
	}
	if ok, _ := a.clear("quiet", seq); !ok {
		t.Fatal("a quiet tenant waits for another's lag")
	}
	// Another busy tenant with a small share of the lag.
	receive("busy", heavyEvents)
	receive("noisy", 4*heavyEvents)
	if ok, _ := a.clear("busy", seq); !ok {
		t.Fatal("a tenant with a fifth of the lag waits for it")
	}
	if ok, _ := a.clear("noisy", seq); ok {
		t.Fatal("the noisy tenant does not wait")
	}
	// Everything applied: nothing is held, the entries are gone.
	a.applied(seq)
	if ok, _ := a.clear("noisy", seq); !ok || len(a.tenants) != 0 || a.head != len(a.queue) {
		t.Fatalf("after every event applied: clear %v, %d tenants, queue %d/%d", ok, len(a.tenants), a.head, len(a.queue))
	}
}

// A wait for an event not received yet is woken by its reception, not by
// an earlier one; a stopped tail wakes it and reads nothing ahead.
func TestAheadWakesAtReception(t *testing.T) {
	var a ahead
	a.reset(0)
	_, w := a.clear("b", 3)
	a.receive(1, "ev.a.run.x")
	a.receive(2, "ev.a.run.x")
	select {
	case <-w:
		t.Fatal("woken before its event was received")
	default:
	}
	a.receive(3, "ev.b.run.x")
	select {
	case <-w:
	default:
		t.Fatal("not woken by its event's reception")
	}
	_, w = a.clear("b", 4)
	a.stop()
	select {
	case <-w:
	default:
		t.Fatal("not woken when the tail stopped")
	}
	if ok, w := a.clear("b", 3); ok || w != nil {
		t.Fatal("a stopped tail reads ahead")
	}
	a.receive(4, "ev.b.run.x")
	if len(a.queue) != 0 {
		t.Fatal(fmt.Sprint("a stopped tail keeps entries: ", len(a.queue)))
	}
}
