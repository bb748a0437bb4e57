package control

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
	"github.com/heraldhq/herald/webhooks"
)

const (
	// MaxWebhooks bounds the webhook endpoints of one tenant.
	MaxWebhooks = 20
	// maxWebhookDescription bounds an endpoint's description, in
	// characters.
	maxWebhookDescription = 256
	// webhookSecretBytes is the number of random bytes of an endpoint's
	// signing secret (whsec_ and their standard base64).
	webhookSecretBytes = 32
	// WebhookSecretOverlap is how long the secret a rotation replaced
	// keeps signing next to the new one.
	WebhookSecretOverlap = 24 * time.Hour
)

// WebhookInput is the command of POST /v1/webhooks.
type WebhookInput struct {
	// URL is where messages are POSTed: an absolute http(s) URL. Required.
	URL string
	// Events are the webhook event types sent (events.WebhookTypes), or
	// "*" for all. Required, at least one.
	Events []string
	// Description is free text for the tenant, at most 256 characters.
	Description string
}

// WebhookPatch is the command of PATCH /v1/webhooks/{id}: a nil field is
// left as it was; at least one must be set.
type WebhookPatch struct {
	URL         *string
	Events      *[]string
	Enabled     *bool
	Description *string
}

// CreateWebhook creates a webhook endpoint for the tenant with a new
// signing secret, sealed in the log and returned in clear only here (and
// by RotateWebhookSecret). The endpoint receives the events stored after
// it.
//
// Errors: a *apierr.ValidationError naming url, events or description;
// an *apierr.Error of kind apierr.ErrConflict with code webhook_limit when
// the tenant has MaxWebhooks endpoints. A process checks and creates one
// endpoint of a tenant at a time, so concurrent creations cannot pass the
// bound together; across the processes of a cluster a tenant could reach
// at most MaxWebhooks per process.
func (c *Control) CreateWebhook(ctx context.Context, tenant string, in WebhookInput) (projections.Webhook, string, error) {
	var p apierr.Problems
	c.checkWebhookEndpointURL(ctx, in.URL, &p)
	evs := checkWebhookEvents(in.Events, &p)
	checkWebhookDescription(in.Description, &p)
	if err := p.Err(); err != nil {
		return projections.Webhook{}, "", err
	}
	mu := &c.webhookCreates[stripe(tenant, len(c.webhookCreates))]
	mu.Lock()
	defer mu.Unlock()
	if n, err := c.store.WebhookCount(tenant); err != nil {
		return projections.Webhook{}, "", err
	} else if n >= MaxWebhooks {
		return projections.Webhook{}, "", apierr.Errorf(apierr.CodeWebhookLimit,
			"a tenant has at most %d webhook endpoints", MaxWebhooks)
	}
	id := eventlog.NewID("wh_")
	secret, sealed, err := c.newWebhookSecret(tenant, id)
	if err != nil {
		return projections.Webhook{}, "", err
	}
	if _, err := c.commit(ctx, eventlog.Record{
		Subject: eventlog.Subject(tenant, eventlog.AggWebhook, id), Type: events.WebhookCreated, Tenant: tenant,
		Data: events.WebhookCreatedData{WebhookID: id, URL: in.URL, Events: evs, Description: in.Description,
			SealedSecret: sealed},
		Expect: true, ExpectSeq: 0,
	}); err != nil {
		return projections.Webhook{}, "", err
	}
	w, err := c.store.Webhook(tenant, id)
	return w, secret, err
}

// UpdateWebhook applies a PATCH to one of the tenant's endpoints and
// returns it as the projections hold it.
//
// Errors: apierr.ErrBadRequest (empty_patch) when no field is set;
// apierr.ErrNotFound (webhook_not_found); a *apierr.ValidationError naming
// url, events or description.
func (c *Control) UpdateWebhook(ctx context.Context, tenant, id string, patch WebhookPatch) (projections.Webhook, error) {
	if patch.URL == nil && patch.Events == nil && patch.Enabled == nil && patch.Description == nil {
		return projections.Webhook{}, apierr.Errorf(apierr.CodeEmptyPatch,
			"a patch needs url, events, enabled or description")
	}
	if err := checkWebhookID(id); err != nil {
		return projections.Webhook{}, err
	}
	var p apierr.Problems
	d := events.WebhookUpdatedData{WebhookID: id, URL: patch.URL, Enabled: patch.Enabled, Description: patch.Description}
	if patch.URL != nil {
		c.checkWebhookEndpointURL(ctx, *patch.URL, &p)
	}
	if patch.Events != nil {
		evs := checkWebhookEvents(*patch.Events, &p)
		d.Events = &evs
	}
	if patch.Description != nil {
		checkWebhookDescription(*patch.Description, &p)
	}
	if err := p.Err(); err != nil {
		return projections.Webhook{}, err
	}
	if err := c.changeWebhook(ctx, tenant, id, events.WebhookUpdated, d); err != nil {
		return projections.Webhook{}, err
	}
	return c.store.Webhook(tenant, id)
}

