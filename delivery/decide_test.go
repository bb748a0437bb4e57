package delivery_test

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/internal/testsmtp"
)

// TestDeliverSendsByTheDecisionItIsGiven: Deliver given the Decision its
// caller made (the engine's, before it holds or sends) sends by it and
// does not read the preferences again: an opt-out recorded after the
// decision does not turn the send into a skip. Without a decision, or
// with one made for another send, Deliver decides afresh, as Decide now
// does.
func TestDeliverSendsByTheDecisionItIsGiven(t *testing.T) {
	m := testsmtp.Start(t, testsmtp.Options{})
	f := newFixture(t, m, false, nil)
	svc := newDirectService(t, f, f.dataDir, nil)
	ctx := context.Background()
	decide := func() delivery.Decision {
		t.Helper()
		if err := f.h.Store().WaitCaughtUp(ctx, f.h.Log()); err != nil {
			t.Fatal(err)
		}
		d, err := delivery.Decide(ctx, f.h.Store(), delivery.Ask{Tenant: f.tenant, Subscriber: "ada", Kind: "email", Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	d := decide()
	if d.Verdict() != delivery.VerdictSend || len(d.ChannelKeys()) != 1 || d.ChannelKeys()[0] != "email-smtp" {
		t.Fatalf("before the opt-out: %s %q %v", d.Verdict(), d.Reason(), d.ChannelKeys())
	}
	f.tenantCall("PATCH", "/v1/subscribers/ada/preferences", `{"channels":{"email":false}}`, 200)
	if after := decide(); after.Verdict() != delivery.VerdictSkip || after.Reason() != delivery.ReasonPreference {
		t.Fatalf("after the opt-out: %s %q", after.Verdict(), after.Reason())
	}

	req := request("run_dec:s")
	req.Decision = &d
	if res, err := svc.Deliver(ctx, f.tenant, req); err != nil || res.Status != delivery.StatusSent {
		t.Fatalf("Deliver by the decision = %+v, %v, want sent", res, err)
	}
	if got := m.Messages(); len(got) != 1 {
		t.Fatalf("%d messages, want 1", len(got))
	}

	other := d
	other.Ask.Kind = "sms"
	for key, decision := range map[string]*delivery.Decision{"run_dec:none": nil, "run_dec:other": &other} {
		req := request(key)
		req.Decision = decision
		res, err := svc.Deliver(ctx, f.tenant, req)
		if err != nil || res.Status != delivery.StatusSkipped || res.Reason != delivery.ReasonPreference {
			t.Fatalf("%s: Deliver = %+v, %v, want skipped for the preference", key, res, err)
		}
	}
}
