package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// sampleTimeout bounds the NATS calls of one scrape.
const sampleTimeout = 2 * time.Second

// SampleProjector adds herald_projector_applied_sequence and
// herald_projector_lag_events (the EVENTS stream's last sequence minus the
// last one this process's projections applied), read at each scrape.
// last asks the stream; applied reads the local checkpoint.
func (m *Metrics) SampleProjector(applied func() uint64, last func(context.Context) (uint64, error)) {
	m.reg.MustRegister(&projectorCollector{applied: applied, last: last,
		appliedDesc: prometheus.NewDesc("herald_projector_applied_sequence",
			"Last EVENTS stream sequence this process's projections applied.", nil, nil),
		lagDesc: prometheus.NewDesc("herald_projector_lag_events",
			"EVENTS stream last sequence minus the sequence the local projections applied.", nil, nil),
	})
}

type projectorCollector struct {
	applied              func() uint64
	last                 func(context.Context) (uint64, error)
	appliedDesc, lagDesc *prometheus.Desc
}

func (c *projectorCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.appliedDesc
	ch <- c.lagDesc
}

func (c *projectorCollector) Collect(ch chan<- prometheus.Metric) {
	applied := c.applied()
	ch <- prometheus.MustNewConstMetric(c.appliedDesc, prometheus.GaugeValue, float64(applied))
	ctx, cancel := context.WithTimeout(context.Background(), sampleTimeout)
	defer cancel()
	last, err := c.last(ctx)
	if err != nil {
		return
	}
	lag := float64(0)
	if last > applied {
		lag = float64(last - applied)
	}
	ch <- prometheus.MustNewConstMetric(c.lagDesc, prometheus.GaugeValue, lag)
}

// ConsumerSample is the backlog of one durable work consumer.
type ConsumerSample struct {
	// Name is the consumer's name, e.g. herald-runs.
	Name string
	// Pending counts messages not yet delivered to any process.
	Pending uint64
	// AckPending counts messages delivered and not yet acknowledged.
	AckPending uint64
	// Redelivered counts messages delivered more than once and not yet
	// acknowledged.
	Redelivered uint64
}

// SampleConsumers adds herald_work_pending_messages,
// herald_work_ack_pending_messages and herald_work_redelivered_messages
// per consumer, from sample (consumer info) at each scrape. The consumers
// are shared by every process: each process reports the same backlog.
func (m *Metrics) SampleConsumers(sample func(context.Context) ([]ConsumerSample, error)) {
	m.reg.MustRegister(&consumerCollector{sample: sample,
		pending: prometheus.NewDesc("herald_work_pending_messages",
			"Work messages waiting for a worker, by consumer (shared by every process).", []string{"consumer"}, nil),
		ackPending: prometheus.NewDesc("herald_work_ack_pending_messages",
			"Work messages being worked on (delivered, not yet acknowledged), by consumer.", []string{"consumer"}, nil),
		redelivered: prometheus.NewDesc("herald_work_redelivered_messages",
			"Unacknowledged work messages delivered more than once, by consumer.", []string{"consumer"}, nil),
	})
}

type consumerCollector struct {
	sample                           func(context.Context) ([]ConsumerSample, error)
	pending, ackPending, redelivered *prometheus.Desc
}

func (c *consumerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.pending
	ch <- c.ackPending
	ch <- c.redelivered
}

func (c *consumerCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), sampleTimeout)
	defer cancel()
	samples, err := c.sample(ctx)
	if err != nil {
		return
	}
	for _, s := range samples {
		ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(s.Pending), s.Name)
		ch <- prometheus.MustNewConstMetric(c.ackPending, prometheus.GaugeValue, float64(s.AckPending), s.Name)
		ch <- prometheus.MustNewConstMetric(c.redelivered, prometheus.GaugeValue, float64(s.Redelivered), s.Name)
	}
}

// SampleReady adds herald_ready: 1 while ready (NATS connected,
// projections caught up), else 0.
func (m *Metrics) SampleReady(ready func() bool) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "herald_ready",
		Help: "1 while the process is ready (NATS connected, projections caught up), else 0.",
	}, func() float64 {
		if ready() {
			return 1
		}
		return 0
	}))
}
