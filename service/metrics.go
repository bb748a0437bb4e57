package service

import (
	"context"

	"github.com/heraldhq/herald/metrics"
)

// sampleMetrics adds the gauges read at scrape time: projector lag and the
// backlog of the work consumers.
func (s *Service) sampleMetrics() {
	s.metrics.SampleReady(s.Ready)
	s.metrics.SampleProjector(s.store.Applied, s.log.LastSeq)
	s.metrics.SampleStalled(s.store.Stalled)
	s.metrics.SampleWebhookBacklog(func() ([]metrics.WebhookBacklogSample, error) {
		rows, err := s.store.WebhookBacklogs()
		out := make([]metrics.WebhookBacklogSample, 0, len(rows))
		for _, r := range rows {
			out = append(out, metrics.WebhookBacklogSample{Tenant: r.TenantID, Webhook: r.WebhookID, Oldest: r.Oldest})
		}
		return out, err
	})
	s.metrics.SampleConsumers(func(ctx context.Context) ([]metrics.ConsumerSample, error) {
		infos, err := s.log.WorkConsumers(ctx)
		if err != nil {
			return nil, err
		}
		out := make([]metrics.ConsumerSample, 0, len(infos))
		for _, info := range infos {
			out = append(out, metrics.ConsumerSample{Name: info.Name, Pending: info.NumPending,
				AckPending: uint64(info.NumAckPending), Redelivered: uint64(info.NumRedelivered)})
		}
		return out, nil
	})
}
