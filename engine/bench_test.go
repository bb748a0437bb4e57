package engine_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testsmtp"
)

// BenchmarkFanoutRuns measures runs/s end to end: one topic trigger to
// 10,000 subscribers, a one-`run`-step workflow, from the POST until every
// run is completed (read from the runs projection).
func BenchmarkFanoutRuns(b *testing.B) {
	const subscribers = 10000
	wf := bridge.MustWorkflow("ping", func(ctx *bridge.Context, _ any) error {
		_, err := bridge.Run(ctx, "one", func(context.Context) (int, error) { return 1, nil })
		return err
	})
	d := testherald.NewStandInDelivery(b)
	h := testherald.Start(b, testherald.Options{DeliverURL: d.URL})
	tenant, key := h.Tenant("Bench")
	h.Bridge(key, bridge.NewRegistry().MustRegister(wf))
	h.SeedTopic(tenant, "all", subscribers, "example.com")
	lastSeq = 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		r := h.Do("POST", "/v1/events", key, map[string]any{"workflowId": "ping", "to": map[string]any{"topics": []string{"all"}}})
		if r.Status != http.StatusAccepted {
			b.Fatalf("trigger: %d %s", r.Status, r.Body)
		}
		fanout := time.Since(start)
		waitCompleted(b, h, tenant, subscribers)
		el := time.Since(start)
		b.ReportMetric(float64(subscribers)/el.Seconds(), "runs/s")
		b.ReportMetric(fanout.Seconds()*1000, "fanout-ms")
	}
}

// waitCompleted counts RunCompleted events of the tenant from the log
// until n arrived.
func waitCompleted(b *testing.B, h *testherald.Herald, tenant string, n int) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tail, err := h.Log().Tail(ctx, eventlog.TailOptions{After: lastSeq, Filters: []string{"ev." + tenant + ".run.>"}})
	if err != nil {
		b.Fatal(err)
	}
	defer tail.Stop()
	for done := 0; done < n; {
		evs, err := tail.Next(ctx, 4096)
		if err != nil {
			b.Fatalf("after %d completed: %v", done, err)
		}
		for _, ev := range evs {
			if ev.Type == events.RunCompleted {
				done++
			}
			lastSeq = max(lastSeq, ev.Seq)
		}
	}
}

// lastSeq is where the previous iteration's count stopped.
var lastSeq uint64

// BenchmarkFanoutTwoStep measures herald bench's two-step workload in
// process: one topic trigger to 2,000 subscribers of a workflow that runs a `run` step
// returning a small record, then sends an email (three Bridge calls a
// run) through the in-process delivery service to a loopback SMTP
// server; from the POST until every run is completed. cpu-ms/run is the
// whole test process's CPU (herald, NATS, the Bridge and the SMTP server).
func BenchmarkFanoutTwoStep(b *testing.B) {
	const subscribers = 2000
	h, m, tenant, key := startTwoStep(b, subscribers, nil)
	lastSeq = 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cpu := processCPU()
		start := time.Now()
		r := h.Do("POST", "/v1/events", key, map[string]any{"workflowId": "two", "to": map[string]any{"topics": []string{"all"}}})
		if r.Status != http.StatusAccepted {
			b.Fatalf("trigger: %d %s", r.Status, r.Body)
		}
		waitCompleted(b, h, tenant, subscribers)
		reportRuns(b, subscribers, start, cpu)
	}
	if n := m.Accepted(); n != subscribers*b.N {
		b.Fatalf("%d messages, want %d", n, subscribers*b.N)
	}
}

// BenchmarkSingleTwoStep is BenchmarkFanoutTwoStep's workload through
// triggers to one subscriber each (the single-subscriber road: three
// writes a trigger, an HTTP request a run), 2,000 of them from 64
// concurrent clients; from the first POST until every run is completed.
func BenchmarkSingleTwoStep(b *testing.B) {
	const subscribers, clients = 2000, 64
	h, m, tenant, key := startTwoStep(b, subscribers, map[string]string{"HERALD_RATE_LIMIT": "0"})
	api := h.API(key)
	lastSeq = 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cpu := processCPU()
		start := time.Now()
		var next atomic.Int64
		errs := make(chan error, clients)
		for range clients {
			go func() {
				for {
					n := int(next.Add(1)) - 1
					if n >= subscribers {
						errs <- nil
						return
					}
					r, err := api.Send(context.Background(), "POST", "/v1/events", map[string]any{"workflowId": "two",
						"transactionId": fmt.Sprintf("b%d-%d", i, n), "to": map[string]any{"subscriberId": fmt.Sprintf("s%07d", n)}})
					if err == nil && r.Status != http.StatusAccepted {
						err = fmt.Errorf("trigger: %d %s", r.Status, r.Body)
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		for range clients {
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
		}
		waitCompleted(b, h, tenant, subscribers)
		reportRuns(b, subscribers, start, cpu)
	}
	if n := m.Accepted(); n != subscribers*b.N {
		b.Fatalf("%d messages, want %d", n, subscribers*b.N)
	}
}

// reportRuns reports the rate and the process CPU a run of runs completed
// since start, with the process CPU at start.
func reportRuns(b *testing.B, runs int, start time.Time, cpu time.Duration) {
	b.ReportMetric(float64(runs)/time.Since(start).Seconds(), "runs/s")
	b.ReportMetric(float64((processCPU()-cpu).Microseconds())/1000/float64(runs), "cpu-ms/run")
}

// startTwoStep starts a service with a tenant whose Bridge serves the
// 2-step workflow "two" (a `run` step returning a small record, then an
// email send to a loopback SMTP server) and a topic "all" of subscribers
// s0000000, s0000001, ... env adds HERALD_* variables.
func startTwoStep(b *testing.B, subscribers int, env map[string]string) (*testherald.Herald, *testsmtp.Server, string, string) {
	type record struct {
		ID, Name, Plan, Region string
		Tags                   []string
	}
	wf := bridge.MustWorkflow("two", func(ctx *bridge.Context, _ any) error {
		rec, err := bridge.Run(ctx, "load", func(context.Context) (record, error) {
			return record{ID: "acct_0123456789", Name: "Ada Lovelace", Plan: "pro", Region: "eu-west-1",
				Tags: []string{"beta", "newsletter", "annual"}}, nil
		})
		if err != nil {
			return err
		}
		_, err = bridge.Send(ctx, "email", "email", func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Subject: "Hello " + rec.Name, Body: "Your plan: " + rec.Plan}, nil
		})
		return err
	})
	m := testsmtp.Start(b, testsmtp.Options{})
	h := testherald.Start(b, testherald.Options{Env: env})
	tenant, key := h.Tenant("Bench")
	h.MailChannel(key, m.Port)
	h.Bridge(key, bridge.NewRegistry().MustRegister(wf))
	h.SeedTopic(tenant, "all", subscribers, "example.com")
	return h, m, tenant, key
}

// processCPU is the CPU time the process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
