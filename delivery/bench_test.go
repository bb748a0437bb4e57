package delivery_test

import (
	"fmt"
	"log/slog"
	"net/http"
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
			var next atomic.Int64
			errs := make(chan string, 1)
			b.ResetTimer()
			start := time.Now()
			done := make(chan struct{})
			for range conc {
				go func() {
					defer func() { done <- struct{}{} }()
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						r := f.deliver(sendStep(fmt.Sprintf("run_%d", i), "send"))
						if r.Status != http.StatusOK {
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
			if got := m.Accepted(); got != b.N+1 {
				b.Fatalf("server received %d messages, want %d", got, b.N+1)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
		})
	}
}
