package delivery

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/heraldhq/herald/preferences"
	"github.com/heraldhq/herald/projections"
)

// TestDecide tables the decision of a send on what the projections hold:
// the verdict and its reason, the address, and the hold, in the order the
// engine and Deliver act on them (the quiet hours first).
func TestDecide(t *testing.T) {
	now := time.Date(2026, 6, 1, 23, 0, 0, 0, time.UTC) // 23:00 UTC
	quiet := &preferences.QuietHours{Start: "22:00", End: "06:00"}
	off, on := false, true
	paris := "Europe/Paris" // 01:00 there: inside 22:00-06:00 too
	tokyo := "Asia/Tokyo"   // 08:00 there: outside
	smtp := []projections.Channel{{ChannelKey: "email-smtp", Kind: KindEmail}, {ChannelKey: "email-ses", Kind: KindEmail}}
	noChannel := fmt.Errorf("%w: %q", ErrNoChannel, KindEmail)
	ada := func(contacts map[string][]string, tz *string) *projections.Subscriber {
		return &projections.Subscriber{SubscriberID: "ada", Contacts: contacts, Timezone: tz}
	}
	email := map[string][]string{KindEmail: {"ada@example.com", "second@example.com"}}
	optOut := preferences.Doc{Channels: map[string]bool{KindEmail: false}}
	cases := []struct {
		name    string
		f       facts
		verdict string
		reason  string
		address string
		until   time.Time // the hold's end, zero for none
	}{
		{name: "sends to the first address",
			f: facts{channels: smtp, sub: ada(email, nil)}, verdict: VerdictSend, address: "ada@example.com"},
		{name: "no channel fails",
			f: facts{noChannel: noChannel, sub: ada(email, nil)}, verdict: VerdictFail, reason: ReasonNoChannel},
		{name: "opted out of the kind",
			f: facts{channels: smtp, sub: ada(email, nil), doc: optOut}, verdict: VerdictSkip, reason: ReasonPreference},
		{name: "opted out of the workflow",
			f:       facts{channels: smtp, sub: ada(email, nil), doc: preferences.Doc{Workflows: map[string]preferences.Workflow{"w": {Enabled: &off}}}},
			verdict: VerdictSkip, reason: ReasonPreference},
		{name: "the workflow's default off",
			f:       facts{channels: smtp, sub: ada(email, nil), def: preferences.Defaults{Channels: map[string]bool{KindEmail: false}}},
			verdict: VerdictSkip, reason: ReasonPreference},
		{name: "the subscriber's switch over the workflow's default",
			f: facts{channels: smtp, sub: ada(email, nil), doc: preferences.Doc{Channels: map[string]bool{KindEmail: on}},
				def: preferences.Defaults{Channels: map[string]bool{KindEmail: false}}},
			verdict: VerdictSend, address: "ada@example.com"},
		{name: "a critical workflow sends whatever the preferences",
			f:       facts{channels: smtp, sub: ada(email, nil), doc: optOut, def: preferences.Defaults{Critical: true}},
			verdict: VerdictSend, address: "ada@example.com"},
		{name: "no channel comes before the preferences",
			f: facts{noChannel: noChannel, sub: ada(email, nil), doc: optOut}, verdict: VerdictFail, reason: ReasonNoChannel},
		{name: "an unknown recipient has no address",
			f: facts{channels: smtp}, verdict: VerdictSkip, reason: ReasonNoAddress},
		{name: "no address of the kind",
			f: facts{channels: smtp, sub: ada(map[string][]string{KindSMS: {"+15550100"}}, nil)}, verdict: VerdictSkip, reason: ReasonNoAddress},
		{name: "an unusable first address",
			f:       facts{channels: smtp, sub: ada(map[string][]string{KindEmail: {"Ada <ada@example.com>", "ada@example.com"}}, nil)},
			verdict: VerdictSkip, reason: ReasonNoAddress},
		{name: "a suppressed address",
			f: facts{channels: smtp, sub: ada(email, nil), suppressed: true}, verdict: VerdictSkip, reason: ReasonSuppressed,
			address: "ada@example.com"},
		{name: "in-app goes to the recipient's inbox",
			f: facts{ask: Ask{Kind: KindInApp}, channels: smtp, sub: ada(nil, nil)}, verdict: VerdictSend, address: "ada"},
		{name: "in-app to an unknown recipient",
			f: facts{ask: Ask{Kind: KindInApp}, channels: smtp}, verdict: VerdictSkip, reason: ReasonNoAddress},
		{name: "a webhook needs no recipient",
			f: facts{ask: Ask{Kind: KindWebhook, Subscriber: "-"}, channels: smtp}, verdict: VerdictSend},
		{name: "a webhook of a known recipient sends, without an address",
			f: facts{ask: Ask{Kind: KindWebhook}, channels: smtp, sub: ada(email, nil)}, verdict: VerdictSend},

		{name: "quiet hours hold a send",
			f: facts{channels: smtp, sub: ada(email, nil), doc: preferences.Doc{QuietHours: quiet}}, verdict: VerdictHold,
			reason: ReasonQuietHours, address: "ada@example.com", until: time.Date(2026, 6, 2, 6, 0, 0, 0, time.UTC)},
		{name: "quiet hours read in the recipient's zone: inside",
			f: facts{channels: smtp, sub: ada(email, &paris), doc: preferences.Doc{QuietHours: quiet}}, verdict: VerdictHold,
			reason: ReasonQuietHours, address: "ada@example.com", until: time.Date(2026, 6, 2, 4, 0, 0, 0, time.UTC)},
		{name: "quiet hours read in the recipient's zone: outside",
			f: facts{channels: smtp, sub: ada(email, &tokyo), doc: preferences.Doc{QuietHours: quiet}}, verdict: VerdictSend,
			address: "ada@example.com"},
		{name: "quiet hours hold a send with no channel yet",
			f: facts{noChannel: noChannel, sub: ada(email, nil), doc: preferences.Doc{QuietHours: quiet}}, verdict: VerdictHold,
			reason: ReasonQuietHours, until: time.Date(2026, 6, 2, 6, 0, 0, 0, time.UTC)},
		{name: "quiet hours hold a send with no address yet",
			f: facts{channels: smtp, sub: ada(nil, nil), doc: preferences.Doc{QuietHours: quiet}}, verdict: VerdictHold,
			reason: ReasonQuietHours, until: time.Date(2026, 6, 2, 6, 0, 0, 0, time.UTC)},
		{name: "quiet hours do not hold a send the preferences skip",
			f:       facts{channels: smtp, sub: ada(email, nil), doc: preferences.Doc{QuietHours: quiet, Channels: optOut.Channels}},
			verdict: VerdictSkip, reason: ReasonPreference},
		{name: "quiet hours do not hold a critical workflow",
			f:       facts{channels: smtp, sub: ada(email, nil), doc: preferences.Doc{QuietHours: quiet}, def: preferences.Defaults{Critical: true}},
			verdict: VerdictSend, address: "ada@example.com"},
		{name: "an unknown recipient has no quiet hours",
			f: facts{channels: smtp, doc: preferences.Doc{QuietHours: quiet}}, verdict: VerdictSkip, reason: ReasonNoAddress},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := c.f
			if f.ask.Kind == "" {
				f.ask.Kind = KindEmail
			}
			switch f.ask.Subscriber {
			case "":
				f.ask.Subscriber = "ada"
			case "-":
				f.ask.Subscriber = ""
			}
			f.ask.Workflow, f.ask.Now = "w", now
			d := decide(f)
			if d.Verdict() != c.verdict || d.Reason() != c.reason || d.address != c.address || !d.Hold.Until.Equal(c.until) {
				t.Fatalf("decide = %s %q address %q held until %v, want %s %q address %q held until %v",
					d.Verdict(), d.Reason(), d.address, d.Hold.Until, c.verdict, c.reason, c.address, c.until)
			}
			if d.Ask != f.ask {
				t.Fatalf("the decision's Ask %+v, want %+v", d.Ask, f.ask)
			}
		})
	}
}

