package delivery

import (
	"context"
	"errors"
	"time"

	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/preferences"
	"github.com/heraldhq/herald/projections"
)

// Verdicts of a Decision: what a send made now does.
const (
	// VerdictSend: the send goes to the kind's channels now.
	VerdictSend = "send"
	// VerdictSkip: nothing is sent, on purpose (Reason: ReasonPreference,
	// ReasonNoAddress, ReasonSuppressed); the run goes on.
	VerdictSkip = "skip"
	// VerdictHold: the recipient's quiet hours hold the send (Reason
	// ReasonQuietHours) until Decision.Hold.Until.
	VerdictHold = "hold"
	// VerdictFail: the tenant has no enabled channel of the kind (Reason
	// ReasonNoChannel): the send fails with ErrNoChannel.
	VerdictFail = "fail"
)

// ReasonPreference: the recipient opted out of the kind, or of the
// workflow (CONTRACT §11); a skipped Result's Reason.
const ReasonPreference = string(wire.SkipPreference)

// ReasonQuietHours: the recipient's quiet hours hold the send; the Reason
// of a held Decision.
const ReasonQuietHours = "quiet_hours"

// Ask names one send for Decide: the send of Kind in Workflow's run to
// Subscriber (the recipient: a send step's `to`, else the run's
// subscriber), for Tenant.
type Ask struct {
	Tenant, Workflow, Subscriber, Kind string
	// Seen, when not zero, is the event sequence up to which the
	// projections must have applied the tenant's events a decision reads
	// (Store.WaitForTenant) before they are read (as Request.Seen). Zero:
	// they are read as they are.
	Seen uint64
	// Now is the instant the quiet hours are read at.
	Now time.Time
}

// Decision is what a send would do if it were made now: the one answer
// the engine acts on before a send, Deliver sends by, and the explain
// route shows. Verdict and Reason say it in a word. It is decided by
// Decide from one read of the projections.
type Decision struct {
	// Ask is the send decided.
	Ask Ask
	// Hold is the recipient's quiet hours' decision (held when
	// Hold.Held()): a send made now waits until Hold.Until, and what it
	// does then is the rest of the Decision as read now. Deliver, which
	// sends once a hold is over, does not read it.
	Hold preferences.Hold
	// Skip is the reason the send is skipped, "" when it is not.
	Skip string
	// noChannel, when set, is the error wrapping ErrNoChannel: the tenant
	// has no enabled channel of the kind.
	noChannel error
	// channels are the kind's channels in the order a send tries them.
	channels []projections.Channel
	// address is the recipient's address of the kind.
	address string
	// critical: the workflow ignores preferences (and quiet hours).
	critical bool
}

// Verdict is VerdictHold while the quiet hours hold the send, else
// VerdictFail without a channel, else VerdictSkip or VerdictSend.
func (d Decision) Verdict() string {
	switch {
	case d.Hold.Held():
		return VerdictHold
	case d.noChannel != nil:
		return VerdictFail
	case d.Skip != "":
		return VerdictSkip
	}
	return VerdictSend
}

// Reason says why the Verdict is not VerdictSend: ReasonQuietHours,
// ReasonNoChannel or the skip's reason; "" for VerdictSend.
func (d Decision) Reason() string {
	switch d.Verdict() {
	case VerdictHold:
		return ReasonQuietHours
	case VerdictFail:
		return ReasonNoChannel
	}
	return d.Skip
}

// ChannelKeys are the keys of the channels a send tries, in order.
func (d Decision) ChannelKeys() []string {
	keys := make([]string, len(d.channels))
	for i, ch := range d.channels {
		keys[i] = ch.ChannelKey
	}
	return keys
}

