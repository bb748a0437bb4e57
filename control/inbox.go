package control

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
)

// Inbox tokens (CONTRACT §13): opaque bearer tokens a tenant's back-end
// mints for one of its subscribers, sealed by the keyring (encrypted and
// authenticated, purpose-bound, rotating with the master key).
const (
	// InboxTokenPrefix starts every inbox token.
	InboxTokenPrefix = "hit_"
	// DefaultInboxTokenTTL is how long an inbox token is accepted.
	DefaultInboxTokenTTL = 24 * time.Hour
	// MaxInboxTokenChars bounds a presented token: a token this service
	// made is about 250 characters (a 256-character externalId of 4-byte
	// runes makes one of about 1,700).
	MaxInboxTokenChars = 4096
	// markChunk bounds the message ids of one InboxMessagesMarked: a
	// read-all of a full inbox is written as several events.
	markChunk = 200

	inboxTokenPurpose = "inbox"
)

// inboxClaims are the sealed content of an inbox token.
type inboxClaims struct {
	Tenant     string `json:"t"`
	Subscriber string `json:"s"`
	// Expires is the end of the token's life, in Unix milliseconds.
	Expires int64 `json:"e"`
	// Epoch is the subscriber's token epoch when the token was minted
	// (projections.Subscriber.TokenEpoch): the token is accepted only
	// while it is still the subscriber's.
	Epoch uint64 `json:"p,omitempty"`
}

// InboxToken is a minted inbox token and the instant it stops being
// accepted.
type InboxToken struct {
	Token     string
	ExpiresAt time.Time
}

// InboxIdentity is what an inbox token authenticates: one subscriber of
// one tenant.
type InboxIdentity struct {
	Tenant       string
	SubscriberID string
	ExpiresAt    time.Time
	// TokenEpoch is the subscriber's token epoch the token was minted in:
	// a holder of the identity (an open stream) ends once the
	// subscriber's epoch moves on.
	TokenEpoch uint64
}

// MintInboxToken returns a new inbox token for an existing subscriber.
// Errors: apierr.ErrNotFound (subscriber_not_found), *apierr.ValidationError.
func (c *Control) MintInboxToken(ctx context.Context, tenant, externalID string) (InboxToken, error) {
	var p apierr.Problems
	checkExternalID(&p, "externalId", externalID)
	if err := p.Err(); err != nil {
		return InboxToken{}, err
	}
	if _, err := c.settle(ctx, eventlog.Subject(tenant, eventlog.AggSubscriber, externalID)); err != nil {
		return InboxToken{}, err
	}
	sub, err := c.store.Subscriber(tenant, externalID)
	if err != nil {
		return InboxToken{}, subscriberErr(err, externalID)
	}
	ttl := c.inboxTTL
	if ttl <= 0 {
		ttl = DefaultInboxTokenTTL
	}
	exp := time.Now().Add(ttl).Truncate(time.Millisecond)
	tok, err := c.keys.SealClaims(InboxTokenPrefix, inboxTokenPurpose,
		inboxClaims{Tenant: tenant, Subscriber: externalID, Expires: exp.UnixMilli(), Epoch: sub.TokenEpoch})
	if err != nil {
		return InboxToken{}, err
	}
	return InboxToken{Token: tok, ExpiresAt: exp.UTC()}, nil
}

// AuthenticateInbox returns the subscriber an inbox token names, or
// apierr.ErrUnauthenticated: a token that is not an inbox token (an API
// key included), altered, sealed by a key the keyring no longer holds,
// expired, naming a subscriber that no longer exists, or minted before
// the subscriber's token epoch began (its tokens were revoked, or it was
// deleted and created again).
func (c *Control) AuthenticateInbox(raw string) (InboxIdentity, error) {
	if len(raw) > MaxInboxTokenChars || !strings.HasPrefix(raw, InboxTokenPrefix) {
		return InboxIdentity{}, apierr.ErrUnauthenticated
	}
	var cl inboxClaims
	if err := c.keys.OpenClaims(InboxTokenPrefix, inboxTokenPurpose, raw, &cl); err != nil {
		return InboxIdentity{}, apierr.ErrUnauthenticated
	}
	exp := time.UnixMilli(cl.Expires)
	if !time.Now().Before(exp) || !ValidTenantID(cl.Tenant) || !ValidExternalID(cl.Subscriber) {
		return InboxIdentity{}, apierr.ErrUnauthenticated
	}
	switch sub, err := c.store.Subscriber(cl.Tenant, cl.Subscriber); {
	case errors.Is(err, projections.ErrNotFound):
		return InboxIdentity{}, apierr.ErrUnauthenticated
	case err != nil:
		return InboxIdentity{}, err
	case sub.TokenEpoch != cl.Epoch:
		return InboxIdentity{}, apierr.ErrUnauthenticated
	}
	return InboxIdentity{Tenant: cl.Tenant, SubscriberID: cl.Subscriber, ExpiresAt: exp.UTC(), TokenEpoch: cl.Epoch}, nil
}

