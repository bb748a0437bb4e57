package control

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/mail"
	"regexp"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
)

// SubscriberInput is a subscriber upsert, its fields raw JSON so that an
// omitted field, a null and a value stay apart:
//
//   - Contacts: a kind given a non-empty list overwrites that kind, `[]`
//     or null clears it, a kind not given is kept. Contacts itself
//     omitted or null mentions no kind.
//   - Locale (a string), Attributes (an object) and Timezone (an IANA
//     time zone name): omitted keeps the current value, null clears it,
//     a value overwrites it.
type SubscriberInput struct {
	Contacts   map[string]json.RawMessage
	Locale     json.RawMessage
	Attributes json.RawMessage
	Timezone   json.RawMessage
}

// subscriberPatch is a validated SubscriberInput.
type subscriberPatch struct {
	contacts   map[string][]string // a nil list clears the kind
	setLocale  bool
	locale     *string
	setAttrs   bool
	attributes json.RawMessage // nil clears
	setTZ      bool
	timezone   *string // nil clears
}

// parseSubscriberInput validates in on its own, naming each bad field.
func parseSubscriberInput(in SubscriberInput) (subscriberPatch, apierr.Problems) {
	var p apierr.Problems
	patch := subscriberPatch{contacts: map[string][]string{}}
	if len(in.Contacts) > MaxContactKinds {
		p.Add("contacts", "must have at most %d kinds", MaxContactKinds)
	}
	kinds := slices.Sorted(maps.Keys(in.Contacts))
	for _, kind := range kinds {
		field := func() string { return "contacts." + kind } // named only on a problem
		raw := in.Contacts[kind]
		if !validKind(kind) {
			p.Add(field(), "is not a valid kind: 1 to %d characters of A-Z, a-z, 0-9, '_' and '-'", MaxKindChars)
			continue
		}
		if isNull(raw) {
			patch.contacts[kind] = nil
			continue
		}
		// The common list, all strings, decodes in one go; any other is
		// read item by item to name the items that are not strings.
		var strs []string
		var items []json.RawMessage
		if json.Unmarshal(raw, &strs) != nil {
			strs = nil
			if err := json.Unmarshal(raw, &items); err != nil {
				p.Add(field(), "must be an array of strings")
				continue
			}
		}
		n := max(len(strs), len(items))
		if n > MaxAddressesPerKind {
			p.Add(field(), "must have at most %d addresses", MaxAddressesPerKind)
			continue
		}
		addrs := make([]string, 0, n)
		for i := range n {
			afield := func() string { return field() + "[" + strconv.Itoa(i) + "]" } // named only on a problem
			var a string
			if items == nil {
				a = strs[i]
			} else if err := json.Unmarshal(items[i], &a); err != nil {
				p.Add(afield(), "must be a string")
				continue
			}
			if msg := addressProblem(kind, a); msg != "" {
				p.Add(afield(), "%s", msg)
				continue
			}
			addrs = append(addrs, a)
		}
		if len(addrs) == 0 {
			addrs = nil
		}
		patch.contacts[kind] = addrs
	}
	if in.Locale != nil {
		patch.setLocale = true
		if !isNull(in.Locale) {
			var loc string
			switch err := json.Unmarshal(in.Locale, &loc); {
			case err != nil:
				p.Add("locale", "must be a string")
			case loc == "":
				p.Add("locale", "must not be empty (null clears it)")
			case utf8.RuneCountInString(loc) > MaxLocaleChars:
				p.Add("locale", "must be at most %d characters", MaxLocaleChars)
			case apierr.HasControl(loc, ""):
				p.Add("locale", "must not contain control characters")
			default:
				patch.locale = &loc
			}
		}
	}
	if in.Attributes != nil {
		patch.setAttrs = true
		if !isNull(in.Attributes) {
			attrs, msg := normalizeObject(in.Attributes)
			switch {
			case msg != "":
				p.Add("attributes", "%s", msg)
			case len(attrs) > MaxAttributesBytes:
				p.Add("attributes", "must be at most 64 KiB")
			default:
				patch.attributes = attrs
			}
		}
	}
	if in.Timezone != nil {
		patch.setTZ = true
		if !isNull(in.Timezone) {
			var tz string
			if err := json.Unmarshal(in.Timezone, &tz); err != nil {
				p.Add("timezone", "must be a string")
			} else if msg := timezoneProblem(tz); msg != "" {
				p.Add("timezone", "%s", msg)
			} else {
				patch.timezone = &tz
			}
		}
	}
	return patch, p
}

