package engine_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gosmtp "github.com/emersion/go-smtp"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/engine"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testsmtp"
)

// fairNoisyRuns is the noisy tenant's runs: the contract's figure is for
// 10,000 and for a million; a broadcast's backlog waits on the server,
// on its own lane, whatever its size.
var fairNoisyRuns = flag.Int("fair.noisy", 10000, "BenchmarkFairness: the noisy tenant's runs")

// fairBridgeTakes is how long each of the noisy tenant's Bridge calls
// takes. At 0 its Bridge answers at once and its broadcast goes at full
// pace, its runs competing for the CPU rather than waiting on the cap:
// the other tenant's triggers are then timed from the broadcast's first
// Bridge call, while its fan-out and its runs go on.
var fairBridgeTakes = flag.Duration("fair.bridge", 2*time.Second, "BenchmarkFairness: each noisy Bridge call's time (0: at once, a broadcast at full pace)")

// fairSamples is how many triggers the other tenant times in each phase.
var fairSamples = flag.Int("fair.samples", 200, "BenchmarkFairness: the other tenant's triggers timed per phase")

// BenchmarkFairness measures the fairness bound: a noisy tenant has 10,000
// runs in flight (one topic trigger) against a Bridge that takes 2 s per
// call, and another tenant sends single-subscriber triggers of the 2-step
// workload (a `run` step, then an email: three Bridge calls a run) one
// after another; each is timed from its POST until its message is in the
// SMTP sink. The same triggers are timed first with no noisy tenant
// (quiet-*), then while the noisy tenant's runs hold their share of the
// workers and the rest of its backlog waits (noisy-*); delay-p99-ms is
// the difference of the two p99s. The service runs with its defaults (128
// workers, HERALD_TENANT_CONCURRENCY half of them); noisy-most-calls is
// the most Bridge calls of the noisy tenant seen at once,
// noisy-in-flight-* its work messages taken by the engine and not finished
// when the noisy measure began and ended, noisy-on-server-before those
// waiting on the server (a broadcast's, on the bulk lane), and
// noisy-*-during its runs started and completed while the other tenant's
// triggers were timed (noisy-runs/s-during: completed a second). With -fair.bridge 0 the noisy Bridge answers at
// once: a broadcast at full pace, timed from its first Bridge call.
func BenchmarkFairness(b *testing.B) {
	noisyRuns, samples, bridgeTakes := *fairNoisyRuns, *fairSamples, *fairBridgeTakes
	const waitDeadline = 5 * time.Minute
	// The quiet tenant: a fast Bridge, an email channel to the sink. Every
	// message the sink gets is one of its triggers'.
	arrived := make(chan struct{}, samples*2)
	m := testsmtp.Start(b, testsmtp.Options{Discard: true, OnData: func(int, *gosmtp.Conn) error {
		arrived <- struct{}{}
		return nil
	}})
	h := testherald.Start(b, testherald.Options{})
	quietTenant, quietKey := h.Tenant("Quiet")
	h.MailChannel(quietKey, m.Port)
	h.Bridge(quietKey, bridge.NewRegistry().MustRegister(loadThenEmail("two", "Ada")))
	h.SeedTopic(quietTenant, "q", 1, "example.com")

	// The noisy tenant: every execute call to its Bridge takes bridgeTakes
	// (or ends when the benchmark does, so the service stops at once).
	noisyTenant, noisyKey := h.Tenant("Noisy")
	h.SeedTopic(noisyTenant, "all", noisyRuns, "example.com")
	release := make(chan struct{})
	defer sync.OnceFunc(func() { close(release) })()
	var now, most, calls atomic.Int64
	slow := bridge.MustWorkflow("slow", func(ctx *bridge.Context, _ any) error {
		_, err := bridge.Run(ctx, "call", func(context.Context) (int, error) { return 1, nil })
		return err
	})
	// At full pace the noisy runs are the 2-step workload too, their
	// emails to a sink of their own.
	noisyWorkflow := "slow"
	if bridgeTakes == 0 {
		noisyWorkflow = "two"
		sink := testsmtp.Start(b, testsmtp.Options{Discard: true})
		h.MailChannel(noisyKey, sink.Port)
	}
	var served http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"action":"execute"`)) {
			calls.Add(1)
			n := now.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			if bridgeTakes > 0 {
				select {
				case <-time.After(bridgeTakes):
				case <-release:
				}
			}
			now.Add(-1)
		}
		served.ServeHTTP(w, r)
	}))
	defer srv.Close()
	bind, err := h.API(noisyKey).BindBridge(context.Background(), srv.URL)
	if err != nil {
		b.Fatal(err)
	}
	served = bridge.Serve(bridge.NewRegistry().MustRegister(slow, loadThenEmail("two", "Noisy")), bridge.Options{SigningKey: bind.SigningSecret})

	api := h.API(quietKey)
	measure := func(label string) []time.Duration {
		var lat []time.Duration
		for i := range samples {
			start := time.Now()
			r, err := api.Send(context.Background(), "POST", "/v1/events", map[string]any{"workflowId": "two",
				"transactionId": fmt.Sprintf("%s-%d", label, i), "to": map[string]any{"subscriberId": "s0000000"}})
			if err != nil || r.Status != http.StatusAccepted {
				b.Fatalf("quiet trigger: %v %d %s", err, r.Status, r.Body)
			}
			select {
			case <-arrived:
			case <-time.After(waitDeadline):
				b.Fatalf("%s: trigger %d: no message", label, i)
			}
			lat = append(lat, time.Since(start))
		}
		slices.Sort(lat)
		return lat
	}
	pct := func(lat []time.Duration, p float64) float64 {
		return float64(lat[min(len(lat)-1, int(float64(len(lat))*p))].Microseconds()) / 1000
	}

	b.ResetTimer()
	for range b.N {
		quiet := measure(fmt.Sprintf("quiet%d", time.Now().UnixNano()))
		txn := fmt.Sprintf("noisy-%d", time.Now().UnixNano())
		r := h.Do("POST", "/v1/events", noisyKey, map[string]any{"workflowId": noisyWorkflow, "transactionId": txn,
			"to": map[string]any{"topics": []string{"all"}}})
		if r.Status != http.StatusAccepted {
			b.Fatalf("noisy trigger: %d %s", r.Status, r.Body)
		}
		// Measure once the noisy fan-out is over or as far ahead of its
		// runs as it goes (two chunks or more waiting on the server: a
		// broadcast's fan-out pauses while four do), its Bridge as busy as
		// the cap lets it be. A broadcast's backlog waits on the server
		// (the bulk lane), a smaller topic's in the engine: taken and
		// pending say which. (Its runs complete meanwhile, 2 calls of 2 s
		// each at the cap's pace.)
		// At full pace (fair.bridge 0), measure from the first noisy call.
		var inFlight, waiting int
		type txnProgress struct {
			Runs struct{ Started, Completed int }
		}
		progress := func() (p txnProgress) {
			h.Do("GET", "/v1/transactions/"+txn, noisyKey, nil).JSON(b, &p)
			return p
		}
		for deadline := time.Now().Add(waitDeadline); ; {
			p := progress()
			pending, taken := workBacklog(b, h)
			if bridgeTakes == 0 && calls.Load() > 0 {
				inFlight, waiting = taken, pending
				break
			}
			if (p.Runs.Started == noisyRuns || pending >= 2*engine.DefaultFanoutChunk) && taken > 0 && now.Load() > 0 {
				inFlight, waiting = taken, pending
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("the noisy fan-out never got ahead: %d started, %d pending, %d taken, %d calls under way",
					p.Runs.Started, pending, taken, now.Load())
			}
			time.Sleep(50 * time.Millisecond)
		}
		before := progress()
		began := time.Now()
		noisy := measure(fmt.Sprintf("noisy%d", time.Now().UnixNano()))
		_, after := workBacklog(b, h)
		during := progress()
		took := time.Since(began)
		b.ReportMetric(pct(quiet, 0.5), "quiet-p50-ms")
		b.ReportMetric(pct(quiet, 0.99), "quiet-p99-ms")
		b.ReportMetric(pct(noisy, 0.5), "noisy-p50-ms")
		b.ReportMetric(pct(noisy, 0.99), "noisy-p99-ms")
		b.ReportMetric(pct(noisy, 0.99)-pct(quiet, 0.99), "delay-p99-ms")
		b.ReportMetric(float64(most.Load()), "noisy-most-calls")
		b.ReportMetric(float64(inFlight), "noisy-in-flight-before")
		b.ReportMetric(float64(waiting), "noisy-on-server-before")
		b.ReportMetric(float64(after), "noisy-in-flight-after")
		b.ReportMetric(float64(calls.Load()), "noisy-calls")
		// What the noisy tenant did while the other's triggers were timed.
		b.ReportMetric(float64(during.Runs.Started-before.Runs.Started), "noisy-started-during")
		b.ReportMetric(float64(during.Runs.Completed-before.Runs.Completed), "noisy-completed-during")
		b.ReportMetric(float64(during.Runs.Completed-before.Runs.Completed)/took.Seconds(), "noisy-runs/s-during")
		b.ReportMetric(float64(during.Runs.Completed), "noisy-completed-by-end")
	}
}
