package providertest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery/provider"
)

// Benchmark measures h's provider sending h.Message to a loopback server
// that accepts every send (h.Accept, or h.Serve's peer), from GOMAXPROCS goroutines, and
// reports sends/s.
func Benchmark(b *testing.B, h Harness) {
	base, client, deps := "", http.DefaultClient, provider.Deps{Logger: slog.New(slog.DiscardHandler), Now: time.Now,
		Dial: (&net.Dialer{}).DialContext}
	if h.Serve != nil {
		peer := h.Serve(b, Behaviour{})
		base, deps.TLSConfig = peer.Base, peer.TLSConfig
	} else {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !h.IsSend(r) {
				if h.Aux == nil {
					http.NotFound(w, r)
					return
				}
				h.Aux.ServeHTTP(w, r)
				return
			}
			h.Accept(w, r)
		}))
		defer srv.Close()
		client = srv.Client()
		client.Transport.(*http.Transport).MaxIdleConnsPerHost = 64
		base = srv.URL
	}
	deps.HTTPClient = client
	p, err := h.New(h.Config(base), deps)
	if err != nil {
		b.Fatal(err)
	}
	if c, ok := p.(io.Closer); ok {
		defer c.Close()
	}
	ctx := context.Background()
	if _, err := p.Send(ctx, h.Message); err != nil { // a token, a connection
		b.Fatal(err)
	}
	start := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := p.Send(ctx, h.Message); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "sends/s")
}