// Decide decides the send a names from one read of store (once it has
// applied a.Seen, or at least every event up to it of a.Tenant's that a
// decision reads: Store.WaitForTenant): the kind's channels, the recipient's preferences, the
// workflow's critical flag and defaults as of the tenant's last sync, the
// recipient (its time zone and address) and the address's suppression.
// It records nothing and calls nothing: the engine asks it before every
// send, the explain route for each kind, and a dry run may ask it for
// every recipient and kind. A failure is one of the reads'.
func Decide(ctx context.Context, store *projections.Store, a Ask) (Decision, error) {
	if a.Seen != 0 {
		// Only what this tenant's decision reads: another tenant's
		// broadcast the projector still applies holds no send here.
		if err := store.WaitForTenant(ctx, a.Tenant, a.Seen); err != nil {
			return Decision{}, err
		}
	}
	f := facts{ask: a}
	var err error
	f.channels, err = SelectChannels(store, a.Tenant, a.Kind)
	if errors.Is(err, ErrNoChannel) {
		f.noChannel, err = err, nil
	}
	if err != nil {
		return Decision{}, err
	}
	if a.Subscriber == "" {
		return decide(f), nil
	}
	if f.def, err = store.WorkflowDefaults(a.Tenant, a.Workflow); err != nil {
		return Decision{}, err
	}
	if f.doc, err = store.Preferences(a.Tenant, a.Subscriber); err != nil {
		return Decision{}, err
	}
	switch sub, err := store.Subscriber(a.Tenant, a.Subscriber); {
	case errors.Is(err, projections.ErrNotFound):
	case err != nil:
		return Decision{}, err
	default:
		f.sub = &sub
	}
	if addr, ok := f.address(); ok {
		if f.suppressed, err = suppressed(store, a.Tenant, a.Kind, addr); err != nil {
			return Decision{}, err
		}
	}
	return decide(f), nil
}

// facts are what Decide reads for a send.
type facts struct {
	ask       Ask
	channels  []projections.Channel
	noChannel error
	doc       preferences.Doc
	def       preferences.Defaults
	// sub is the recipient, nil when unknown.
	sub *projections.Subscriber
	// suppressed: the recipient's address of the kind is suppressed.
	suppressed bool
}

// address is the recipient's address of a kind that has one (not webhook,
// not in_app): the first of its contacts of the kind, when usable.
func (f facts) address() (string, bool) {
	if f.sub == nil || f.ask.Kind == KindWebhook || f.ask.Kind == KindInApp {
		return "", false
	}
	addrs := f.sub.Contacts[f.ask.Kind]
	if len(addrs) == 0 || !usableAddress(f.ask.Kind, addrs[0]) {
		return "", false
	}
	return addrs[0], true
}

// decide is the decision of a send on f. It is pure.
//
// The quiet hours come first (preferences.QuietHold: not for a critical
// workflow, nor for a send the preferences skip, nor for an unknown
// recipient): a held send waits whatever else holds, and is decided
// afresh when it is sent. Then, as Deliver tries them: no channel of the
// kind fails the send; the preferences skip it (a critical workflow
// always sends); a webhook needs no address; an unknown recipient has
// none; an in-app send goes to the recipient's own inbox; otherwise the
// first address of the kind must be usable and not suppressed.
func decide(f facts) Decision {
	a := f.ask
	d := Decision{Ask: a, channels: f.channels, noChannel: f.noChannel, critical: f.def.Critical}
	if f.sub != nil {
		tz := ""
		if f.sub.Timezone != nil {
			tz = *f.sub.Timezone
		}
		d.Hold = preferences.QuietHold(f.doc, a.Workflow, f.def, a.Kind, tz, a.Now)
	}
	switch addr, ok := f.address(); {
	case f.noChannel != nil:
	case a.Subscriber != "" && !preferences.Allows(f.doc, a.Workflow, f.def, a.Kind):
		d.Skip = ReasonPreference
	case a.Kind == KindWebhook:
	case f.sub == nil:
		d.Skip = ReasonNoAddress
	case a.Kind == KindInApp:
		d.address = a.Subscriber
	case !ok:
		d.Skip = ReasonNoAddress
	case f.suppressed:
		d.address, d.Skip = addr, ReasonSuppressed
	default:
		d.address = addr
	}
	return d
}