// RevokeInboxTokens makes every inbox token minted so far for a
// subscriber useless at once (its open streams end at their next
// heartbeat); tokens minted afterwards are accepted. The revocation is an
// event on the subscriber's subject, so every process and every rebuild
// of the projections holds it. Errors: apierr.ErrNotFound
// (subscriber_not_found), *apierr.ValidationError.
func (c *Control) RevokeInboxTokens(ctx context.Context, tenant, externalID string) error {
	var p apierr.Problems
	checkExternalID(&p, "externalId", externalID)
	if err := p.Err(); err != nil {
		return err
	}
	subject := eventlog.Subject(tenant, eventlog.AggSubscriber, externalID)
	return retry(ctx, func() error {
		seq, err := c.settle(ctx, subject)
		if err != nil {
			return err
		}
		if _, err := c.store.Subscriber(tenant, externalID); err != nil {
			return subscriberErr(err, externalID)
		}
		_, err = c.commit(ctx, eventlog.Record{Subject: subject, Type: events.InboxTokensRevoked, Tenant: tenant,
			Data: events.InboxTokensRevokedData{SubscriberID: externalID}, Expect: true, ExpectSeq: seq})
		return err
	})
}

// ParseInboxFilter reads a ?filter= value: empty is InboxAll.
// Errors: *apierr.ValidationError.
func ParseInboxFilter(v string) (projections.InboxFilter, error) {
	switch f := projections.InboxFilter(v); f {
	case "":
		return projections.InboxAll, nil
	case projections.InboxAll, projections.InboxUnread, projections.InboxRead, projections.InboxArchived:
		return f, nil
	}
	var p apierr.Problems
	p.Add("filter", "must be one of unread, read, archived, all")
	return "", p.Err()
}

// InboxMessages lists a subscriber's inbox under filter, newest first.
// Errors: *apierr.ValidationError, projections.ErrBadCursor.
func (c *Control) InboxMessages(tenant, externalID string, filter projections.InboxFilter, p projections.Page) ([]projections.InAppMessage, string, error) {
	var probs apierr.Problems
	checkExternalID(&probs, "externalId", externalID)
	if err := probs.Err(); err != nil {
		return nil, "", err
	}
	return c.store.InboxMessages(tenant, externalID, filter, p)
}

// Marks of MarkInboxMessage, as the API names them (the action), mapped to
// the events' marks.
var inboxMarks = map[string]string{
	"seen":      events.MarkSeen,
	"read":      events.MarkRead,
	"unread":    events.MarkUnread,
	"archive":   events.MarkArchived,
	"unarchive": events.MarkUnarchived,
}

// MarkInboxMessage applies an action (seen, read, unread, archive,
// unarchive) to one message of a subscriber's inbox and returns the
// message as it then is. An action that changes nothing appends nothing.
// Errors: apierr.ErrNotFound (message_not_found, also for an unknown
// action).
func (c *Control) MarkInboxMessage(ctx context.Context, tenant, externalID, messageID, action string) (projections.InAppMessage, error) {
	kind, ok := inboxMarks[action]
	if !ok {
		return projections.InAppMessage{}, apierr.ErrNotFound
	}
	subject := eventlog.Subject(tenant, eventlog.AggInbox, externalID)
	var out projections.InAppMessage
	err := retry(ctx, func() error {
		seq, err := c.settle(ctx, subject)
		if err != nil {
			return err
		}
		m, err := c.store.InboxMessage(tenant, externalID, messageID)
		if err != nil {
			return messageErr(err, messageID)
		}
		out = m
		if !projections.MarkChanges(m, kind) {
			return nil
		}
		if _, err := c.commit(ctx, eventlog.Record{Subject: subject, Type: events.InboxMessagesMarked, Tenant: tenant,
			Data:   events.InboxMessagesMarkedData{SubscriberID: externalID, Mark: kind, MessageIDs: []string{messageID}},
			Expect: true, ExpectSeq: seq}); err != nil {
			return err
		}
		out, err = c.store.InboxMessage(tenant, externalID, messageID)
		return messageErr(err, messageID)
	})
	return out, err
}

// MarkAllInboxRead marks read every unread message of a subscriber's
// inbox that is not archived and returns how many it marked, in events of
// at most markChunk messages each.
func (c *Control) MarkAllInboxRead(ctx context.Context, tenant, externalID string) (int, error) {
	subject := eventlog.Subject(tenant, eventlog.AggInbox, externalID)
	updated := 0
	err := retry(ctx, func() error {
		for {
			seq, err := c.settle(ctx, subject)
			if err != nil {
				return err
			}
			unread, _, err := c.store.InboxMessages(tenant, externalID, projections.InboxUnread,
				projections.Page{Limit: markChunk})
			if err != nil || len(unread) == 0 {
				return err
			}
			ids := make([]string, len(unread))
			for i, m := range unread {
				ids[i] = m.MessageID
			}
			if _, err := c.commit(ctx, eventlog.Record{Subject: subject, Type: events.InboxMessagesMarked, Tenant: tenant,
				Data:   events.InboxMessagesMarkedData{SubscriberID: externalID, Mark: events.MarkRead, MessageIDs: ids},
				Expect: true, ExpectSeq: seq}); err != nil {
				return err
			}
			updated += len(ids)
		}
	})
	return updated, err
}

func messageErr(err error, messageID string) error {
	if errors.Is(err, projections.ErrNotFound) {
		return apierr.Errorf(apierr.CodeMessageNotFound, "message %q does not exist", truncateID(messageID))
	}
	return err
}

// truncateID bounds an id quoted back in an error message.
func truncateID(id string) string {
	if len(id) <= 64 {
		return id
	}
	cut := 64
	for cut > 0 && !utf8.RuneStart(id[cut]) {
		cut--
	}
	return id[:cut] + "…"
}