// TestExplainShowsTheDecision: the explain route shows a decision as what
// the send does once any hold is over, and the hold of a send that then
// goes out.
func TestExplainShowsTheDecision(t *testing.T) {
	until := time.Date(2026, 6, 2, 6, 0, 0, 0, time.UTC)
	hold := preferences.Hold{Until: until}
	chs := []projections.Channel{{ChannelKey: "email-smtp"}, {ChannelKey: "email-ses"}}
	ask := Ask{Kind: KindEmail}
	cases := []struct {
		name string
		d    Decision
		want Explanation
	}{
		{"sends", Decision{Ask: ask, channels: chs},
			Explanation{Kind: KindEmail, Sends: true, Channels: []string{"email-smtp", "email-ses"}}},
		{"held, then sends", Decision{Ask: ask, channels: chs, Hold: hold},
			Explanation{Kind: KindEmail, Sends: true, Channels: []string{"email-smtp", "email-ses"}, HeldUntil: &until}},
		{"skipped", Decision{Ask: ask, channels: chs, Skip: ReasonSuppressed},
			Explanation{Kind: KindEmail, Reason: ReasonSuppressed, Channels: []string{"email-smtp", "email-ses"}}},
		{"held, then skipped", Decision{Ask: ask, channels: chs, Hold: hold, Skip: ReasonNoAddress},
			Explanation{Kind: KindEmail, Reason: ReasonNoAddress, Channels: []string{"email-smtp", "email-ses"}}},
		{"no channel", Decision{Ask: ask, noChannel: ErrNoChannel},
			Explanation{Kind: KindEmail, Reason: ReasonNoChannel, Channels: []string{}}},
		{"held, then no channel", Decision{Ask: ask, noChannel: ErrNoChannel, Hold: hold},
			Explanation{Kind: KindEmail, Reason: ReasonNoChannel, Channels: []string{}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := explain(c.d)
			held := func(e Explanation) time.Time {
				if e.HeldUntil == nil {
					return time.Time{}
				}
				return *e.HeldUntil
			}
			if got.Kind != c.want.Kind || got.Sends != c.want.Sends || got.Reason != c.want.Reason ||
				got.Channels == nil || !slices.Equal(got.Channels, c.want.Channels) || !held(got).Equal(held(c.want)) {
				t.Fatalf("explain = %+v, want %+v", got, c.want)
			}
		})
	}
}
