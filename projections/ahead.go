package projections

import (
	"strings"
	"sync"

	"github.com/heraldhq/herald/eventlog"
)

// ahead knows what the projector's tail has received and the projector
// has not applied yet: for each tenant, how many of its events, and the
// sequences of those that change what a send decides (its settings: see
// settingsAggregate). With it, WaitForTenant lets one tenant's send go
// on while the projector is still applying another tenant's broadcast,
// as long as none of the sender's own settings is among what is left.
//
// Its entries are bounded by what the tail buffers ahead of the
// projector (eventlog.TailOptions.Buffer and the batch being applied).
type ahead struct {
	mu sync.Mutex
	// received is the sequence of the last event the tail received (0:
	// no tail under way; nothing is known ahead of the checkpoint).
	received uint64
	// queue holds the received events not applied, oldest first, from
	// index head.
	queue []aheadEntry
	head  int
	// tenants counts each tenant's entries in queue, and lists the
	// sequences of its settings among them.
	tenants map[string]*tenantAhead
	// wake, when not nil, is closed once the tail receives wakeAt or
	// beyond: a WaitForTenant waits there for an event not received yet.
	wake   chan struct{}
	wakeAt uint64
}

type aheadEntry struct {
	seq    uint64
	tenant string
}

type tenantAhead struct {
	n        int
	settings []uint64
}

// heavyEvents and heavyShare say which tenant the projector's lag is
// about: one with at least heavyEvents events not applied that make up at
// least 1/heavyShare of all of them. Its sends wait for everything before
// them to be applied, as every send did before: that wait is what keeps
// a broadcast at the pace the projector applies it.
const (
	heavyEvents = 1024
	heavyShare  = 4
)

// reset forgets every entry: a new tail follows the log after applied.
func (a *ahead) reset(applied uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.received, a.queue, a.head, a.tenants = applied, a.queue[:0], 0, map[string]*tenantAhead{}
	a.release()
}

// stop forgets every entry and what was received: no tail is under way,
// and a wait reads nothing ahead.
func (a *ahead) stop() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.received, a.queue, a.head, a.tenants = 0, nil, 0, nil
	a.release()
}

// release wakes every wait for a reception; a.mu is held.
func (a *ahead) release() {
	if a.wake != nil {
		close(a.wake)
		a.wake, a.wakeAt = nil, 0
	}
}

// receive notes the event at seq on subject, received by the tail.
func (a *ahead) receive(seq uint64, subject string) {
	tenant, settings := subjectTenant(subject)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.tenants == nil || seq <= a.received {
		return // no tail under way (stopped), or a repeat
	}
	a.received = seq
	if a.wake != nil && seq >= a.wakeAt {
		close(a.wake)
		a.wake, a.wakeAt = nil, 0
	}
	a.queue = append(a.queue, aheadEntry{seq: seq, tenant: tenant})
	t := a.tenants[tenant]
	if t == nil {
		t = &tenantAhead{}
		a.tenants[tenant] = t
	}
	t.n++
	if settings {
		t.settings = append(t.settings, seq)
	}
}

// applied drops the entries at or below seq.
func (a *ahead) applied(seq uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for a.head < len(a.queue) && a.queue[a.head].seq <= seq {
		e := a.queue[a.head]
		a.queue[a.head] = aheadEntry{}
		a.head++
		t := a.tenants[e.tenant]
		if t == nil {
			continue
		}
		if len(t.settings) > 0 && t.settings[0] == e.seq {
			t.settings = t.settings[1:]
		}
		if t.n--; t.n == 0 {
			delete(a.tenants, e.tenant)
		}
	}
	if a.head == len(a.queue) {
		a.queue, a.head = a.queue[:0], 0
	} else if a.head > len(a.queue)/2 {
		a.queue, a.head = append(a.queue[:0], a.queue[a.head:]...), 0
	}
}

// clear reports whether a send of tenant made after the event at seq may
// read the projections now: the tail has received seq, no event of the
// tenant's settings at or below seq is left to apply, and the tenant is
// not the one the projector's lag is about (heavyEvents). When the tail
// has not received seq yet, received is closed once it has; otherwise
// it is nil, and only an applied batch changes the answer.
func (a *ahead) clear(tenant string, seq uint64) (ok bool, received <-chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.tenants == nil {
		return false, nil // no tail: WaitFor's wait
	}
	if a.received < seq {
		if a.wake == nil {
			a.wake = make(chan struct{})
		}
		if a.wakeAt == 0 || seq < a.wakeAt {
			a.wakeAt = seq
		}
		return false, a.wake
	}
	return a.settled(tenant, seq), nil
}

// settled is clear once seq is received; a.mu is held.
func (a *ahead) settled(tenant string, seq uint64) bool {
	if u := a.tenants[""]; u != nil && len(u.settings) > 0 && u.settings[0] <= seq {
		return false // an event of no tenant: it may concern any
	}
	t := a.tenants[tenant]
	if t == nil {
		return true
	}
	if len(t.settings) > 0 && t.settings[0] <= seq {
		return false
	}
	return t.n < heavyEvents || t.n*heavyShare < len(a.queue)-a.head
}

// subjectTenant returns the tenant of an event's subject, and whether the
// event is one of its settings: every aggregate but those a send's
// decision never reads (runs, transactions, deliveries, digests,
// throttles, inboxes and webhook attempts, the bulk of a busy log). A
// subject of another shape is of tenant "" and counted as settings.
func subjectTenant(subject string) (tenant string, settings bool) {
	rest, ok := strings.CutPrefix(subject, "ev.")
	if !ok {
		return "", true
	}
	tenant, rest, ok = strings.Cut(rest, ".")
	if !ok || tenant == "" {
		return "", true
	}
	agg, _, _ := strings.Cut(rest, ".")
	return tenant, settingsAggregate(agg)
}

// settingsAggregate reports whether events of aggregate agg may change
// what Decide reads (channels, workflow defaults, the recipient, its
// preferences and suppressions) or what a send then uses (layouts,
// channel credentials). It names the aggregates that cannot, so that a
// new aggregate counts as settings until it is known not to.
func settingsAggregate(agg string) bool {
	switch agg {
	case eventlog.AggRun, eventlog.AggTransaction, eventlog.AggDelivery, eventlog.AggDigest,
		eventlog.AggThrottle, eventlog.AggInbox, eventlog.AggWebhookAttempts:
		return false
	}
	return true
}
