package httpapi

import (
	"context"
	"net/http"
)

// headAsGet answers HEAD on every GET route as GET, without a body: the
// handler runs as for GET, so the status and headers are the same, and
// net/http drops what it writes (the request it serves is a HEAD). A
// handler that streams (an event stream, a followed log) is ended at its
// first flush, once the headers are out: its request's context is
// cancelled, as when a client goes away.
func headAsGet(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		get := r.WithContext(ctx)
		get.Method = http.MethodGet
		next.ServeHTTP(&headWriter{ResponseWriter: w, cancel: cancel}, get)
	})
}

// headWriter is the writer of a HEAD served as GET: the first flush sends
// the headers and ends the handler's request.
type headWriter struct {
	http.ResponseWriter
	cancel context.CancelFunc
}

// Flush sends the headers and cancels the request: a HEAD has no body
// to stream.
func (w *headWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	w.cancel()
}

// Unwrap lets http.ResponseController reach the connection (deadlines).
func (w *headWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
