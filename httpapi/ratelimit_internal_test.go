package httpapi

import (
	"fmt"
	"testing"
	"time"
)

// A bucket refills at the rate: after a refused request, the wait it
// reports is enough.
func TestTenantLimitsRefillAndReportTheWait(t *testing.T) {
	l := newTenantLimits(1) // burst 2
	now := time.Unix(1000, 0)
	for i := range 2 {
		if ok, _ := l.allow("a", now); !ok {
			t.Fatalf("request %d of the burst refused", i+1)
		}
	}
	ok, d := l.allow("a", now)
	if ok || d <= 0 || d > time.Second {
		t.Fatalf("third request: ok=%v retry=%v, want refused within 1s", ok, d)
	}
	if got := retryAfter(d); got != "1" {
		t.Fatalf("Retry-After %q, want 1", got)
	}
	if got := retryAfter(1500 * time.Millisecond); got != "2" {
		t.Fatalf("Retry-After of 1.5s: %q, want 2 (rounded up)", got)
	}
	if ok, _ := l.allow("a", now.Add(d)); !ok {
		t.Fatal("refused after the reported wait")
	}
	if ok, _ := l.allow("b", now); !ok {
		t.Fatal("another tenant refused")
	}
}

// The buckets of tenants idle long enough to be full again are dropped:
// the map does not grow with every tenant ever seen.
func TestTenantLimitsForgetIdleTenants(t *testing.T) {
	l := newTenantLimits(100)
	now := time.Unix(1000, 0)
	for i := range 10000 {
		l.allow(fmt.Sprintf("ten_%d", i), now)
	}
	if l.size() != 10000 {
		t.Fatalf("%d buckets", l.size())
	}
	later := now.Add(sweepEvery)
	l.allow("ten_new", later)
	if l.size() != 1 {
		t.Fatalf("%d buckets after every other tenant went idle, want 1", l.size())
	}
	if newTenantLimits(0) != nil {
		t.Fatal("a limit of 0 is not off")
	}
}

// size is how many tenants have a bucket.
func (l *tenantLimits) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}
