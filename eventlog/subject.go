package eventlog

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// Aggregates name the kinds of event subjects.
const (
	AggTenant      = "tenant"
	AggAPIKey      = "apikey"
	AggSubscriber  = "subscriber"
	AggTopic       = "topic"
	AggChannel     = "channel"
	AggBridge      = "bridge"
	AggWorkflows   = "workflows"
	AggTransaction = "txn"
	AggRun         = "run"
	AggDelivery    = "delivery"
	AggDigest      = "digest"
	// AggThrottle: the runs counted by throttle steps of one (workflow,
	// subscriber, key) (id: events.ThrottleID).
	AggThrottle = "throttle"
	// AggInbox: a subscriber's in-app messages (id: the subscriber).
	AggInbox = "inbox"
	// AggSuppression: one suppressed address of a channel kind (id:
	// events.SuppressionID).
	AggSuppression = "suppression"
	// AggWebhook: an outbound webhook endpoint's configuration (id: the
	// endpoint).
	AggWebhook = "webhook"
	// AggWebhookAttempts: the delivery attempts to one webhook endpoint
	// (id: the endpoint).
	AggWebhookAttempts = "whattempt"
	// AggControls: the edits of one workflow's step controls (id: the
	// workflow).
	AggControls = "controls"
	// AggLayout: one email layout (id: the layout).
	AggLayout = "layout"
)

// Token encodes an arbitrary id (external ids may hold dots, spaces,
// wildcards and any Unicode) into one subject token: unpadded base64url,
// which uses only [A-Za-z0-9_-]. The empty id encodes as "_".
func Token(id string) string {
	if id == "" {
		return "_"
	}
	return base64.RawURLEncoding.EncodeToString([]byte(id))
}

// DecodeToken reverses Token.
func DecodeToken(tok string) (string, error) {
	if tok == "_" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return "", fmt.Errorf("%w: %q", ErrBadToken, tok)
	}
	return string(b), nil
}

// Subject returns the event subject of one aggregate instance:
// ev.<tenant>.<aggregate>.<Token(id)>. tenant must be a minted tenant id
// (it is used raw so that ev.<tenant>.> filters one tenant); aggregate one
// of the Agg constants.
func Subject(tenant, aggregate, id string) string {
	return "ev." + tenant + "." + aggregate + "." + Token(id)
}

// TenantFilter returns the subject filter of every event of one tenant.
func TenantFilter(tenant string) string { return "ev." + tenant + ".>" }

// ParseSubject splits an event subject into its tenant, aggregate and
// decoded id.
func ParseSubject(subject string) (tenant, aggregate, id string, err error) {
	parts := strings.SplitN(subject, ".", 4)
	if len(parts) != 4 || parts[0] != "ev" {
		return "", "", "", fmt.Errorf("%w: subject %q", ErrBadToken, subject)
	}
	id, err = DecodeToken(parts[3])
	return parts[1], parts[2], id, err
}

// MaxSubjectBytes bounds every subject the log sends. The server closes a
// connection whose control line (verb, subject, reply inbox, sizes;
// 4096 bytes by default) is too long, and a direct get puts the subject
// behind a ~30-byte API prefix: 2048 leaves room for both. The longest
// subject a valid id makes is ~1,400 bytes (a 256-character externalId of
// 4-byte runes is 1,366 bytes of token).
const MaxSubjectBytes = 2048

// CheckSubject reports a subject the server would refuse (see
// ErrBadSubject): over MaxSubjectBytes, an empty token, a space or
// control character, or (unless wildcards is set, for a read filter) a
// '*' or '>' token. It is called before every publish and every read by
// subject.
func CheckSubject(subject string, wildcards bool) error {
	if len(subject) > MaxSubjectBytes {
		return fmt.Errorf("%w (%d bytes)", ErrSubjectTooLong, len(subject))
	}
	if subject == "" {
		return fmt.Errorf("%w: empty", ErrBadSubject)
	}
	start := 0
	for i := 0; i <= len(subject); i++ {
		if i < len(subject) && subject[i] != '.' {
			if c := subject[i]; c <= ' ' || c == 0x7f {
				return fmt.Errorf("%w: a space or control character", ErrBadSubject)
			}
			continue
		}
		tok := subject[start:i]
		if tok == "" {
			return fmt.Errorf("%w: an empty token", ErrBadSubject)
		}
		if !wildcards && (tok == "*" || tok == ">") {
			return fmt.Errorf("%w: a wildcard", ErrBadSubject)
		}
		start = i + 1
	}
	return nil
}
