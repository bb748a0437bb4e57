package providertest

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery/provider"
)

// Loopback serves handler on a loopback HTTP server for the rest of the
// test, and returns its URL and the deps a provider under test reaches it
// with: the server's client, a logger that discards, the wall clock. A
// provider's own tests (the exact request it sends, its answers beyond
// the suite's) start from here.
func Loopback(t testing.TB, handler http.HandlerFunc) (string, provider.Deps) {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	return srv.URL, provider.Deps{HTTPClient: srv.Client(), Logger: slog.New(slog.DiscardHandler), Now: time.Now}
}

// Request is a request as the server of [Record] received it.
type Request struct {
	Method string
	// URI is the request's path and query.
	URI    string
	Header http.Header
	Body   []byte
}

// Record returns a handler that hands each request it receives to the
// returned channel (which holds 8) and then answers it with answer.
func Record(answer func(w http.ResponseWriter)) (http.HandlerFunc, <-chan Request) {
	got := make(chan Request, 8)
	return func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- Request{Method: r.Method, URI: r.URL.RequestURI(), Header: r.Header.Clone(), Body: b}
		answer(w)
	}, got
}
