package metrics

import "github.com/prometheus/client_golang/prometheus"

// registerFailover adds the instruments of a consumer's recovery:
// herald_consumer_restarts_total per consumer (the engine's and webhooks'
// work consumers, "tail" for the projector's and the inbox feed's event
// tails) and herald_projector_stalled.
func (m *Metrics) registerFailover() {
	m.consumerRestarts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "herald_consumer_restarts_total",
		Help: "Consumptions this process started anew after their consumer was lost, failed or stalled (a NATS node lost), by consumer.",
	}, []string{"consumer"})
	m.reg.MustRegister(m.consumerRestarts)
}

// ConsumerRestarted counts one consumption started anew; reason is for
// the log, not a label (its values are open-ended).
func (m *Metrics) ConsumerRestarted(consumer, _ string) {
	if m == nil {
		return
	}
	m.consumerRestarts.WithLabelValues(consumer).Inc()
}

// TailRestarted counts one event tail consumption started anew.
func (m *Metrics) TailRestarted() { m.ConsumerRestarted("tail", "") }

// SampleStalled adds herald_projector_stalled: 1 while the projector
// applies nothing although the stream holds events for it, else 0.
func (m *Metrics) SampleStalled(stalled func() bool) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "herald_projector_stalled",
		Help: "1 while the projector applies nothing although the event stream holds events it has not applied, else 0.",
	}, func() float64 {
		if stalled() {
			return 1
		}
		return 0
	}))
}
