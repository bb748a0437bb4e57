package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// registerWebhooks adds herald_webhook_attempts_total, present for both
// outcomes from the start.
func (m *Metrics) registerWebhooks() {
	m.webhookAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "herald_webhook_attempts_total",
		Help: "Outbound webhook attempts this process made, by outcome (succeeded, failed).",
	}, []string{"outcome"})
	for _, o := range []string{"succeeded", "failed"} {
		m.webhookAttempts.WithLabelValues(o)
	}
	m.reg.MustRegister(m.webhookAttempts)
}

// WebhookAttempted counts one outbound webhook attempt; outcome is
// "succeeded" or "failed".
func (m *Metrics) WebhookAttempted(outcome string) {
	if m == nil {
		return
	}
	m.webhookAttempts.WithLabelValues(outcome).Inc()
}

// WebhookBacklogSample is the oldest undelivered message of one endpoint.
type WebhookBacklogSample struct {
	Tenant, Webhook string
	// Oldest is the time of the event of the endpoint's oldest message
	// that failed an attempt and is still to be retried.
	Oldest time.Time
}

// SampleWebhookBacklog adds herald_webhook_oldest_undelivered_seconds per
// endpoint (labels tenant and webhook: at most 20 endpoints a tenant, and
// only endpoints with a message being retried appear), read from sample
// at each scrape.
func (m *Metrics) SampleWebhookBacklog(sample func() ([]WebhookBacklogSample, error)) {
	m.reg.MustRegister(&webhookBacklogCollector{sample: sample, desc: prometheus.NewDesc(
		"herald_webhook_oldest_undelivered_seconds",
		"Age of the oldest outbound webhook message that failed and is to be retried, per endpoint.",
		[]string{"tenant", "webhook"}, nil)})
}

type webhookBacklogCollector struct {
	sample func() ([]WebhookBacklogSample, error)
	desc   *prometheus.Desc
}

func (c *webhookBacklogCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *webhookBacklogCollector) Collect(ch chan<- prometheus.Metric) {
	rows, err := c.sample()
	if err != nil {
		return
	}
	now := time.Now()
	for _, r := range rows {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, max(0, now.Sub(r.Oldest).Seconds()),
			r.Tenant, r.Webhook)
	}
}
