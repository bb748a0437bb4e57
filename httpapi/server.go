package httpapi

import (
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/delivery/inbound"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/inboxfeed"
	"github.com/heraldhq/herald/livetail"
	"github.com/heraldhq/herald/preferences/links"
	"github.com/heraldhq/herald/projections"
)

// Config configures the API. The zero value of each field is documented.
type Config struct {
	// AdminToken authenticates the admin API. Required.
	AdminToken string
	// InternalToken authenticates POST /v1/deliver. Required.
	InternalToken string
	// Ready reports whether the process is ready (NATS connected,
	// projections caught up). Zero: always ready.
	Ready func() bool
	// Live reports whether the process can still serve (false once its
	// NATS connection closed for good): GET /healthz answers 503 when it
	// does not. Zero: always live.
	Live func() bool
	// Logger receives request logs. Zero: slog.Default().
	Logger *slog.Logger
	// Metrics records every request and serves GET /metrics. Zero: no
	// recording; GET /metrics answers 404.
	Metrics Metrics
	// SeparateInternal moves the internal routes (POST /v1/deliver) off
	// Handler onto InternalHandler, for a listener of their own
	// (HERALD_INTERNAL_ADDR). Zero: Handler serves them too.
	SeparateInternal bool
	// RateLimit is each tenant's requests per second on the tenant routes
	// (bursts of twice that); over it, 429 rate_limited with Retry-After.
	// Admin and internal routes are not limited. Zero: no limit.
	RateLimit float64
	// InboundRate is each channel's requests per second on its inbound
	// URL (bursts of twice that). Zero: no limit.
	InboundRate float64
	// InboxHeartbeat is how often an idle GET /v1/inbox/stream writes a
	// comment line. Zero: DefaultInboxHeartbeat (15s).
	InboxHeartbeat time.Duration
	// InboxOrigins are the origins (scheme://host[:port]) whose pages may
	// call the inbox's subscriber routes and load /inbox.js; "*" allows
	// every origin. Zero: none (same-origin pages only).
	InboxOrigins []string
}

// Metrics receives the outcome of every request and serves the metrics.
type Metrics interface {
	// ObserveRequest records one answered request; route is the route's
	// template (e.g. /v1/runs/{runId}), or "unmatched".
	ObserveRequest(method, route string, status int, elapsed time.Duration)
	// Handler serves GET /metrics.
	Handler() http.Handler
}

// Deps are the parts the API drives.
type Deps struct {
	Control *control.Control
	Store   *projections.Store
	Log     *eventlog.Log

	// Delivery serves POST /v1/deliver.
	Delivery *delivery.Service
	// Links opens the tokens of the public pages (/u/{token},
	// /p/{token}). Zero: those pages answer 404.
	Links *links.Maker
	// Inbound opens the tokens of the inbound URLs (POST /in/{token}) and
	// makes the URLs channels show. Zero: no inbound URL; /in/ answers 404.
	Inbound *inbound.Tokens
	// Feed serves GET /v1/inbox/stream; nil answers it 503 not_ready.
	Feed *inboxfeed.Feed
	// Tail serves GET /v1/tail; nil answers it 503 not_ready.
	Tail *livetail.Feed
}

// Server is the REST API. Create it with New; serve Handler.
type Server struct {
	cfg    Config
	deps   Deps
	router *mux.Router
	// handler is router behind the inbox's CORS (withCORS).
	handler http.Handler
	// internal serves the internal routes when Config.SeparateInternal;
	// else it is router.
	internal *mux.Router
	logger   *slog.Logger
	ops      opsState
	limits   *tenantLimits
	// public limits the public pages per subscriber (see publicRate).
	public *tenantLimits
	// inbound limits the inbound URLs per channel (Config.InboundRate).
	inbound *tenantLimits
}