// timezoneProblem says what is wrong with tz as a subscriber's time zone,
// or "". time.LoadLocation also takes "" and "Local" (the server's own
// zone, which means nothing to a subscriber), and reads a name as a path
// into the zone database: the name is bounded and both are refused.
func timezoneProblem(tz string) string {
	switch {
	case tz == "":
		return "must not be empty (null clears it)"
	case len(tz) > MaxTimezoneChars:
		return fmt.Sprintf("must be at most %d characters", MaxTimezoneChars)
	case tz == "Local":
		return "must be an IANA time zone name, as in Europe/Paris"
	}
	if _, err := time.LoadLocation(tz); err != nil {
		return "must be an IANA time zone name, as in Europe/Paris"
	}
	return ""
}

// addressProblem says what is wrong with an address of kind, or "".
func addressProblem(kind, a string) string {
	limit := MaxAddressChars
	if kind == "push" {
		limit = MaxPushTokenChars
	}
	switch {
	case a == "":
		return "must not be empty"
	case utf8.RuneCountInString(a) > limit:
		return fmt.Sprintf("must be at most %d characters", limit)
	case !utf8.ValidString(a) || apierr.HasControl(a, ""):
		return "must not contain control characters"
	}
	switch kind {
	case "email":
		m, err := mail.ParseAddress(a)
		if err != nil || m.Name != "" || m.Address != a {
			return "must be an email address (bare, as in name@example.com)"
		}
	case "sms":
		if !e164.MatchString(a) {
			return "must be a phone number in E.164 form: '+' and 8 to 15 digits, as in +14155550123"
		}
	case "chat":
		if !slackID.MatchString(a) {
			return "must be a Slack channel or user id, as in C0123ABCD or U0123ABCD"
		}
	}
	return ""
}

// Addresses of the kinds with a form (CONTRACT §10): an E.164 number
// (its country code never starts with 0), a Slack conversation id (C, G:
// channels; D: direct messages; U, W: users).
var (
	e164    = regexp.MustCompile(`^\+[1-9][0-9]{7,14}$`)
	slackID = regexp.MustCompile(`^[CDGUW][A-Z0-9]{8,31}$`)
)

// normalizeObject returns raw as compact JSON, escaped the way the
// projections store it, or a problem when it is not a JSON object.
func normalizeObject(raw json.RawMessage) (json.RawMessage, string) {
	obj, ok := compactObject(raw)
	if !ok {
		return nil, "must be a JSON object"
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, "must be a JSON object"
	}
	return out, ""
}

// apply merges the patch into cur (nil: a new subscriber) and returns the
// whole resulting state. It is pure.
func (patch subscriberPatch) apply(externalID string, cur *projections.Subscriber) (events.SubscriberUpsertedData, apierr.Problems) {
	next := events.SubscriberUpsertedData{SubscriberID: externalID, Contacts: map[string][]string{}}
	if cur != nil {
		maps.Copy(next.Contacts, cur.Contacts)
		next.Locale = cur.Locale
		next.Attributes = cur.Attributes
		next.Timezone = cur.Timezone
	}
	for kind, addrs := range patch.contacts {
		if len(addrs) == 0 {
			delete(next.Contacts, kind)
		} else {
			next.Contacts[kind] = addrs
		}
	}
	if patch.setLocale {
		next.Locale = patch.locale
	}
	if patch.setAttrs {
		next.Attributes = patch.attributes
	}
	if patch.setTZ {
		next.Timezone = patch.timezone
	}
	var p apierr.Problems
	if len(next.Contacts) > MaxContactKinds {
		p.Add("contacts", "would have %d kinds; at most %d are allowed", len(next.Contacts), MaxContactKinds)
	}
	return next, p
}

// sameSubscriber reports whether next is cur's state already.
func sameSubscriber(cur projections.Subscriber, next events.SubscriberUpsertedData) bool {
	return maps.EqualFunc(cur.Contacts, next.Contacts, slices.Equal) &&
		equalPtr(cur.Locale, next.Locale) && bytes.Equal(cur.Attributes, next.Attributes) &&
		equalPtr(cur.Timezone, next.Timezone)
}

