package engine

import (
	"context"
	"sync"
	"time"

	"github.com/heraldhq/herald/eventlog"
)

// Fairness between tenants. A worker that takes a run's work message from
// the scheduler (a wake, a timer, a turn that stepped aside, new work) first
// asks fair to admit it: a tenant advances at most limit runs at once in a
// process (Config.TenantConcurrency). A message of a tenant at its limit
// does not take a worker: it is parked, unacknowledged, in the tenant's
// own FIFO (the server is told every AckWait/3 that it is still worked
// on, so it is neither redelivered nor counted as a failed delivery), and
// the worker goes on to the next message, of whatever tenant. When one of
// the tenant's turns ends, its oldest parked message (a turn that stepped
// aside first) is handed that turn's
// place (the tenant stays at its limit) and waits in the ready list, which
// workers take from alongside new work (see scheduler.next): another
// tenant's new work and a busy tenant's backlog share the free workers at
// random, so neither starves. Nothing waits on a semaphore, nothing is
// dropped, and nothing goes back to the server until the engine stops.
type fair struct {
	limit int
	// share is a tenant's limit while the process is crowded (crowded)
	// and another tenant has turns under way or had within mixedHold
	// (see crowd.go). share >= limit, or a nil crowded, turns it off.
	share   int
	crowded func() bool
	now     func() time.Time
	// mixedAt is when two tenants or more last had turns under way.
	mixedAt time.Time
	// maxParked bounds the messages parked at once, every tenant's
	// together (zero: no bound). At the bound the consumer takes no new
	// work from the server (see waitRoom) until a parked message is handed
	// a place: a backlog beyond it waits on the server, not in memory.
	maxParked int
	// roomc holds a token when a parked message was handed a place.
	roomc chan struct{}
	mu    sync.Mutex
	// nparked counts the parked messages.
	nparked int
	// active counts each tenant's admitted turns, ready messages included.
	active map[string]int
	// parked holds each tenant's messages waiting for a place.
	parked map[string]*parkedMsgs
	// ready are parked messages handed a place, oldest first; readyc holds
	// a token while ready is not empty.
	ready  []job
	readyc chan struct{}
	// leftc, when set, is closed as a turn ends: the bulk lane waits on
	// it for its tenant's room (waitTenant).
	leftc chan struct{}
}

// parkedMsgs are one tenant's parked messages, oldest first: turns that
// stepped aside (they hold a Bridge answer to record: finish runs before
// starting new ones, as the scheduler does) go before the rest.
type parkedMsgs struct{ later, other []job }

func (p *parkedMsgs) push(j job) {
	if j.aside != nil {
		p.later = append(p.later, j)
		return
	}
	p.other = append(p.other, j)
}

func (p *parkedMsgs) pop() job {
	q := &p.other
	if len(p.later) > 0 {
		q = &p.later
	}
	j := (*q)[0]
	(*q)[0] = job{}
	*q = (*q)[1:]
	return j
}

func (p *parkedMsgs) len() int { return len(p.later) + len(p.other) }

func newFair(limit, maxParked int) *fair {
	return &fair{limit: max(1, limit), maxParked: maxParked, active: map[string]int{}, parked: map[string]*parkedMsgs{},
		readyc: make(chan struct{}, 1), roomc: make(chan struct{}, 1), now: time.Now}
}

// mixedHold is how long after two tenants last had turns under way at
// once a crowded process still holds each to its share: a tenant sending
// one trigger after another has no turn between two of them.
const mixedHold = time.Second

// limitOf returns tenant's limit now. f.mu is held.
func (f *fair) limitOf(tenant string) int {
	if f.crowded == nil || f.share >= f.limit {
		return f.limit
	}
	if len(f.active) > 1 || (len(f.active) == 1 && f.active[tenant] == 0) {
		f.mixedAt = f.now()
	} else if f.now().Sub(f.mixedAt) >= mixedHold {
		return f.limit
	}
	if !f.crowded() {
		return f.limit
	}
	return f.share
}

