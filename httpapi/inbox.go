package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/inboxui"
	"github.com/heraldhq/herald/projections"
)

// The in-app inbox (CONTRACT §13): the subscriber routes under /v1/inbox
// authenticate with an inbox token (control.AuthenticateInbox), never an
// API key; the back-end routes (minting a token, listing a subscriber's
// inbox) with the tenant's API key.

// inboxKey is the context key of the authenticated inbox identity.
const inboxKey ctxKey = 1

func inboxOf(ctx context.Context) control.InboxIdentity {
	id, _ := ctx.Value(inboxKey).(control.InboxIdentity)
	return id
}

// maxMessageIDChars bounds a {messageId}: a message id this service made
// is 28 characters; a longer one is no message (404).
const maxMessageIDChars = 64

// errInboxWantsToken answers a tenant API key on an inbox route.
var errInboxWantsToken = apierr.New(apierr.CodeUnauthorized,
	"this route takes a subscriber's inbox token (hit_…, minted by POST /v1/subscribers/{externalId}/inbox-tokens), not a tenant API key")

// errInboxTokenInvalid answers an inbox route whose token does not open
// it: missing, malformed, expired, revoked, or its subscriber's deleted.
var errInboxTokenInvalid = apierr.New(apierr.CodeUnauthorized,
	"invalid inbox token: it is missing, malformed, expired or revoked; mint a new one with POST /v1/subscribers/{externalId}/inbox-tokens")

// inboxAuth authenticates a subscriber route with an inbox token: the
// Authorization header's, or (when query is set: the stream, which a
// browser's EventSource opens without headers) ?token=. The tenant's rate
// limit applies.
func (s *Server) inboxAuth(next handlerFunc, query bool) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		raw := bearer(r)
		if raw == "" && query {
			raw = r.URL.Query().Get("token")
		}
		id, err := s.deps.Control.AuthenticateInbox(raw)
		if errors.Is(err, apierr.ErrUnauthenticated) && strings.HasPrefix(raw, control.InboxTokenPrefix) {
			// A subscriber created through another process a moment ago.
			if werr := s.caughtUp(r); werr == nil {
				id, err = s.deps.Control.AuthenticateInbox(raw)
			}
		}
		if errors.Is(err, apierr.ErrUnauthenticated) && strings.HasPrefix(raw, "hk_") {
			// A tenant's API key on a subscriber's route: saying only
			// "invalid" would send its owner looking for a fault in a
			// key that may be fine. Whether it is, is not checked.
			return errInboxWantsToken
		}
		if errors.Is(err, apierr.ErrUnauthenticated) {
			return errInboxTokenInvalid
		}
		if err != nil {
			return err
		}
		noteTenant(w, id.Tenant)
		if err := s.limitTenant(w, id.Tenant); err != nil {
			return err
		}
		return next(w, r.WithContext(context.WithValue(r.Context(), inboxKey, id)))
	}
}

// messageView is an in-app message as the API shows it; its content
// fields are the in_app send content's (absent ones null).
type messageView struct {
	MessageID     string          `json:"messageId"`
	WorkflowID    *string         `json:"workflowId"`
	RunID         string          `json:"runId"`
	Subject       *string         `json:"subject"`
	Body          string          `json:"body"`
	Data          json.RawMessage `json:"data"`
	PrimaryAction json.RawMessage `json:"primaryAction"`
	CreatedAt     string          `json:"createdAt"`
	SeenAt        *string         `json:"seenAt"`
	ReadAt        *string         `json:"readAt"`
	ArchivedAt    *string         `json:"archivedAt"`
}

func viewMessage(m projections.InAppMessage) messageView {
	var c struct {
		Subject       string          `json:"subject"`
		Body          string          `json:"body"`
		Data          json.RawMessage `json:"data"`
		PrimaryAction json.RawMessage `json:"primaryAction"`
	}
	_ = json.Unmarshal(m.Content, &c) // checked by delivery before it was stored
	v := messageView{MessageID: m.MessageID, RunID: m.RunID, Body: c.Body, CreatedAt: ts(m.CreatedAt),
		SeenAt: tsPtr(m.SeenAt), ReadAt: tsPtr(m.ReadAt), ArchivedAt: tsPtr(m.ArchivedAt)}
	if m.WorkflowID != "" {
		v.WorkflowID = &m.WorkflowID
	}
	if c.Subject != "" {
		v.Subject = &c.Subject
	}
	if len(c.Data) > 0 && string(c.Data) != "null" {
		v.Data = c.Data
	} else {
		v.Data = json.RawMessage("null")
	}
	if len(c.PrimaryAction) > 0 {
		v.PrimaryAction = c.PrimaryAction
	} else {
		v.PrimaryAction = json.RawMessage("null")
	}
	return v
}

