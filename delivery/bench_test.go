package delivery_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testsmtp"
)

// BenchmarkDeliver measures deliveries per second through POST /v1/deliver
// of a whole in-process service (embedded JetStream, projections) to a
// go-smtp server on loopback, each with a new idempotency key: ledger read,
// claim, SMTP transaction on a pooled session, outcome, projection wait.
// Each sub-benchmark keeps that many requests in flight.
func BenchmarkDeliver(b *testing.B) {
	for _, conc := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) {
			m := testsmtp.Start(b, testsmtp.Options{Discard: true})
			f := newFixtureLevel(b, m, false, nil, slog.LevelInfo)
			f.h.Client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
				MaxIdleConns: 256, MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}}
			f.mustSend(sendStep("run_warm", "s"))
			elapsed := drive(b, f, conc, func(i int64) map[string]any { return sendStep(fmt.Sprintf("run_%d", i), "send") })
			if got := m.Accepted(); got != b.N+1 {
				b.Fatalf("server received %d messages, want %d", got, b.N+1)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
		})
	}
}

// BenchmarkDeliverKind measures deliveries per second through POST
// /v1/deliver of a whole in-process service for the kinds whose provider
// is not SMTP: in_app (an event on the recipient's inbox) and webhook (a
// POST to a loopback receiver), 32 requests in flight, each with a new
// idempotency key. The providers' own figures against their APIs'
// loopback servers are each provider package's BenchmarkSend.
func BenchmarkDeliverKind(b *testing.B) {
	var received atomic.Int64
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		received.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(hook.Close)
	kinds := []struct {
		kind, channelKey string
		config           map[string]any
		content          map[string]any
	}{
		{"in_app", "in-app", map[string]any{}, map[string]any{"subject": "New comment", "body": "Bob replied"}},
		{"webhook", "webhook", map[string]any{"url": hook.URL + "/hook"}, map[string]any{"data": map[string]any{"orderId": 42}}},
	}
	for _, k := range kinds {
		b.Run(k.kind, func(b *testing.B) {
			f := newFixtureLevel(b, testsmtp.Start(b, testsmtp.Options{Discard: true}), false, nil, slog.LevelInfo)
			f.h.Client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
				MaxIdleConns: 256, MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}}
			f.tenantCall("POST", "/v1/channels", map[string]any{"channelKey": k.channelKey, "config": k.config}, 201)
			step := func(i int64) map[string]any {
				s := sendStep(fmt.Sprintf("run_%d", i), "send")
				s["channel"], s["content"] = k.kind, k.content
				return s
			}
			f.mustSend(step(0))
			elapsed := drive(b, f, 32, step)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
		})
	}
	if received.Load() == 0 {
		b.Fatal("the webhook receiver got nothing")
	}
}

// drive sends b.N deliveries through f, step(i) for i in 1..b.N, from conc
// goroutines, and returns the time they took; the first answer other than
// 200 fails the benchmark.
func drive(b *testing.B, f *fixture, conc int, step func(int64) map[string]any) time.Duration {
	var next atomic.Int64
	errs := make(chan string, 1)
	done := make(chan struct{})
	b.ResetTimer()
	start := time.Now()
	for range conc {
		go func() {
			defer func() { done <- struct{}{} }()
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				if r := f.deliver(step(i)); r.Status != http.StatusOK {
					select {
					case errs <- fmt.Sprintf("%d %s", r.Status, r.Body):
					default:
					}
					return
				}
			}
		}()
	}
	for range conc {
		<-done
	}
	elapsed := time.Since(start)
	b.StopTimer()
	select {
	case e := <-errs:
		b.Fatal(e)
	default:
	}
	return elapsed
}
