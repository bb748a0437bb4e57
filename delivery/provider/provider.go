// Package provider is the contract between delivery and the packages that
// speak to one provider each (delivery/smtp, delivery/ses,
// delivery/twilio, delivery/slack, delivery/fcm, delivery/webhook and the
// others the registry in package delivery lists): the
// message a provider sends, the one method it implements, and the three
// ways a send can fail, which decide failover (CONTRACT.md §10).
//
// Providers know nothing of runs, ledgers or channels' priorities: they
// send one message on one configured channel and say what became of it.
// Failover, skipped sends and the ledger stay in package delivery.
package provider

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Message is one message to send on one channel.
type Message struct {
	// Tenant, WorkflowID, RunID, StepID and SubscriberID name the send
	// step; providers that carry them (the webhook body) copy them.
	Tenant, WorkflowID, RunID, StepID, SubscriberID string
	// IdempotencyKey is the same on every try of one send step on one
	// channel. A provider whose API accepts an idempotency key passes it
	// (or a digest of it, when the API bounds its length), so that a retry
	// of an unknown outcome is not sent twice.
	IdempotencyKey string
	// To is the recipient's address of the channel's kind: an email
	// address, an E.164 number, a Slack channel or user id, a device
	// token. Empty for the kinds that need none (in_app, webhook).
	To string
	// Content is the send step's content, already validated for the kind:
	// it decodes into the kind's type in bridge/wire (wire.EmailContent,
	// wire.SMSContent, wire.ChatContent, wire.PushContent,
	// wire.InAppContent, wire.WebhookContent).
	Content json.RawMessage
	// ListUnsubscribe is the one-click unsubscribe URL of an email (RFC
	// 8058): email providers send it as List-Unsubscribe with
	// List-Unsubscribe-Post. Empty for none; other kinds ignore it.
	ListUnsubscribe string
}

// Provider sends messages on one configured channel. Implementations are
// safe for concurrent use. One that holds connections between sends (an
// SMTP session pool) also implements io.Closer: delivery closes it when
// the channel's config changes and when delivery stops, and a Send after
// Close fails as ErrNotSent.
type Provider interface {
	// Send sends m once and returns the provider's id of the message ("" if
	// it gives none). A failure is an error wrapping exactly one of
	// ErrNotSent, ErrOutcomeUnknown and ErrRejected (an *Error does), and
	// names no secret of the channel's config.
	Send(ctx context.Context, m Message) (providerMessageID string, err error)
}

// Deps are what a provider's constructor is given by delivery.
type Deps struct {
	// HTTPClient is the client for a provider's HTTP API: its transport
	// dials through the egress policy and it follows no redirect. Never
	// nil when delivery builds a provider.
	HTTPClient *http.Client
	// Logger receives the provider's words a tenant must not see (a
	// provider's error text). Never nil when delivery builds a provider.
	Logger *slog.Logger
	// Now is the clock. Never nil when delivery builds a provider.
	Now func() time.Time
	// Dial opens the connections of a provider whose protocol is not HTTP
	// (SMTP): like HTTPClient's, it dials through the egress policy. Never
	// nil when delivery builds a provider.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// TLSConfig is the base of the TLS configuration of the connections
	// Dial opens (its RootCAs; the provider sets the server name). Nil:
	// the system's roots.
	TLSConfig *tls.Config
}

// New builds a provider from a channel's opened config (its public and
// secret fields merged, as validated against the channel's JSON Schema).
// It fails only on a config that cannot work, with an error that names
// the field and no secret.
type New func(config map[string]any, deps Deps) (Provider, error)