// countsView is GET /v1/inbox/counts and the stream's counts event.
type countsView struct {
	Unread int `json:"unread"`
	Unseen int `json:"unseen"`
}

// mintInboxToken is POST /v1/subscribers/{externalId}/inbox-tokens.
func (s *Server) mintInboxToken(w http.ResponseWriter, r *http.Request) error {
	id, err := pathOnly(w, r, "externalId")
	if err != nil {
		return err
	}
	tok, err := s.deps.Control.MintInboxToken(r.Context(), tenantOf(r.Context()), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]string{"token": tok.Token, "expiresAt": ts(tok.ExpiresAt)})
	return nil
}

// revokeInboxTokens is POST
// /v1/subscribers/{externalId}/inbox-tokens/revoke.
func (s *Server) revokeInboxTokens(w http.ResponseWriter, r *http.Request) error {
	id, err := pathOnly(w, r, "externalId")
	if err != nil {
		return err
	}
	if err := s.deps.Control.RevokeInboxTokens(r.Context(), tenantOf(r.Context()), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// listInbox answers a list of one subscriber's inbox under ?filter=.
func (s *Server) listInbox(w http.ResponseWriter, r *http.Request, tenant, subscriberID string) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	filter, err := control.ParseInboxFilter(r.URL.Query().Get("filter"))
	if err != nil {
		return err
	}
	return answerPage(s, w, r, p, func(p projections.Page) ([]projections.InAppMessage, string, error) {
		return s.deps.Control.InboxMessages(tenant, subscriberID, filter, p)
	}, viewMessage)
}

// subscriberInbox is GET /v1/subscribers/{externalId}/inbox (tenant key).
func (s *Server) subscriberInbox(w http.ResponseWriter, r *http.Request) error {
	id, err := pathVar(r, "externalId")
	if err != nil {
		return err
	}
	tenant := tenantOf(r.Context())
	if err := s.caughtUp(r); err != nil {
		return err
	}
	if _, err := s.deps.Control.Subscriber(tenant, id); err != nil {
		return err
	}
	return s.listInbox(w, r, tenant, id)
}

// inboxMessages is GET /v1/inbox/messages.
func (s *Server) inboxMessages(w http.ResponseWriter, r *http.Request) error {
	id := inboxOf(r.Context())
	return s.listInbox(w, r, id.Tenant, id.SubscriberID)
}

// inboxCounts is GET /v1/inbox/counts.
func (s *Server) inboxCounts(w http.ResponseWriter, r *http.Request) error {
	id := inboxOf(r.Context())
	if err := s.caughtUp(r); err != nil {
		return err
	}
	c, err := s.deps.Store.InboxCounts(id.Tenant, id.SubscriberID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, countsView{Unread: c.Unread, Unseen: c.Unseen})
	return nil
}

// markInboxMessage returns the handler of POST
// /v1/inbox/messages/{messageId}/<action>.
func (s *Server) markInboxMessage(action string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		msgID, err := pathVar(r, "messageId")
		if err != nil || len(msgID) > maxMessageIDChars {
			return apierr.New(apierr.CodeMessageNotFound, "no such message")
		}
		if err := decode(w, r, &struct{}{}); err != nil {
			return err
		}
		id := inboxOf(r.Context())
		m, err := s.deps.Control.MarkInboxMessage(r.Context(), id.Tenant, id.SubscriberID, msgID, action)
		return reply(w, http.StatusOK, m, err, viewMessage)
	}
}

// inboxReadAll is POST /v1/inbox/read-all.
func (s *Server) inboxReadAll(w http.ResponseWriter, r *http.Request) error {
	if err := decode(w, r, &struct{}{}); err != nil {
		return err
	}
	id := inboxOf(r.Context())
	n, err := s.deps.Control.MarkAllInboxRead(r.Context(), id.Tenant, id.SubscriberID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]int{"updated": n})
	return nil
}

// inboxScript is GET /inbox.js: the <herald-inbox> web component.
func (s *Server) inboxScript(w http.ResponseWriter, _ *http.Request) error {
	return writeAsset(w, "text/javascript; charset=utf-8", "public, max-age=300", inboxui.Script)
}

// inboxDemo is GET /inbox/demo: a page showing the component.
func (s *Server) inboxDemo(w http.ResponseWriter, _ *http.Request) error {
	h := w.Header()
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'unsafe-inline'; "+
		"connect-src *; frame-ancestors 'none'")
	return writeAsset(w, "text/html; charset=utf-8", "no-store", inboxui.Demo)
}

// writeAsset answers 200 with body, a static file of the inbox, of
// contentType and cached as cache says; a browser never sniffs it into
// another type.
func writeAsset(w http.ResponseWriter, contentType, cache string, body []byte) error {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", cache)
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	return nil
}
