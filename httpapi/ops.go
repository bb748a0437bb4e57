package httpapi

import (
	"bufio"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/mux"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/docs"
	"github.com/heraldhq/herald/eventlog"
)

// unmatchedRoute is the route label of requests no route matched: a fixed
// value, so unknown paths cannot grow the metrics' label set.
const unmatchedRoute = "unmatched"

// opsState is the operational side of the Server: the streams that a
// graceful shutdown must end.
type opsState struct {
	once    sync.Once
	closing chan struct{}
}

func (o *opsState) done() chan struct{} {
	o.once.Do(func() { o.closing = make(chan struct{}) })
	return o.closing
}

// StopStreams ends every streaming answer (GET /v1/admin/events with
// follow) and makes new ones end at once, so that http.Server.Shutdown does
// not wait for them: register it with http.Server.RegisterOnShutdown. It
// is safe to call more than once.
func (s *Server) StopStreams() {
	ch := s.ops.done()
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// noteTenant records the authenticated tenant on the response recorder,
// for the request log.
func noteTenant(w http.ResponseWriter, tenant string) {
	if rec, ok := w.(*statusRecorder); ok {
		rec.tenant = tenant
	}
}

// requestTenant is the tenant a request acted for, or "".
func requestTenant(w http.ResponseWriter, r *http.Request) string {
	if rec, ok := w.(*statusRecorder); ok && rec.tenant != "" {
		return rec.tenant
	}
	return tenantOf(r.Context())
}

// observe records an answered request in the metrics and the debug log.
// The log line names the route template, the tenant and, where the request
// names them, the run and the transaction; never a header or a body.
func (s *Server) observe(w *statusRecorder, r *http.Request, route string, elapsed time.Duration) {
	status := w.status
	if status == 0 {
		status = http.StatusOK
	}
	if s.cfg.Metrics != nil {
		s.cfg.Metrics.ObserveRequest(r.Method, route, status, elapsed)
	}
	if !s.logger.Enabled(r.Context(), slog.LevelDebug) {
		return
	}
	attrs := []any{"method", r.Method, "route", route, "status", status, "ms", elapsed.Milliseconds()}
	if t := requestTenant(w, r); t != "" {
		attrs = append(attrs, "tenant", t)
	}
	// Only ids of their form: a refused 10 KB id is not logged.
	if run := mux.Vars(r)["runId"]; control.ValidRunID(run) {
		attrs = append(attrs, "run", run)
	}
	if txn := r.URL.Query().Get("transactionId"); control.ValidTransactionID(txn) {
		attrs = append(attrs, "transaction", txn)
	}
	s.logger.Debug("request", attrs...)
}

// metrics is GET /metrics: the Prometheus exposition of this process.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Metrics == nil {
		return errNotFound
	}
	s.cfg.Metrics.Handler().ServeHTTP(w, r)
	return nil
}

// openAPI is GET /v1/openapi.json: the API's OpenAPI 3.1 description.
func (s *Server) openAPI(w http.ResponseWriter, _ *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(docs.OpenAPI)
	return nil
}

// auditTrailer is the trailer a replay that broke off after its first line
// carries, with the reason; a complete replay has none.
const auditTrailer = "Herald-Audit-Error"

// adminEvents is GET /v1/admin/events: the event log as NDJSON, one
// envelope (with seq and subject) a line, filtered by ?tenant=, ?since=
// (RFC 3339), ?type= (comma-separated or repeated) and, with ?follow=true,
// followed until the client goes away or the server shuts down. Secrets in
// events are sealed; they stay so.
func (s *Server) adminEvents(w http.ResponseWriter, r *http.Request) error {
	f, err := auditFilter(r)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-s.ops.done():
			cancel()
		case <-ctx.Done():
		}
	}()

	// A replay of a long log, or a followed one, outlasts the server's
	// write timeout: this admin stream has none.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Trailer", auditTrailer)
	w.WriteHeader(http.StatusOK)
	_ = http.NewResponseController(w).Flush() // the headers now: a follower may wait long for a line
	out := &flushWriter{w: w, buf: bufio.NewWriterSize(w, 32<<10)}
	stopFlush := out.flushEvery(200 * time.Millisecond)
	err = s.deps.Log.Replay(ctx, f, func(ev eventlog.Event) error {
		line, err := ev.MarshalLine()
		if err != nil {
			return err
		}
		return out.line(line)
	})
	stopFlush()
	flushErr := out.flush()
	if err != nil && ctx.Err() == nil {
		s.logger.Error("audit replay broke off", "err", err)
		w.Header().Set(auditTrailer, "the replay broke off: "+err.Error())
	} else if err == nil && flushErr != nil {
		s.logger.Debug("audit client went away", "err", flushErr)
	}
	return nil
}

// auditFilter reads the query of GET /v1/admin/events.
func auditFilter(r *http.Request) (eventlog.Filter, error) {
	q := r.URL.Query()
	var p apierr.Problems
	f := eventlog.Filter{Tenant: q.Get("tenant")}
	if err := f.Validate(); err != nil {
		p.Add("tenant", "must be a tenant id")
	}
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			p.Add("since", "must be an RFC 3339 timestamp")
		}
		f.Since = t
	}
	for _, v := range q["type"] {
		for _, typ := range strings.Split(v, ",") {
			if typ = strings.TrimSpace(typ); typ != "" {
				f.Types = append(f.Types, typ)
			}
		}
	}
	switch q.Get("follow") {
	case "", "false", "0":
	case "true", "1":
		f.Follow = true
	default:
		p.Add("follow", "must be true or false")
	}
	return f, p.Err()
}

// flushWriter buffers lines and flushes them at least every interval, so
// a follower sees each event soon and a long replay is written in large
// chunks.
type flushWriter struct {
	mu  sync.Mutex
	w   http.ResponseWriter
	buf *bufio.Writer
	err error
}

func (f *flushWriter) line(b []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	if _, err := f.buf.Write(b); err != nil {
		f.err = err
		return err
	}
	f.err = f.buf.WriteByte('\n')
	return f.err
}

func (f *flushWriter) flush() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	if f.buf.Buffered() == 0 {
		return nil
	}
	if f.err = f.buf.Flush(); f.err == nil {
		http.NewResponseController(f.w).Flush()
	}
	return f.err
}

func (f *flushWriter) flushEvery(d time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				_ = f.flush()
			case <-done:
				return
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}
