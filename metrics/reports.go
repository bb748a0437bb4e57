package metrics

import "github.com/prometheus/client_golang/prometheus"

// registerReports adds herald_delivery_reports_total.
func (m *Metrics) registerReports() {
	m.reports = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "herald_delivery_reports_total",
		Help: "Reports of providers on sent messages this process recorded (delivered, bounced, complained, opened, clicked, failed), by channel key and status.",
	}, []string{"channel", "status"})
	m.reg.MustRegister(m.reports)
}

// DeliveryReported counts one provider report recorded: the channel's
// catalog key (a bounded set) and the report's status.
func (m *Metrics) DeliveryReported(channelKey, status string) {
	if m == nil {
		return
	}
	m.reports.WithLabelValues(channelKey, status).Inc()
}
