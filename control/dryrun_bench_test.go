package control_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/internal/testherald"
)

// BenchmarkDryRunTopic100k: POST /v1/events?dryRun=true to a topic of
// 100,000 subscribers (each with an email address), the email kind
// decided for each, through the API.
func BenchmarkDryRunTopic100k(b *testing.B) {
	const subscribers = 100_000
	wf := bridge.MustWorkflow("news", func(*bridge.Context, struct{}) error { return nil })
	h := testherald.Start(b, testherald.Options{})
	tenant, key := h.Tenant("Bench")
	h.Bridge(key, bridge.NewRegistry().MustRegister(wf))
	if r := h.Do("POST", "/v1/channels", key, map[string]any{"channelKey": "email-smtp", "config": map[string]any{
		"host": "127.0.0.1", "port": 25, "fromEmail": "noreply@herald.test"}}); r.Status != http.StatusCreated {
		b.Fatalf("channel: %d %s", r.Status, r.Body)
	}
	h.SeedTopic(tenant, "all", subscribers, "example.com")
	h.Client.Timeout = 5 * time.Minute
	body := map[string]any{"workflowId": "news", "to": map[string]any{"topics": []string{"all"}}, "kinds": []string{"email"}}
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		r := h.Do("POST", "/v1/events?dryRun=true", key, body)
		var res struct {
			Recipients int
			ByKind     map[string]struct{ Send int }
		}
		r.JSON(b, &res)
		if r.Status != http.StatusOK || res.Recipients != subscribers || res.ByKind["email"].Send != subscribers {
			b.Fatalf("dry run: %d %.300s", r.Status, r.Body)
		}
		b.ReportMetric(time.Since(start).Seconds(), "s/dryrun")
		b.ReportMetric(float64(subscribers)/time.Since(start).Seconds(), "recipients/s")
	}
}