// DeleteWebhook deletes one of the tenant's endpoints with its attempts;
// messages still queued for it are dropped. Errors: apierr.ErrNotFound
// (webhook_not_found).
func (c *Control) DeleteWebhook(ctx context.Context, tenant, id string) error {
	if err := checkWebhookID(id); err != nil {
		return err
	}
	return c.changeWebhook(ctx, tenant, id, events.WebhookDeleted, events.WebhookDeletedData{WebhookID: id})
}

// RotateWebhookSecret draws a new signing secret for one of the tenant's
// endpoints and returns the endpoint and the secret in clear (shown only
// here). Messages are signed with both the new and the replaced secret
// for WebhookSecretOverlap, then with the new one only. Errors:
// apierr.ErrNotFound (webhook_not_found).
func (c *Control) RotateWebhookSecret(ctx context.Context, tenant, id string) (projections.Webhook, string, error) {
	if err := checkWebhookID(id); err != nil {
		return projections.Webhook{}, "", err
	}
	secret, sealed, err := c.newWebhookSecret(tenant, id)
	if err != nil {
		return projections.Webhook{}, "", err
	}
	subject := eventlog.Subject(tenant, eventlog.AggWebhook, id)
	err = c.update(ctx, subject, func(seq uint64) error {
		cur, err := c.store.Webhook(tenant, id)
		if err != nil {
			return webhookErr(err, id)
		}
		_, err = c.commit(ctx, eventlog.Record{Subject: subject, Type: events.WebhookSecretRotated, Tenant: tenant,
			Data: events.WebhookSecretRotatedData{WebhookID: id, SealedSecret: sealed,
				PreviousSealed: cur.SealedSecret, PreviousUntil: time.Now().Add(WebhookSecretOverlap).UTC()},
			Expect: true, ExpectSeq: seq})
		return err
	})
	if err != nil {
		return projections.Webhook{}, "", err
	}
	w, err := c.store.Webhook(tenant, id)
	return w, secret, err
}

// Webhook returns one of the tenant's endpoints, or apierr.ErrNotFound
// (webhook_not_found).
func (c *Control) Webhook(tenant, id string) (projections.Webhook, error) {
	if err := checkWebhookID(id); err != nil {
		return projections.Webhook{}, err
	}
	w, err := c.store.Webhook(tenant, id)
	return w, webhookErr(err, id)
}

// Webhooks returns a page of the tenant's endpoints in id order.
func (c *Control) Webhooks(tenant string, p projections.Page) ([]projections.Webhook, string, error) {
	return c.store.Webhooks(tenant, p)
}

// WebhookAttempts returns a page of one endpoint's delivery attempts,
// oldest first (newest first when desc), or apierr.ErrNotFound
// (webhook_not_found).
func (c *Control) WebhookAttempts(tenant, id string, p projections.Page, desc bool) ([]projections.WebhookAttempt, string, error) {
	if _, err := c.Webhook(tenant, id); err != nil {
		return nil, "", err
	}
	return c.store.WebhookAttempts(tenant, id, p, desc)
}

// changeWebhook appends one event of typ to an existing endpoint's
// subject, expecting the subject's last sequence.
func (c *Control) changeWebhook(ctx context.Context, tenant, id, typ string, data any) error {
	subject := eventlog.Subject(tenant, eventlog.AggWebhook, id)
	return c.appendIfFound(ctx, tenant, subject, typ, data, func() error {
		_, err := c.store.Webhook(tenant, id)
		return webhookErr(err, id)
	})
}

// newWebhookSecret draws a signing secret for endpoint id of tenant and
// seals it.
func (c *Control) newWebhookSecret(tenant, id string) (secret, sealed string, err error) {
	raw := make([]byte, webhookSecretBytes)
	if _, err := rand.Read(raw); err != nil {
		return "", "", err
	}
	secret = "whsec_" + base64.StdEncoding.EncodeToString(raw)
	if sealed, err = c.keys.Seal([]byte(secret), events.WebhookSecretAAD(tenant, id)); err != nil {
		return "", "", fmt.Errorf("control: sealing a webhook secret: %w", err)
	}
	return secret, sealed, nil
}

