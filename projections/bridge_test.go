package projections_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
)

// TestBridgeReadsTheLatestRegistration: the binding read for every
// Bridge call is kept decoded between registrations, so a read after a
// registration is applied must give the new one, however often the old
// one was read before.
func TestBridgeReadsTheLatestRegistration(t *testing.T) {
	log, st := followed(t)
	appendTenant(t, log, "ten_a")
	if _, err := st.Bridge("ten_a"); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("before any registration: %v, want ErrNotFound", err)
	}
	register := func(url, sealed string) {
		t.Helper()
		seq := appendChannelEvent(t, log, "ten_a", eventlog.AggBridge, "ten_a", events.BridgeConfigured, time.Now(),
			events.BridgeConfiguredData{WebhookURL: url, SealedSecret: sealed})
		if err := st.WaitFor(context.Background(), seq); err != nil {
			t.Fatal(err)
		}
	}
	register("http://a.example/bridge", "sealed-1")
	for range 3 {
		if bb, err := st.Bridge("ten_a"); err != nil || bb.WebhookURL != "http://a.example/bridge" || bb.SealedSecret != "sealed-1" {
			t.Fatalf("first registration: %+v %v", bb, err)
		}
	}
	register("http://b.example/bridge", "sealed-2")
	if bb, err := st.Bridge("ten_a"); err != nil || bb.WebhookURL != "http://b.example/bridge" || bb.SealedSecret != "sealed-2" {
		t.Fatalf("after the rotation: %+v %v, want the new URL and secret", bb, err)
	}
	if _, err := st.Bridge("ten_b"); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("another tenant: %v, want ErrNotFound", err)
	}
}

// TestAPIKeyReadsTheLatestRevocation: the key read for every API request
// is kept decoded, so a read after its revocation is applied must see the
// revocation, however often the key was read before.
func TestAPIKeyReadsTheLatestRevocation(t *testing.T) {
	log, st := followed(t)
	appendTenant(t, log, "ten_a")
	if _, err := st.APIKeyByPrefix("hk_abcdefgh"); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("before the key: %v, want ErrNotFound", err)
	}
	apply := func(typ string, data any) {
		t.Helper()
		seq := appendChannelEvent(t, log, "ten_a", eventlog.AggAPIKey, "hk_abcdefgh", typ, time.Now(), data)
		if err := st.WaitFor(context.Background(), seq); err != nil {
			t.Fatal(err)
		}
	}
	apply(events.APIKeyCreated, events.APIKeyCreatedData{Prefix: "hk_abcdefgh", Hash: "aa"})
	for range 3 {
		if k, err := st.APIKeyByPrefix("hk_abcdefgh"); err != nil || k.TenantID != "ten_a" || k.RevokedAt != nil {
			t.Fatalf("the live key: %+v %v", k, err)
		}
	}
	apply(events.APIKeyRevoked, events.APIKeyRevokedData{Prefix: "hk_abcdefgh"})
	if k, err := st.APIKeyByPrefix("hk_abcdefgh"); err != nil || k.RevokedAt == nil {
		t.Fatalf("after the revocation: %+v %v, want it revoked", k, err)
	}
}

// The channels a send reads are kept decoded, and every change of a
// channel is read at the next call after it is applied.
func TestChannelsReadTheLatestChange(t *testing.T) {
	log, st := followed(t)
	appendTenant(t, log, "ten_a")
	apply := func(typ string, data any) {
		t.Helper()
		seq := appendChannelEvent(t, log, "ten_a", eventlog.AggChannel, "email-smtp", typ, time.Now(), data)
		if err := st.WaitFor(context.Background(), seq); err != nil {
			t.Fatal(err)
		}
	}
	read := func() []projections.Channel {
		t.Helper()
		chs, err := st.Channels("ten_a")
		if err != nil {
			t.Fatal(err)
		}
		return chs
	}
	if chs := read(); len(chs) != 0 {
		t.Fatalf("before the channel: %+v", chs)
	}
	apply(events.ChannelConfigured, events.ChannelConfiguredData{ChannelKey: "email-smtp", Kind: "email", Enabled: true,
		Config: events.ChannelConfig{Public: map[string]any{"host": "a.example"}}})
	for range 3 {
		if chs := read(); len(chs) != 1 || !chs[0].Enabled || chs[0].Public["host"] != "a.example" {
			t.Fatalf("the configured channel: %+v", chs)
		}
	}
	read()[0].ChannelKey = "changed by a caller" // the slice is the caller's
	off := false
	apply(events.ChannelUpdated, events.ChannelUpdatedData{ChannelKey: "email-smtp", Enabled: &off})
	if chs := read(); len(chs) != 1 || chs[0].Enabled || chs[0].ChannelKey != "email-smtp" {
		t.Fatalf("after disabling it: %+v", chs)
	}
	apply(events.ChannelInboundRotated, events.ChannelInboundRotatedData{ChannelKey: "email-smtp", Generation: "g2"})
	if chs := read(); len(chs) != 1 || chs[0].InboundGeneration != "g2" {
		t.Fatalf("after rotating its inbound token: %+v", chs)
	}
	apply(events.ChannelDeleted, events.ChannelDeletedData{ChannelKey: "email-smtp"})
	if chs := read(); len(chs) != 0 {
		t.Fatalf("after deleting it: %+v", chs)
	}
}