// New builds the router with every route of the contract.
func New(cfg Config, deps Deps) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Ready == nil {
		cfg.Ready = func() bool { return true }
	}
	if cfg.Live == nil {
		cfg.Live = func() bool { return true }
	}
	s := &Server{cfg: cfg, deps: deps, logger: cfg.Logger}
	s.limits = newTenantLimits(cfg.RateLimit)
	s.public = newTenantLimits(publicRate)
	s.inbound = newTenantLimits(cfg.InboundRate)
	r := s.newRouter()
	s.internal = r
	if cfg.SeparateInternal {
		s.internal = s.newRouter()
	}
	for _, rt := range s.routes() {
		h := rt.handler
		switch rt.auth {
		case authTenant:
			h = s.tenantAuth(h)
		case authAdmin:
			h = s.adminAuth(h)
		case authInternal:
			h = s.internalAuth(h)
		case authInbox, authInboxStream:
			h = s.inboxAuth(h, rt.auth == authInboxStream)
		}
		r := r
		if rt.auth == authInternal {
			r = s.internal
		}
		r.Handle(rt.path, s.wrap(rt.path, h)).Methods(rt.method).Name(rt.method + " " + rt.path)
	}
	s.router = r
	s.handler = headAsGet(s.withCORS(r))
	return s
}

// newRouter returns an empty router answering unmatched requests with the
// contract's 404 and 405.
func (s *Server) newRouter() *mux.Router {
	r := mux.NewRouter().UseEncodedPath()
	r.NotFoundHandler = s.wrap(unmatchedRoute, func(http.ResponseWriter, *http.Request) error { return errNotFound })
	r.MethodNotAllowedHandler = s.wrap(unmatchedRoute, func(http.ResponseWriter, *http.Request) error { return errMethod })
	return r
}

// Handler returns the API's root handler.
func (s *Server) Handler() http.Handler { return s.handler }

// InternalHandler returns the handler of the internal routes: with
// Config.SeparateInternal, the only one serving them; else Handler.
func (s *Server) InternalHandler() http.Handler { return s.internal }

type authKind int

const (
	authNone authKind = iota
	authTenant
	authAdmin
	authInternal
	// authInbox: an inbox token in the Authorization header (§13).
	authInbox
	// authInboxStream: an inbox token in the header or ?token=.
	authInboxStream
)

// handlerFunc is a handler that returns its failure.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

type route struct {
	method, path string
	auth         authKind
	handler      handlerFunc
}