func equalPtr[T comparable](a, b *T) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

// UpsertSubscriber creates or updates a subscriber with the merge rules
// (see SubscriberInput) and returns its state as the projections now
// hold it, and whether it was created. An upsert that changes nothing
// appends no event. Errors: *apierr.ValidationError (apierr.ErrInvalid), apierr.ErrBusy.
//
// The first attempt trusts the local projection and expects the
// sequence it recorded for the subscriber (0 for none): when another
// process wrote since, the append conflicts and the next attempts settle
// on the subject's last sequence first. This saves a round trip to the
// server on the common path.
func (c *Control) UpsertSubscriber(ctx context.Context, tenant, externalID string, in SubscriberInput) (sub projections.Subscriber, created bool, err error) {
	var p apierr.Problems
	checkExternalID(&p, "externalId", externalID)
	patch, pp := parseSubscriberInput(in)
	if err := append(p, pp...).Err(); err != nil {
		return sub, false, err
	}
	subject := eventlog.Subject(tenant, eventlog.AggSubscriber, externalID)
	optimistic := true
	err = retry(ctx, func() error {
		trusted := optimistic
		optimistic = false
		var seq uint64
		if !trusted {
			var err error
			if seq, err = c.settle(ctx, subject); err != nil {
				return err
			}
		}
		cur, err := current(c.store.Subscriber(tenant, externalID))
		if err != nil {
			return err
		}
		if trusted && cur != nil {
			seq = cur.Seq
		}
		next, p := patch.apply(externalID, cur)
		if err := p.Err(); err != nil {
			return err
		}
		if cur != nil && sameSubscriber(*cur, next) {
			if trusted {
				// Nothing to append, so nothing would catch a stale read:
				// check the subject moved no further than what we read.
				last, err := c.log.SubjectLastSeq(ctx, subject)
				if err != nil {
					return err
				}
				if last != seq {
					return eventlog.ErrConflict
				}
			}
			sub, created = *cur, false
			return nil
		}
		if _, err := c.commit(ctx, eventlog.Record{Subject: subject, Type: events.SubscriberUpserted,
			Tenant: tenant, Data: next, Expect: true, ExpectSeq: seq}); err != nil {
			return err
		}
		created = cur == nil
		sub, err = c.store.Subscriber(tenant, externalID)
		return err
	})
	return sub, created, err
}

// DeleteSubscriber deletes a subscriber and, with it, its subscriptions.
// Errors: apierr.ErrNotFound (subscriber_not_found), *apierr.ValidationError.
func (c *Control) DeleteSubscriber(ctx context.Context, tenant, externalID string) error {
	return c.commitToSubscriber(ctx, tenant, externalID, events.SubscriberDeleted,
		events.SubscriberDeletedData{SubscriberID: externalID})
}

// commitToSubscriber appends one event of typ with data to the subject of
// an existing subscriber, expecting the subject as it was when the
// subscriber was read: a delete or upsert that lands in between makes it
// read again, so the event never follows the subscriber's deletion.
// Errors: apierr.ErrNotFound (subscriber_not_found),
// *apierr.ValidationError.
func (c *Control) commitToSubscriber(ctx context.Context, tenant, externalID, typ string, data any) error {
	if err := externalIDErr("externalId", externalID); err != nil {
		return err
	}
	subject := eventlog.Subject(tenant, eventlog.AggSubscriber, externalID)
	return c.appendIfFound(ctx, tenant, subject, typ, data, func() error {
		_, err := c.store.Subscriber(tenant, externalID)
		return subscriberErr(err, externalID)
	})
}

// Subscriber returns one subscriber. Errors: apierr.ErrNotFound
// (subscriber_not_found), *apierr.ValidationError.
func (c *Control) Subscriber(tenant, externalID string) (projections.Subscriber, error) {
	if err := externalIDErr("externalId", externalID); err != nil {
		return projections.Subscriber{}, err
	}
	s, err := c.store.Subscriber(tenant, externalID)
	return s, subscriberErr(err, externalID)
}

// Subscribers lists a tenant's subscribers in externalId order.
func (c *Control) Subscribers(tenant string, p projections.Page) ([]projections.Subscriber, string, error) {
	return c.store.Subscribers(tenant, p)
}
