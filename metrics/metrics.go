// Package metrics holds a herald process's Prometheus instruments in a
// registry of their own, and serves them in the Prometheus text format.
//
// # Basics
//
// New makes the instruments; the parts of the service report into them
// through small hooks (ObserveRequest for the API, EventAppended for the
// event log, BridgeTransport around the engine's Bridge calls), and
// SampleProjector and SampleConsumers add gauges read at scrape time.
// Handler serves GET /metrics.
//
// # Caveats
//
// Counters count what this process did: sum them over the processes of a
// cluster. The sampled gauges (projector lag, work consumer backlog) call
// NATS at every scrape, bounded by a 2s timeout; a failed sample is left
// out of that scrape. Nothing here registers with Prometheus' global
// default registry, so tests may run several services in one process.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/heraldhq/herald/events"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics is one process's instruments. Its methods are safe for
// concurrent use; a nil *Metrics ignores every report.
type Metrics struct {
	reg *prometheus.Registry

	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec

	eventsAppended prometheus.Counter
	runsStarted    prometheus.Counter
	runsFinished   map[string]prometheus.Counter // by event type
	deliveries     map[string]prometheus.Counter // by event type

	bridgeCalls *prometheus.HistogramVec
	// wakeLateness and turnsAside watch timers (see WokeLate, SteppedAside).
	wakeLateness prometheus.Histogram
	turnsAside   prometheus.Counter
	// webhookAttempts counts outbound webhook attempts by outcome.
	webhookAttempts *prometheus.CounterVec
	// reports counts providers' reports by channel and status (reports.go).
	reports *prometheus.CounterVec
	// consumerRestarts counts consumptions started anew (see failover.go).
	consumerRestarts *prometheus.CounterVec
}

// Run statuses of herald_runs_finished_total, by the event that ends a run.
var runEnds = map[string]string{
	events.RunCompleted: "completed",
	events.RunFailed:    "failed",
	events.RunCancelled: "cancelled",
	events.RunDigested:  "digested",
}

// Delivery statuses of herald_deliveries_total, by the ledger's events.
var deliveryEvents = map[string]string{
	events.DeliveryAttempted: "attempted",
	events.DeliverySent:      "sent",
	events.DeliveryFailed:    "failed",
	events.DeliverySkipped:   "skipped",
}

// New returns the instruments in a new registry, with the Go runtime and
// process collectors.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_http_requests_total",
			Help: "API requests answered, by method, route template and status.",
		}, []string{"method", "route", "status"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "herald_http_request_duration_seconds",
			Help:    "Time to answer an API request, by method and route template.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"method", "route"}),
		eventsAppended: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "herald_events_appended_total",
			Help: "Events this process appended to the EVENTS stream.",
		}),
		runsStarted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "herald_runs_started_total",
			Help: "Runs this process started (fan-outs and cron ticks).",
		}),
		bridgeCalls: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "herald_bridge_call_duration_seconds",
			Help:    "Duration of calls to tenant Bridges (one step each), by outcome: the status class or \"error\" when no answer came.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"outcome"}),
		wakeLateness: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "herald_timer_lateness_seconds",
			Help:    "How late runs woken by their timer (a delay's end, a wait's timeout, a retry) reached their Bridge call.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
		turnsAside: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "herald_turns_stepped_aside_total",
			Help: "Turns of runs woken by their timer that put off recording their Bridge answer, so that the next due runs resume first.",
		}),
	}
	finished, runsFinished := byStatus("herald_runs_finished_total",
		"Runs this process ended, by final status.", runEnds)
	deliveries, deliveriesByType := byStatus("herald_deliveries_total",
		"Delivery ledger records this process wrote, by status (attempted, sent, failed, skipped).", deliveryEvents)
	m.runsFinished, m.deliveries = runsFinished, deliveriesByType
	for _, o := range []string{"2xx", "4xx", "5xx", "error"} {
		m.bridgeCalls.WithLabelValues(o) // present from the start, at zero
	}
	m.registerWebhooks()
	m.registerFailover()
	m.registerReports()
	m.reg.MustRegister(m.httpRequests, m.httpDuration, m.eventsAppended, m.runsStarted, finished, deliveries,
		m.bridgeCalls, m.wakeLateness, m.turnsAside, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// byStatus returns a counter vector name labelled by status, and its
// counter of each event type of statuses (an event type's status), each
// present from the start at zero.
func byStatus(name, help string, statuses map[string]string) (*prometheus.CounterVec, map[string]prometheus.Counter) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"status"})
	byType := make(map[string]prometheus.Counter, len(statuses))
	for typ, status := range statuses {
		byType[typ] = vec.WithLabelValues(status)
	}
	return vec, byType
}

// Registry returns the registry the instruments live in, to add more.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// statusLabels are the status codes as label values, made once.
var statusLabels = func() (s [600]string) {
	for i := range s {
		s[i] = strconv.Itoa(i)
	}
	return s
}()

// ObserveRequest records one answered request. route is the route's
// template (/v1/runs/{runId}), never the raw path, so the label set stays
// bounded.
func (m *Metrics) ObserveRequest(method, route string, status int, elapsed time.Duration) {
	if m == nil {
		return
	}
	label := "other"
	if status >= 0 && status < len(statusLabels) {
		label = statusLabels[status]
	}
	m.httpRequests.WithLabelValues(method, route, label).Inc()
	m.httpDuration.WithLabelValues(method, route).Observe(elapsed.Seconds())
}

// WokeLate records how late a woken run reached its Bridge call.
func (m *Metrics) WokeLate(d time.Duration) {
	if m == nil {
		return
	}
	m.wakeLateness.Observe(max(0, d).Seconds())
}

// SteppedAside counts a woken turn that put off recording its answer.
func (m *Metrics) SteppedAside() {
	if m == nil {
		return
	}
	m.turnsAside.Inc()
}

// EventAppended records one event this process appended; it is the event
// log's Appended hook.
func (m *Metrics) EventAppended(eventType string) {
	if m == nil {
		return
	}
	m.eventsAppended.Inc()
	switch eventType {
	case events.RunStarted:
		m.runsStarted.Inc()
	default:
		if c, ok := m.runsFinished[eventType]; ok {
			c.Inc()
		} else if c, ok := m.deliveries[eventType]; ok {
			c.Inc()
		}
	}
}