// routes lists every route of the API: the one place they are declared.
func (s *Server) routes() []route {
	return []route{
		{"GET", "/", authNone, s.home},
		{"GET", "/healthz", authNone, s.healthz},
		{"GET", "/readyz", authNone, s.readyz},
		{"GET", "/metrics", authNone, s.metrics},
		{"GET", "/v1/openapi.json", authNone, s.openAPI},

		{"POST", "/v1/admin/tenants", authAdmin, s.createTenant},
		{"POST", "/v1/admin/tenants/{tenantId}/api-keys", authAdmin, s.adminCreateAPIKey},
		{"GET", "/v1/admin/tenants", authAdmin, s.adminListTenants},
		{"GET", "/v1/admin/tenants/{tenantId}/api-keys", authAdmin, s.adminListAPIKeys},
		{"DELETE", "/v1/admin/tenants/{tenantId}/api-keys/{prefix}", authAdmin, s.adminRevokeAPIKey},
		{"GET", "/v1/admin/events", authAdmin, s.adminEvents},

		{"GET", "/v1/api-keys", authTenant, s.listAPIKeys},
		{"POST", "/v1/api-keys", authTenant, s.createAPIKey},
		{"DELETE", "/v1/api-keys/{prefix}", authTenant, s.revokeAPIKey},

		{"POST", "/v1/events", authTenant, s.trigger},
		{"POST", "/v1/events/bulk", authTenant, s.bulkEvents},
		{"POST", "/v1/events/{runId}/signal", authTenant, s.signal},
		{"GET", "/v1/runs", authTenant, s.listRuns},
		{"GET", "/v1/runs/{runId}", authTenant, s.getRun},
		{"POST", "/v1/runs/{runId}/cancel", authTenant, s.cancelRun},
		{"GET", "/v1/runs/{runId}/events", authTenant, s.runEvents},
		{"GET", "/v1/tail", authTenant, s.tail},
		{"POST", "/v1/runs/{runId}/rerun", authTenant, s.rerunRun},
		{"GET", "/v1/transactions", authTenant, s.listTransactions},
		{"GET", "/v1/transactions/{transactionId}", authTenant, s.getTransaction},
		{"POST", "/v1/transactions/{transactionId}/cancel", authTenant, s.cancelTransaction},
		{"POST", "/v1/signals", authTenant, s.signalTransaction},
		{"GET", "/v1/notifications", authTenant, s.listNotifications},
		{"POST", "/v1/sync", authTenant, s.sync},
		{"POST", "/v1/checks", authTenant, s.postCheck},
		{"GET", "/v1/workflows", authTenant, s.listWorkflows},
		{"GET", "/v1/workflows/{workflowId}/controls", authTenant, s.getControls},
		{"GET", "/v1/workflows/{workflowId}/controls/history", authTenant, s.controlHistory},
		{"PUT", "/v1/workflows/{workflowId}/controls/{stepId}", authTenant, s.putControls},
		{"DELETE", "/v1/workflows/{workflowId}/controls/{stepId}", authTenant, s.deleteControls},
		{"POST", "/v1/workflows/{workflowId}/controls/{stepId}/revert", authTenant, s.revertControls},
		{"POST", "/v1/workflows/{workflowId}/preview", authTenant, s.preview},
		{"GET", "/v1/layouts", authTenant, s.listLayouts},
		{"PUT", "/v1/layouts/{layoutId}", authTenant, s.putLayout},
		{"GET", "/v1/layouts/{layoutId}", authTenant, s.getLayout},
		{"DELETE", "/v1/layouts/{layoutId}", authTenant, s.deleteLayout},

		{"GET", "/v1/subscribers", authTenant, s.listSubscribers},
		{"POST", "/v1/subscribers/bulk", authTenant, s.bulkSubscribers},
		{"PUT", "/v1/subscribers/{externalId}", authTenant, s.putSubscriber},
		{"GET", "/v1/subscribers/{externalId}", authTenant, s.getSubscriber},
		{"DELETE", "/v1/subscribers/{externalId}", authTenant, s.deleteSubscriber},
		{"GET", "/v1/subscribers/{externalId}/preferences", authTenant, s.getPreferences},
		{"GET", "/v1/subscribers/{externalId}/explain", authTenant, s.explainSends},
		{"PATCH", "/v1/subscribers/{externalId}/preferences", authTenant, s.patchPreferences},
		{"GET", "/v1/subscribers/{externalId}/subscriptions", authTenant, s.listSubscriptions},
		{"PUT", "/v1/subscribers/{externalId}/subscriptions/{topicKey}", authTenant, s.subscribe},
		{"DELETE", "/v1/subscribers/{externalId}/subscriptions/{topicKey}", authTenant, s.unsubscribe},
		{"GET", "/v1/topics", authTenant, s.listTopics},
		{"PUT", "/v1/topics/{key}", authTenant, s.putTopic},
		{"GET", "/v1/topics/{key}", authTenant, s.getTopic},
		{"DELETE", "/v1/topics/{key}", authTenant, s.deleteTopic},
		{"GET", "/v1/topics/{key}/subscribers", authTenant, s.listTopicSubscribers},

		{"GET", "/v1/channels/catalog", authTenant, s.channelCatalog},
		{"GET", "/v1/channels", authTenant, s.listChannels},
		{"POST", "/v1/channels", authTenant, s.createChannel},
		{"PATCH", "/v1/channels/{key}", authTenant, s.patchChannel},
		{"DELETE", "/v1/channels/{key}", authTenant, s.deleteChannel},
		{"POST", "/v1/channels/{key}/inbound-token", authTenant, s.rotateInboundToken},
		{"POST", "/in/{token}", authNone, s.hearInbound},

		{"PUT", "/v1/bridge", authTenant, s.putBridge},
		{"GET", "/v1/bridge", authTenant, s.getBridge},

		{"GET", "/u/{token}", authNone, s.unsubscribeConfirm},
		{"POST", "/u/{token}", authNone, s.oneClickUnsubscribe},
		{"GET", "/p/{token}", authNone, s.preferencePage},
		{"POST", "/p/{token}", authNone, s.savePreferences},

		{"POST", "/v1/deliver", authInternal, s.deliver},
		{"GET", "/v1/deliveries", authTenant, s.listDeliveries},
		{"GET", "/v1/stats", authTenant, s.stats},

		{"GET", "/v1/suppressions", authTenant, s.listSuppressions},
		{"PUT", "/v1/suppressions/{kind}/{address}", authTenant, s.putSuppression},
		{"DELETE", "/v1/suppressions/{kind}/{address}", authTenant, s.deleteSuppression},
		{"POST", "/v1/webhooks", authTenant, s.createWebhook},
		{"GET", "/v1/webhooks", authTenant, s.listWebhooks},
		{"GET", "/v1/webhooks/{webhookId}", authTenant, s.getWebhook},
		{"PATCH", "/v1/webhooks/{webhookId}", authTenant, s.patchWebhook},
		{"DELETE", "/v1/webhooks/{webhookId}", authTenant, s.deleteWebhook},
		{"POST", "/v1/webhooks/{webhookId}/rotate-secret", authTenant, s.rotateWebhookSecret},
		{"GET", "/v1/webhooks/{webhookId}/attempts", authTenant, s.listWebhookAttempts},
		{"POST", "/v1/webhooks/{webhookId}/messages/{messageId}/resend", authTenant, s.resendWebhookMessage},
		{"POST", "/v1/subscribers/{externalId}/inbox-tokens", authTenant, s.mintInboxToken},
		{"POST", "/v1/subscribers/{externalId}/inbox-tokens/revoke", authTenant, s.revokeInboxTokens},
		{"GET", "/v1/subscribers/{externalId}/inbox", authTenant, s.subscriberInbox},
		{"GET", "/v1/inbox/messages", authInbox, s.inboxMessages},
		{"GET", "/v1/inbox/counts", authInbox, s.inboxCounts},
		{"POST", "/v1/inbox/messages/{messageId}/read", authInbox, s.markInboxMessage("read")},
		{"POST", "/v1/inbox/messages/{messageId}/unread", authInbox, s.markInboxMessage("unread")},
		{"POST", "/v1/inbox/messages/{messageId}/seen", authInbox, s.markInboxMessage("seen")},
		{"POST", "/v1/inbox/messages/{messageId}/archive", authInbox, s.markInboxMessage("archive")},
		{"POST", "/v1/inbox/messages/{messageId}/unarchive", authInbox, s.markInboxMessage("unarchive")},
		{"POST", "/v1/inbox/read-all", authInbox, s.inboxReadAll},
		{"GET", "/v1/inbox/stream", authInboxStream, s.inboxStream},
		{"GET", "/inbox.js", authNone, s.inboxScript},
		{"GET", "/console", authNone, s.consolePage},
		{"GET", "/console/", authNone, s.consolePage},
		{"GET", "/console/assets/{name:.+}", authNone, s.consoleAsset},
		{"GET", "/favicon.ico", authNone, s.favicon},
		{"GET", "/console/{page:(?:runs|subscribers|topics|workflows|deliveries|webhooks|tail)(?:/.*)?}", authNone, s.consolePage},
		{"GET", "/inbox/demo", authNone, s.inboxDemo},
	}
}