// checkWebhookEndpointURL adds what is wrong with an endpoint URL to p:
// the rules of a Bridge URL (absolute http(s), a host, no credentials, at
// most 2048 bytes) and the egress policy.
func (c *Control) checkWebhookEndpointURL(ctx context.Context, raw string, p *apierr.Problems) {
	if problem := checkWebhookURL(raw); problem != "" {
		p.Add("url", "%s", problem)
	} else if problem := c.checkDestinationURL(ctx, raw); problem != "" {
		p.Add("url", "%s", problem)
	}
}

// checkWebhookEvents adds what is wrong with an events list to p and
// returns it without repeats, in the order sent.
func checkWebhookEvents(in []string, p *apierr.Problems) []string {
	if len(in) == 0 {
		p.Add("events", "must list at least one event type, or \"*\"")
		return nil
	}
	if limit := 2 * len(events.WebhookTypes); len(in) > limit {
		p.Add("events", "must list at most %d entries", limit)
		return nil
	}
	out := make([]string, 0, len(in))
	for i, e := range in {
		if e != events.WebhookAll && !slices.Contains(events.WebhookTypes, e) {
			p.Add(fmt.Sprintf("events[%d]", i), "is not a webhook event type (one of run.completed, run.failed, "+
				"run.cancelled, delivery.sent, delivery.failed, delivery.skipped, inbox.read, inbox.archived, or *)")
			continue
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

func checkWebhookDescription(d string, p *apierr.Problems) {
	if !utf8.ValidString(d) || utf8.RuneCountInString(d) > maxWebhookDescription {
		p.Add("description", "must be at most %d characters of UTF-8", maxWebhookDescription)
	}
}

// checkWebhookID refuses an id no endpoint can have (over 64 bytes) with
// the answer of an unknown one.
func checkWebhookID(id string) error {
	if id == "" || len(id) > 64 {
		return webhookNotFound(id)
	}
	return nil
}

func webhookNotFound(id string) error { return webhookErr(projections.ErrNotFound, id) }

// webhookErr is err of a read of endpoint id: webhook_not_found when the
// endpoint does not exist.
func webhookErr(err error, id string) error {
	return notFound(err, apierr.CodeWebhookNotFound, "no webhook %.64q exists", id)
}

// stripe maps a tenant to one of n lock stripes.
func stripe(tenant string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(tenant))
	return int(h.Sum32() % uint32(n))
}

// maxWebhookMessageIDBytes bounds a webhook message id in a path (the ids
// Herald makes are 36 bytes).
const maxWebhookMessageIDBytes = 64

// ResendWebhookMessage queues one more attempt of a message the endpoint
// has attempts of (among the ones it keeps), with the same webhook-id and
// signature scheme, and records who asked (actor, a key's prefix) as a
// WebhookResendRequested. Errors: apierr.ErrNotFound (webhook_not_found,
// message_not_found: no kept attempt of it, an attempt recorded before
// resends could read its event again, or its event erased since).
func (c *Control) ResendWebhookMessage(ctx context.Context, tenant, id, messageID, actor string) error {
	if err := checkWebhookID(id); err != nil {
		return err
	}
	if _, err := c.Webhook(tenant, id); err != nil {
		return err
	}
	notFound := apierr.Errorf(apierr.CodeMessageNotFound, "endpoint %s has no message %q it can send again", id, clipID(messageID))
	if messageID == "" || len(messageID) > maxWebhookMessageIDBytes {
		return notFound
	}
	last, err := c.store.WebhookMessage(tenant, id, messageID)
	if errors.Is(err, projections.ErrNotFound) || (err == nil && last.EventSeq == 0) {
		return notFound
	}
	if err != nil {
		return err
	}
	seq, err := c.commit(ctx, eventlog.Record{Subject: eventlog.Subject(tenant, eventlog.AggWebhookAttempts, id),
		Type: events.WebhookResendRequested, Tenant: tenant,
		Data: events.WebhookResendRequestedData{WebhookID: id, MessageID: messageID, Actor: actor}})
	if err != nil {
		return err
	}
	err = webhooks.Resend(ctx, c.log, tenant, id, messageID, last.EventSeq, last.Attempt, strconv.FormatUint(seq, 10))
	if errors.Is(err, webhooks.ErrMessageGone) {
		return notFound
	}
	return err
}

// clipID shortens an id quoted in an error message.
func clipID(s string) string {
	if len(s) > maxWebhookMessageIDBytes {
		return s[:maxWebhookMessageIDBytes] + "…"
	}
	return s
}
