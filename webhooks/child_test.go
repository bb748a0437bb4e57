package webhooks_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testchild"
	"github.com/heraldhq/herald/internal/testnet"
	"github.com/heraldhq/herald/internal/testwait"
	"github.com/heraldhq/herald/service"
)

// The tests that measure latency or kill the service run `herald serve`
// as a child process (this test binary re-executed by testchild, built
// without the race detector): what they measure is the service's speed.
func TestMain(m *testing.M) {
	testchild.Main(m, func(cfg *service.Config) { cfg.AckWait = childAckWait })
}

// childAckWait: work a killed child held is taken again this soon.
const childAckWait = 3 * time.Second

// child is a herald serve process.
type child struct {
	*testchild.Proc
	t   *testing.T
	dir string
}

// startChild starts herald serve on dir and addr and waits until it is
// ready.
func startChild(t *testing.T, dir, addr string) *child {
	t.Helper()
	p := testchild.Start(t, addr, "HERALD_DATA_DIR="+dir, "HERALD_RATE_LIMIT=0", "HERALD_WEBHOOK_RETRY_BASE=100ms")
	return &child{Proc: p, t: t, dir: dir}
}

func (c *child) base() string { return "http://" + c.Addr }

// token reads one of the child's token files.
func (c *child) token(name string) string {
	b, err := os.ReadFile(filepath.Join(c.dir, name))
	if err != nil {
		c.t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestSlowEndpointDelaysNoOtherTenant: tenant A's endpoint answers after
// 9 s, with a backlog of messages; tenant B's webhooks keep arriving fast.
// The latency is from the event's time (the body's timestamp) to the
// receipt.
func TestSlowEndpointDelaysNoOtherTenant(t *testing.T) {
	c := startChild(t, t.TempDir(), testnet.FreeAddr(t))
	admin, internal := c.token(service.AdminTokenFile), c.token(service.InternalTokenFile)
	a := newRemoteFixture(t, c.base(), admin, internal, "Slow")
	b := newRemoteFixture(t, c.base(), admin, internal, "Fast")
	release := make(chan struct{})
	var slowTaken atomicInt
	slow := newReceiver(t, func(string, int) int {
		slowTaken.add()
		select {
		case <-time.After(9 * time.Second):
		case <-release:
		}
		return 200
	})
	t.Cleanup(func() { close(release) })
	fast := newReceiver(t, nil)
	a.webhook(slow.URL, "*")
	b.webhook(fast.URL, "*")
	const n = 100
	for i := range n {
		a.inApp("run_a" + itoa(i))
	}
	time.Sleep(300 * time.Millisecond) // tenant A's messages are queued and sending
	for i := range n {
		b.inApp("run_b" + itoa(i))
		time.Sleep(10 * time.Millisecond)
	}
	got := fast.waitFor(t, "tenant B's messages", func(got []received) bool { return len(got) >= n })
	lat := make([]time.Duration, 0, len(got))
	for _, r := range got {
		if r.Type != events.HookDeliverySent {
			t.Fatalf("type %s", r.Type)
		}
		lat = append(lat, r.At.Sub(r.EventTime))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p50, p99 := lat[len(lat)/2], lat[(len(lat)*99+99)/100-1]
	t.Logf("tenant B webhook latency over %d messages: p50 %v, p99 %v, max %v; tenant A's endpoint (9 s answers) had %d requests in flight or done",
		len(lat), p50, p99, lat[len(lat)-1], slowTaken.get())
	if slowTaken.get() == 0 {
		t.Fatal("tenant A's endpoint was never called: the test shows nothing")
	}
	if p99 > 100*time.Millisecond {
		t.Fatalf("tenant B's p99 latency %v, want under 100ms", p99)
	}
}

// TestDeliveredAfterKill: the service is killed (SIGKILL, as a lost node)
// while the receiver is down and messages are being retried; after a
// restart and the receiver's return, every message arrives.
func TestDeliveredAfterKill(t *testing.T) {
	dir, addr := t.TempDir(), testnet.FreeAddr(t)
	c := startChild(t, dir, addr)
	f := newRemoteFixture(t, c.base(), c.token(service.AdminTokenFile), c.token(service.InternalTokenFile), "Acme")
	const n = 20
	recv, hookID, secret := f.sendToDownReceiver(n)
	// Kill as soon as some messages failed once, others may be in flight.
	testwait.For(t, "half the messages attempted", func() bool { return len(f.attempts(hookID)) >= n/2 })
	c.Kill()
	recv.restart(t)
	startChild(t, dir, addr)
	recv.waitForEverySigned(t, n, secret)
}