// wrap turns a handlerFunc into an http.Handler: it writes the error
// body of a returned error, recovers panics as 500, logs each request and
// records it in the metrics under route (the route's template).
func (s *Server) wrap(route string, h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				s.logger.Error("panic serving request", "method", r.Method, "path", r.URL.Path,
					"panic", p, "stack", string(debug.Stack()))
				if rec.status == 0 {
					s.writeError(rec, r, errors.New("panic"))
				}
			}
			s.observe(rec, r, route, time.Since(start))
		}()
		if err := h(rec, r); err != nil {
			s.writeError(rec, r, err)
		}
	})
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, body := describe(err)
	if status == http.StatusInternalServerError {
		s.logger.Error("request failed", "method", r.Method, "path", r.URL.Path,
			"tenant", requestTenant(w, r), "err", err)
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", "Bearer")
	}
	if status == http.StatusServiceUnavailable && body.Code == apierr.CodeBusy {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, status, errorBody{Error: body})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
	tenant string // the authenticated tenant, for the request log
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (deadlines).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Flush lets streaming handlers flush through the recorder.
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

type ctxKey int

const (
	tenantKey ctxKey = 0
	// keyPrefixKey: the prefix of the API key a tenant route was called
	// with (1 is inboxKey).
	keyPrefixKey ctxKey = 2
)

func tenantOf(ctx context.Context) string {
	t, _ := ctx.Value(tenantKey).(string)
	return t
}

