package metrics

import (
	"net/http"
	"time"
)

// BridgeTransport wraps next (the engine's Bridge client transport) so
// that every call is timed into herald_bridge_call_duration_seconds. The
// time runs until the answer's headers arrive: the Bridge runs a step
// before it answers. A nil *Metrics returns next unchanged.
func (m *Metrics) BridgeTransport(next http.RoundTripper) http.RoundTripper {
	if m == nil {
		return next
	}
	if next == nil {
		next = http.DefaultTransport
	}
	return &bridgeTransport{next: next, m: m}
}

type bridgeTransport struct {
	next http.RoundTripper
	m    *Metrics
}

func (t *bridgeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.next.RoundTrip(r)
	outcome := "error"
	if err == nil {
		switch {
		case resp.StatusCode >= 500:
			outcome = "5xx"
		case resp.StatusCode >= 400:
			outcome = "4xx"
		default:
			outcome = "2xx"
		}
	}
	t.m.bridgeCalls.WithLabelValues(outcome).Observe(time.Since(start).Seconds())
	return resp, err
}
