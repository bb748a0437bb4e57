package httpapi

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// tenantLimits is a token bucket per tenant: perSecond requests a second,
// bursts of burst. A bucket idle long enough to be full again is no
// different from a new one, so such buckets are dropped (at most once a
// sweep interval): the map holds only the tenants active lately.
type tenantLimits struct {
	perSecond rate.Limit
	burst     int
	// idle is how long an emptied bucket takes to fill again.
	idle time.Duration

	mu        sync.Mutex
	buckets   map[string]*bucket
	lastSweep time.Time
}

type bucket struct {
	lim  *rate.Limiter
	seen time.Time
}

// sweepEvery is how often idle buckets are looked for, at most.
const sweepEvery = time.Minute

// newTenantLimits returns the limits for perSecond requests a second per
// tenant, bursts of twice that (at least 1); nil when perSecond is not
// positive (no limit).
func newTenantLimits(perSecond float64) *tenantLimits {
	if !(perSecond > 0) {
		return nil
	}
	burst := max(1, int(math.Ceil(2*perSecond)))
	return &tenantLimits{perSecond: rate.Limit(perSecond), burst: burst,
		idle:    time.Duration(float64(burst) / perSecond * float64(time.Second)),
		buckets: map[string]*bucket{}}
}

// allow takes one request of tenant at now, or reports how long until the
// next one would be allowed. A nil l (no limit) allows every request.
func (l *tenantLimits) allow(tenant string, now time.Time) (ok bool, retry time.Duration) {
	if l == nil {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.lastSweep) >= sweepEvery {
		l.sweep(now)
	}
	b := l.buckets[tenant]
	if b == nil {
		b = &bucket{lim: rate.NewLimiter(l.perSecond, l.burst)}
		l.buckets[tenant] = b
	}
	b.seen = now
	r := b.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// sweep drops the buckets idle long enough to be full.
func (l *tenantLimits) sweep(now time.Time) {
	l.lastSweep = now
	for t, b := range l.buckets {
		if now.Sub(b.seen) >= l.idle {
			delete(l.buckets, t)
		}
	}
}

// retryAfter is a Retry-After value: whole seconds, at least 1.
func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}

// limitTenant refuses a request of a tenant over its rate with 429
// rate_limited and Retry-After.
func (s *Server) limitTenant(w http.ResponseWriter, tenant string) error {
	if ok, d := s.limits.allow(tenant, time.Now()); !ok {
		w.Header().Set("Retry-After", retryAfter(d))
		return errRateLimited
	}
	return nil
}