// waitRoom blocks while maxParked messages are parked, until one is
// handed a place or ctx ends.
func (f *fair) waitRoom(ctx context.Context) {
	for {
		f.mu.Lock()
		room := f.maxParked <= 0 || f.nparked < f.maxParked
		f.mu.Unlock()
		if room {
			return
		}
		select {
		case <-f.roomc:
		case <-ctx.Done():
			return
		}
	}
}

// tenantOf reads the tenant of a run's job; "" when it has none
// (handleRun drops such a message).
func tenantOf(j job) string {
	if j.aside != nil {
		return j.aside.tenant
	}
	m := j.msg
	if m.Subject() == eventlog.WorkWake {
		tenant, _, _, err := parseWake(m.Data())
		if err != nil {
			return ""
		}
		return tenant
	}
	tenant, _, err := parseWork(m.Subject(), eventlog.WorkRunPrefix)
	if err != nil {
		return ""
	}
	return tenant
}

// admit counts j's turn against its tenant and reports true, or parks j
// and reports false when the tenant is at its limit.
func (f *fair) admit(j job) bool {
	tenant := tenantOf(j)
	if tenant == "" {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.active[tenant] < f.limitOf(tenant) {
		f.active[tenant]++
		return true
	}
	p := f.parked[tenant]
	if p == nil {
		p = &parkedMsgs{}
		f.parked[tenant] = p
	}
	p.push(j)
	f.nparked++
	return false
}

// leave ends an admitted turn of j's tenant: its place goes to the
// tenant's oldest parked job, if any, unless the tenant is over its limit
// now (its share: see limitOf); and when its limit grew, more of its
// parked jobs take the room.
func (f *fair) leave(j job) {
	tenant := tenantOf(j)
	if tenant == "" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.leftc != nil {
		close(f.leftc)
		f.leftc = nil
	}
	if p := f.parked[tenant]; p != nil && f.active[tenant] <= f.limitOf(tenant) {
		f.ready = append(f.ready, p.pop())
		f.nparked--
		for p.len() > 0 && f.active[tenant] < f.limitOf(tenant) {
			f.ready = append(f.ready, p.pop())
			f.nparked--
			f.active[tenant]++
		}
		if p.len() == 0 {
			delete(f.parked, tenant)
		}
		select {
		case f.readyc <- struct{}{}:
		default:
		}
		select {
		case f.roomc <- struct{}{}:
		default:
		}
		return
	}
	if f.active[tenant] <= 1 {
		delete(f.active, tenant)
		return
	}
	f.active[tenant]--
}

// takeReady returns the oldest ready message (already admitted) after its
// token was taken from readyc, passing the token on while more wait.
func (f *fair) takeReady() (job, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.ready) == 0 {
		return job{}, false
	}
	m := f.ready[0]
	f.ready[0] = job{}
	f.ready = f.ready[1:]
	if len(f.ready) > 0 {
		select {
		case f.readyc <- struct{}{}:
		default:
		}
	}
	return m, true
}

// waiting returns every parked and ready message.
func (f *fair) waiting() []job {
	f.mu.Lock()
	defer f.mu.Unlock()
	all := append([]job(nil), f.ready...)
	for _, p := range f.parked {
		all = append(append(all, p.later...), p.other...)
	}
	return all
}

// drain empties fair when the engine stops and returns what waited.
func (f *fair) drain() []job {
	all := f.waiting()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ready, f.parked, f.active, f.nparked = nil, map[string]*parkedMsgs{}, map[string]int{}, 0
	select {
	case f.roomc <- struct{}{}:
	default:
	}
	return all
}

// keepAlive tells the server every every that the waiting messages are
// still worked on, until ctx ends.
func (f *fair) keepAlive(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			for _, j := range f.waiting() {
				_ = j.msg.InProgress()
			}
		case <-ctx.Done():
			return
		}
	}
}