// keyPrefixOf returns the prefix of the API key of a tenant route's call.
func keyPrefixOf(ctx context.Context) string {
	p, _ := ctx.Value(keyPrefixKey).(string)
	return p
}

func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) < 7 || !strings.EqualFold(h[:7], "Bearer ") {
		return ""
	}
	return strings.TrimSpace(h[7:])
}

// errTenantWantsKey answers a subscriber's inbox token on a tenant route.
var errTenantWantsKey = apierr.New(apierr.CodeUnauthorized,
	"this route takes a tenant API key (hk_…); an inbox token opens only the /v1/inbox routes")

func (s *Server) tenantAuth(next handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		tenant, err := s.deps.Control.Authenticate(bearer(r))
		if errors.Is(err, apierr.ErrUnauthenticated) && strings.HasPrefix(bearer(r), "hk_") {
			// A key minted through another process a moment ago: look
			// again once the projections hold every acknowledged write.
			if werr := s.caughtUp(r); werr == nil {
				tenant, err = s.deps.Control.Authenticate(bearer(r))
			}
		}
		if errors.Is(err, apierr.ErrUnauthenticated) && strings.HasPrefix(bearer(r), control.InboxTokenPrefix) {
			return errTenantWantsKey
		}
		if err != nil {
			return err
		}
		noteTenant(w, tenant)
		if err := s.limitTenant(w, tenant); err != nil {
			return err
		}
		ctx := context.WithValue(context.WithValue(r.Context(), tenantKey, tenant), keyPrefixKey, control.KeyPrefix(bearer(r)))
		return next(w, r.WithContext(ctx))
	}
}

func (s *Server) adminAuth(next handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if !equalToken(bearer(r), s.cfg.AdminToken) {
			return errUnauthorized
		}
		return next(w, r)
	}
}

func (s *Server) internalAuth(next handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		tenant := r.Header.Get("x-herald-tenant-id")
		if !equalToken(r.Header.Get("x-herald-internal-token"), s.cfg.InternalToken) || tenant == "" {
			return errUnauthorized
		}
		// The tenant id goes raw into subjects: only a minted one passes.
		if !control.ValidTenantID(tenant) {
			return errBadTenantHeader
		}
		noteTenant(w, tenant)
		return next(w, r.WithContext(context.WithValue(r.Context(), tenantKey, tenant)))
	}
}

// equalToken compares a presented token with the expected one in
// constant time; an empty expected token matches nothing.
func equalToken(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// pathVar returns a path parameter, percent-decoded.
func pathVar(r *http.Request, name string) (string, error) {
	v, err := url.PathUnescape(mux.Vars(r)[name])
	if err != nil {
		var p apierr.Problems
		p.Add(name, "is not a valid percent-encoded path segment")
		return "", p.Err()
	}
	return v, nil
}

// pathOnly returns the path variable name of a command whose only input
// is its path: its body must be empty or {}.
func pathOnly(w http.ResponseWriter, r *http.Request, name string) (string, error) {
	v, err := pathVar(r, name)
	if err != nil {
		return "", err
	}
	if err := decode(w, r, &struct{}{}); err != nil {
		return "", err
	}
	return v, nil
}

// maxCursorBytes bounds ?cursor=: a cursor this API issued encodes one
// key (an externalId is at most 1 KiB of UTF-8), well under it.
const maxCursorBytes = 4096

// page reads ?limit= (1–500, default 50) and ?cursor= (at most
// maxCursorBytes).
func page(r *http.Request) (projections.Page, error) { return pageUpTo(r, maxCursorBytes) }

// pageUpTo is page for a list whose cursors may be longer: at most
// maxCursor bytes.
func pageUpTo(r *http.Request, maxCursor int) (projections.Page, error) {
	p := projections.Page{Limit: 50, Cursor: r.URL.Query().Get("cursor")}
	if len(p.Cursor) > maxCursor {
		return p, projections.ErrBadCursor
	}
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			var probs apierr.Problems
			probs.Add("limit", "must be an integer from 1 to 500")
			return p, probs.Err()
		}
		p.Limit = n
	}
	return p, nil
}

// caughtUp makes a read see every write acknowledged before it, through
// any process.
func (s *Server) caughtUp(r *http.Request) error {
	return s.deps.Store.WaitCaughtUp(r.Context(), s.deps.Log)
}
