package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
	"github.com/heraldhq/herald/webhooks"
)

// webhookView is an endpoint as the API shows it: the secret only in the
// answers of a create and a rotation.
type webhookView struct {
	WebhookID   string   `json:"webhookId"`
	URL         string   `json:"url"`
	Events      []string `json:"events"`
	Description string   `json:"description"`
	Enabled     bool     `json:"enabled"`
	Secret      string   `json:"secret,omitempty"`
	CreatedAt   string   `json:"createdAt"`
	UpdatedAt   string   `json:"updatedAt"`
}

func viewWebhook(wh projections.Webhook) webhookView {
	return webhookView{WebhookID: wh.WebhookID, URL: wh.URL, Events: wh.Events, Description: wh.Description,
		Enabled: wh.Enabled, CreatedAt: ts(wh.CreatedAt), UpdatedAt: ts(wh.UpdatedAt)}
}

// webhookAttemptView is one row of GET /v1/webhooks/{id}/attempts; eventId
// is the message's webhook-id.
type webhookAttemptView struct {
	WebhookID  string `json:"webhookId"`
	EventID    string `json:"eventId"`
	Type       string `json:"type"`
	Status     string `json:"status"`
	HTTPStatus int    `json:"httpStatus"`
	Attempt    int    `json:"attempt"`
	CreatedAt  string `json:"createdAt"`
}

type createWebhookRequest struct {
	URL         string   `json:"url"`
	Events      []string `json:"events"`
	Description string   `json:"description"`
}

type patchWebhookRequest struct {
	URL         *string   `json:"url"`
	Events      *[]string `json:"events"`
	Enabled     *bool     `json:"enabled"`
	Description *string   `json:"description"`
}

func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request) error {
	var req createWebhookRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	wh, secret, err := s.deps.Control.CreateWebhook(r.Context(), tenantOf(r.Context()),
		control.WebhookInput{URL: req.URL, Events: req.Events, Description: req.Description})
	if err != nil {
		return err
	}
	v := viewWebhook(wh)
	v.Secret = secret
	writeJSON(w, http.StatusCreated, v)
	return nil
}

func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request) error {
	return servePage(s, w, r, func(p projections.Page) ([]projections.Webhook, string, error) {
		return s.deps.Control.Webhooks(tenantOf(r.Context()), p)
	}, viewWebhook)
}

func (s *Server) getWebhook(w http.ResponseWriter, r *http.Request) error {
	return serveByPath(s, w, r, "webhookId", s.deps.Control.Webhook, viewWebhook)
}

func (s *Server) patchWebhook(w http.ResponseWriter, r *http.Request) error {
	id, err := pathVar(r, "webhookId")
	if err != nil {
		return err
	}
	var req patchWebhookRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	wh, err := s.deps.Control.UpdateWebhook(r.Context(), tenantOf(r.Context()), id, control.WebhookPatch{
		URL: req.URL, Events: req.Events, Enabled: req.Enabled, Description: req.Description})
	return reply(w, http.StatusOK, wh, err, viewWebhook)
}

func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request) error {
	return removeByPath(w, r, "webhookId", s.deps.Control.DeleteWebhook)
}

func (s *Server) rotateWebhookSecret(w http.ResponseWriter, r *http.Request) error {
	id, err := pathOnly(w, r, "webhookId")
	if err != nil {
		return err
	}
	wh, secret, err := s.deps.Control.RotateWebhookSecret(r.Context(), tenantOf(r.Context()), id)
	if err != nil {
		return err
	}
	v := viewWebhook(wh)
	v.Secret = secret
	writeJSON(w, http.StatusOK, v)
	return nil
}

// resendView is the answer of POST
// /v1/webhooks/{webhookId}/messages/{messageId}/resend.
type resendView struct {
	WebhookID string `json:"webhookId"`
	MessageID string `json:"messageId"`
	Accepted  bool   `json:"accepted"`
}

// resendWebhookMessage is POST /v1/webhooks/{webhookId}/messages/{messageId}/resend:
// one more attempt of a message the endpoint has attempts of, queued
// (202), recorded with the key's prefix as its actor.
func (s *Server) resendWebhookMessage(w http.ResponseWriter, r *http.Request) error {
	id, err := pathOnly(w, r, "webhookId")
	if err != nil {
		return err
	}
	msg, err := pathVar(r, "messageId")
	if err != nil {
		return err
	}
	if err := s.deps.Control.ResendWebhookMessage(r.Context(), tenantOf(r.Context()), id, msg, keyPrefix(bearer(r))); err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, resendView{WebhookID: id, MessageID: msg, Accepted: true})
	return nil
}

func (s *Server) listWebhookAttempts(w http.ResponseWriter, r *http.Request) error {
	id, err := pathVar(r, "webhookId")
	if err != nil {
		return err
	}
	desc, err := orderParam(r)
	if err != nil {
		return err
	}
	return servePage(s, w, r, func(p projections.Page) ([]projections.WebhookAttempt, string, error) {
		return s.deps.Control.WebhookAttempts(tenantOf(r.Context()), id, p, desc)
	}, func(a projections.WebhookAttempt) webhookAttemptView {
		return webhookAttemptView{WebhookID: a.WebhookID, EventID: a.MessageID, Type: a.Type, Status: a.Status,
			HTTPStatus: a.HTTPStatus, Attempt: a.Attempt, CreatedAt: ts(a.CreatedAt)}
	})
}

// WebhookData returns the renderer of webhook messages' data: the run of
// GET /v1/runs/{id}, the delivery row of GET /v1/deliveries, or the inbox
// message, read from store, in the very shapes the API answers with.
func WebhookData(store *projections.Store) webhooks.Renderer {
	return func(tenant string, ref webhooks.Ref) (json.RawMessage, error) {
		var v any
		switch ref.Type {
		case events.HookRunCompleted, events.HookRunFailed, events.HookRunCancelled:
			st, err := store.RunState(tenant, ref.RunID)
			if err != nil {
				return nil, err
			}
			v = viewRun(st)
		case events.HookDeliverySent, events.HookDeliveryFailed, events.HookDeliverySkipped,
			events.HookDeliveryDelivered, events.HookDeliveryBounced, events.HookDeliveryComplained,
			events.HookDeliveryOpened, events.HookDeliveryClicked:
			row, err := store.DeliveryByAttempt(tenant, ref.AttemptID)
			if err != nil {
				return nil, err
			}
			v = newDeliveryView(row)
		case events.HookInboxRead, events.HookInboxArchived:
			m, err := store.InboxMessage(tenant, ref.SubscriberID, ref.MessageID)
			if err != nil {
				return nil, err
			}
			v = viewMessage(m)
		default:
			return nil, fmt.Errorf("httpapi: no data for webhook event type %q", ref.Type)
		}
		return json.Marshal(v)
	}
}
