package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/gorilla/mux"
	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/consoleui"
	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/livetail"
	"github.com/heraldhq/herald/projections"
)

// eventView is one event of the log as a tenant's tools see it: where it
// is (its sequence, its aggregate and the id in it), what it is and
// when. Data is the event's data, except for the aggregates whose events
// hold sealed secrets or key digests (channels, the Bridge, webhook
// endpoints, the tenant): a tenant reads those through their own routes,
// which show a safe view.
type eventView struct {
	Seq       uint64          `json:"seq"`
	Type      string          `json:"type"`
	At        string          `json:"at"`
	Aggregate string          `json:"aggregate"`
	ID        string          `json:"id"`
	Data      json.RawMessage `json:"data"`
}

// withheld are the aggregates whose event data no tenant view shows.
var withheld = map[string]bool{eventlog.AggChannel: true, eventlog.AggBridge: true, eventlog.AggWebhook: true,
	eventlog.AggTenant: true}

func viewEvent(ev eventlog.Event) eventView {
	v := eventView{Seq: ev.Seq, Type: ev.Type, At: ev.At.UTC().Format(time.RFC3339Nano), Data: json.RawMessage("null")}
	_, agg, id, err := eventlog.ParseSubject(ev.Subject)
	if err == nil {
		v.Aggregate, v.ID = agg, id
	}
	if err == nil && !withheld[agg] && len(ev.Data) > 0 {
		v.Data = ev.Data
	}
	return v
}

// runEventsView is GET /v1/runs/{runId}/events.
type runEventsView struct {
	Data []eventView `json:"data"`
	// Truncated: the run has more events than one answer holds.
	Truncated bool `json:"truncated"`
}

