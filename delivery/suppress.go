package delivery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/mail"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
)

// Bounds of a suppressed address, in characters, before normalisation
// (CONTRACT.md §2, §10: an address ≤ 320, a device token ≤ 4096).
const (
	maxSuppressedAddressChars = 320
	maxSuppressedPushChars    = 4096
)

// SuppressibleKind reports whether kind is a channel kind whose sends go
// to an address, the kinds a suppression names: email, sms, chat, push.
func SuppressibleKind(kind string) bool {
	switch kind {
	case KindEmail, KindSMS, KindChat, KindPush:
		return true
	}
	return false
}

// Addresses of the kinds with a form, as contacts hold them (CONTRACT.md
// §10): an E.164 number, a Slack conversation or user id.
var (
	e164Number = regexp.MustCompile(`^\+[1-9][0-9]{7,14}$`)
	slackID    = regexp.MustCompile(`^[CDGUW][A-Z0-9]{8,31}$`)
	// phoneSeparators are the characters a written phone number may hold
	// between its digits.
	phoneSeparators = strings.NewReplacer(" ", "", "-", "", ".", "", "(", "", ")", "")
)

// NormalizeAddress returns address of kind (SuppressibleKind) in the one
// form suppressions are stored and compared in, so that a suppression
// matches the contact it names however either was written:
//
//   - email: a bare address (name@example.com, no display name), surrounding
//     spaces trimmed, lower-cased whole. Domains are case-insensitive; local
//     parts are in practice too (the mailbox providers that matter ignore
//     case), and a suppression that missed its contact over case would
//     defeat its purpose.
//   - sms: E.164 ('+' and 8–15 digits) once spaces, dots, dashes and
//     parentheses are removed.
//   - chat: a Slack conversation or user id, upper-cased.
//   - push: the device token as is (tokens are case-sensitive).
//
// An address of more than maxSuppressedAddressChars (maxSuppressedPushChars
// for push) characters, or holding a control character, is refused. The
// error says what is wrong, as a problem of the address field.
func NormalizeAddress(kind, address string) (string, error) {
	limit := maxSuppressedAddressChars
	if kind == KindPush {
		limit = maxSuppressedPushChars
	}
	switch {
	case address == "":
		return "", errors.New("must not be empty")
	case !utf8.ValidString(address) || apierr.HasControl(address, ""):
		return "", errors.New("must be printable text")
	case utf8.RuneCountInString(address) > limit:
		return "", fmt.Errorf("must be at most %d characters", limit)
	}
	switch kind {
	case KindEmail:
		a := strings.TrimSpace(address)
		m, err := mail.ParseAddress(a)
		if err != nil || m.Name != "" || m.Address != a {
			return "", errors.New("must be an email address (bare, as in name@example.com)")
		}
		return strings.ToLower(a), nil
	case KindSMS:
		a := phoneSeparators.Replace(address)
		if !e164Number.MatchString(a) {
			return "", errors.New("must be a phone number in E.164 form: '+' and 8 to 15 digits, as in +14155550123")
		}
		return a, nil
	case KindChat:
		a := strings.ToUpper(strings.TrimSpace(address))
		if !slackID.MatchString(a) {
			return "", errors.New("must be a Slack channel or user id, as in C0123ABCD or U0123ABCD")
		}
		return a, nil
	case KindPush:
		return address, nil
	}
	return "", fmt.Errorf("kind %q has no addresses", kind)
}

// suppressed reports whether the tenant suppressed address (of kind) in
// store. An address that does not normalise is not suppressed: no
// suppression can name it.
func suppressed(store *projections.Store, tenant, kind, address string) (bool, error) {
	addr, err := NormalizeAddress(kind, address)
	if err != nil {
		return false, nil
	}
	switch _, err := store.Suppression(tenant, kind, addr); {
	case err == nil:
		return true, nil
	case errors.Is(err, projections.ErrNotFound):
		return false, nil
	default:
		return false, err
	}
}

// suppressBounce suppresses address of kind with reason hard_bounce: the
// provider answered attempt attemptID that it does not exist. An address
// already suppressed (for any reason) is left as it is, so repeating it
// records nothing. It appends whatever becomes of ctx (bounded by
// recordTimeout); a failure is logged, not returned: the send's own
// outcome is recorded already.
func (s *Service) suppressBounce(ctx context.Context, tenant, kind, address, attemptID string, log *slog.Logger) {
	_ = s.suppressFor(ctx, tenant, kind, address, attemptID, events.SuppressionHardBounce, attemptID+".suppress", log)
}

// suppressFor suppresses address of kind with reason, after attempt
// attemptID; msgID dedupes the append. As suppressBounce, an address
// already suppressed is left as it is. A failure is logged and returned.
func (s *Service) suppressFor(ctx context.Context, tenant, kind, address, attemptID, reason, msgID string, log *slog.Logger) error {
	addr, err := NormalizeAddress(kind, address)
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	subject := eventlog.Subject(tenant, eventlog.AggSuppression, events.SuppressionID(kind, addr))
	err = eventlog.RetryConflicts(ctx, func() error {
		last, err := s.cfg.Log.SubjectLastSeq(ctx, subject)
		if err != nil {
			return err
		}
		if err := s.cfg.Store.WaitFor(ctx, last); err != nil {
			return err
		}
		if _, err := s.cfg.Store.Suppression(tenant, kind, addr); !errors.Is(err, projections.ErrNotFound) {
			return err // nil: suppressed already
		}
		seq, err := s.cfg.Log.Append(ctx, eventlog.Record{Subject: subject, Type: events.SuppressionAdded,
			Tenant: tenant, MsgID: msgID,
			Data: events.SuppressionAddedData{Kind: kind, Address: addr, Reason: reason,
				AttemptID: attemptID},
			Expect: true, ExpectSeq: last})
		if err != nil {
			return err
		}
		return s.cfg.Store.WaitFor(ctx, seq)
	})
	if err != nil {
		log.Error("delivery: the address could not be suppressed", "reason", reason, "err", err)
		return err
	}
	log.Info("delivery: address suppressed", "reason", reason, "kind", kind)
	return nil
}