// runEvents is GET /v1/runs/{runId}/events: the run's timeline, its
// transaction's trigger and every event of the run in log order.
func (s *Server) runEvents(w http.ResponseWriter, r *http.Request) error {
	runID, err := runIDVar(r)
	if err != nil {
		return err
	}
	if err := s.caughtUp(r); err != nil {
		return err
	}
	evs, truncated, err := s.deps.Control.RunEvents(r.Context(), tenantOf(r.Context()), runID)
	if err != nil {
		return err
	}
	v := runEventsView{Data: make([]eventView, 0, len(evs)), Truncated: truncated}
	for _, ev := range evs {
		v.Data = append(v.Data, viewEvent(ev))
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

var errTooManyTails = apierr.New(apierr.CodeTooManyStreams, "too many live tails are open; close one or retry after the Retry-After header's seconds")

// tailHeartbeat is how often an idle live tail writes a comment line.
const tailHeartbeat = 15 * time.Second

// tail is GET /v1/tail: the tenant's events as they are appended, as
// Server-Sent Events (`event: event`, its id the sequence, its data an
// eventView), from the moment the request is answered. There is no
// resuming: a client that reconnects reads what it missed from the
// routes of the runs, subscribers and deliveries. The stream ends when
// the API key it was opened with is revoked, through any process: the
// revocation is an event of the tenant's, which the tail itself carries;
// a revocation the tail started too late to carry is found in the
// projections once they hold the log up to the tail's start, and every
// heartbeat looks there again.
func (s *Server) tail(w http.ResponseWriter, r *http.Request) error {
	if s.deps.Tail == nil {
		return errNotReady
	}
	ctx := r.Context()
	tenant := tenantOf(ctx)
	l, err := s.deps.Tail.Listen(ctx, tenant)
	if errors.Is(err, livetail.ErrTooManyListeners) || errors.Is(err, livetail.ErrTooManyForTenant) {
		w.Header().Set("Retry-After", "5")
		return errTooManyTails
	}
	if err != nil {
		return errNotReady
	}
	defer l.Close()
	prefix := keyPrefixOf(ctx)
	revocation := eventlog.Subject(tenant, eventlog.AggAPIKey, prefix)
	// The listener hears every event after the tail's position, which is
	// at most the log's end now: a revocation before it is in the
	// projections once they caught up.
	if err := s.caughtUp(r); err != nil {
		return err
	}
	if !s.keyLive(tenant, prefix) {
		return apierr.ErrUnauthenticated
	}
	out := openSSE(w)
	out.raw(": live\n\n")
	if out.flush() != nil {
		return nil
	}
	ticker := time.NewTicker(tailHeartbeat)
	defer ticker.Stop()
	// send writes ev, or reports that it revokes the stream's key.
	send := func(ev eventlog.Event) bool {
		if ev.Type == events.APIKeyRevoked && ev.Subject == revocation {
			return false
		}
		out.event(ev.Seq, "event", viewEvent(ev))
		return true
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.ops.done():
			return nil
		case <-ticker.C:
			if !s.keyLive(tenant, prefix) {
				return nil
			}
			out.raw(": keep-alive\n\n")
		case ev, ok := <-l.C:
			if !ok {
				if l.Overflowed() {
					s.logger.Debug("live tail dropped: its client fell behind", "tenant", tenant)
				}
				return nil
			}
			live := send(ev)
			for drained := false; live && !drained; {
				select {
				case ev, ok := <-l.C:
					if !ok {
						return nil
					}
					live = send(ev)
				default:
					drained = true
				}
			}
			if !live {
				_ = out.flush() // the events before the revocation
				return nil
			}
		}
		if out.flush() != nil {
			return nil
		}
	}
}

// keyLive reports whether the projections hold the tenant's key of this
// prefix unrevoked; a failed read says yes (the next heartbeat looks
// again).
func (s *Server) keyLive(tenant, prefix string) bool {
	k, err := s.deps.Store.APIKeyByPrefix(prefix)
	if errors.Is(err, projections.ErrNotFound) {
		return false
	}
	return err != nil || (k.TenantID == tenant && k.RevokedAt == nil)
}

// workflowSynced returns 404 workflow_not_found unless workflow is one of
// the tenant's last sync.
func (s *Server) workflowSynced(r *http.Request, tenant, workflow string) error {
	wfs, err := s.deps.Control.Workflows(r.Context(), tenant)
	if err != nil {
		return err
	}
	for _, w := range wfs {
		if w.WorkflowID == workflow {
			return nil
		}
	}
	return apierr.Errorf(apierr.CodeWorkflowNotFound, "no workflow %q in the tenant's last sync", workflow)
}

// maxConsolePath bounds the path of a console page: its longest id (a
// subscriber's external id) is 256 characters, up to 4 bytes each,
// escaped.
const maxConsolePath = 4096

// consolePage is GET /console/ and every page under it: the console's one
// HTML document, which routes by its URL in the browser (so a reload or a
// shared link opens the same page). Its assets are GET /console/assets/.
func (s *Server) consolePage(w http.ResponseWriter, r *http.Request) error {
	if len(r.URL.Path) > maxConsolePath {
		return errNotFound // no page has an id that long
	}
	h := w.Header()
	h.Set("Referrer-Policy", "no-referrer")
	// Inline styles are let through for the email previews' sandboxed
	// frames, which inherit this policy (the console itself writes every
	// value as text); their remote images stay blocked.
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "+
		"connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	h.Set("X-Frame-Options", "DENY")
	return writeAsset(w, "text/html; charset=utf-8", "no-store", consoleui.Page)
}

// consoleAsset is GET /console/assets/{name}: the console's scripts (ES
// modules, pages/ among them) and style sheet.
func (s *Server) consoleAsset(w http.ResponseWriter, r *http.Request) error {
	a, ok := consoleui.Asset(mux.Vars(r)["name"])
	if !ok {
		return errNotFound
	}
	return writeAsset(w, a.ContentType, "no-cache", a.Body)
}

// favicon is GET /favicon.ico: the console's icon.
func (s *Server) favicon(w http.ResponseWriter, _ *http.Request) error {
	return writeAsset(w, "image/x-icon", "public, max-age=86400", consoleui.Favicon)
}

// explainView is GET /v1/subscribers/{externalId}/explain.
type explainView struct {
	SubscriberID string                 `json:"subscriberId"`
	WorkflowID   string                 `json:"workflowId"`
	Kinds        []delivery.Explanation `json:"kinds"`
}

// explainSends is GET /v1/subscribers/{externalId}/explain?workflowId=:
// for each channel kind, whether a send of the workflow to the subscriber
// would go out now, and the reason it would not, decided by the send
// path's own code.
func (s *Server) explainSends(w http.ResponseWriter, r *http.Request) error {
	id, err := pathVar(r, "externalId")
	if err != nil {
		return err
	}
	wf := r.URL.Query().Get("workflowId")
	if wf != "" && !control.ValidWorkflowID(wf) {
		var p apierr.Problems
		p.Add("workflowId", "must be a workflow id of at most %d characters", control.MaxWorkflowIDChars)
		return p.Err()
	}
	if err := s.caughtUp(r); err != nil {
		return err
	}
	tenant := tenantOf(r.Context())
	if _, err := s.deps.Control.Subscriber(tenant, id); err != nil {
		return err
	}
	if wf != "" {
		if err := s.workflowSynced(r, tenant, wf); err != nil {
			return err
		}
	}
	kinds, err := s.deps.Delivery.Explain(r.Context(), tenant, id, wf)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, explainView{SubscriberID: id, WorkflowID: wf, Kinds: kinds})
	return nil
}
