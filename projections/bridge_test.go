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

// TestSubscriberReadsTheLatestChange: the subscriber read for every send
// is kept decoded between changes of its row, so a read after each event
// that writes the row is applied gives the row as it changed, and what a
// caller does to a subscriber read changes nothing kept.
func TestSubscriberReadsTheLatestChange(t *testing.T) {
	log, st := followed(t)
	appendTenant(t, log, "ten_a")
	apply := func(typ string, data any) {
		t.Helper()
		seq := appendChannelEvent(t, log, "ten_a", eventlog.AggSubscriber, "u1", typ, time.Now(), data)
		if err := st.WaitFor(context.Background(), seq); err != nil {
			t.Fatal(err)
		}
	}
	read := func() (projections.Subscriber, error) { return st.Subscriber("ten_a", "u1") }
	if _, err := read(); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("before the subscriber: %v", err)
	}
	en := "en"
	apply(events.SubscriberUpserted, events.SubscriberUpsertedData{SubscriberID: "u1", Locale: &en,
		Contacts: map[string][]string{"email": {"a@example.com"}}})
	for range 3 {
		if sub, err := read(); err != nil || sub.Contacts["email"][0] != "a@example.com" || *sub.Locale != "en" {
			t.Fatalf("the subscriber: %+v, %v", sub, err)
		}
	}
	sub, _ := read() // what is read is the caller's
	sub.Contacts["email"][0], *sub.Locale = "changed@example.com", "xx"
	sub.Contacts["sms"] = []string{"+15550100"}
	if sub, err := read(); err != nil || sub.Contacts["email"][0] != "a@example.com" || *sub.Locale != "en" || sub.Contacts["sms"] != nil {
		t.Fatalf("after a caller changed what it read: %+v, %v", sub, err)
	}
	apply(events.SubscriberUpserted, events.SubscriberUpsertedData{SubscriberID: "u1",
		Contacts: map[string][]string{"email": {"b@example.com"}}})
	sub, err := read()
	if err != nil || sub.Contacts["email"][0] != "b@example.com" || sub.Locale != nil {
		t.Fatalf("after an upsert: %+v, %v", sub, err)
	}
	for _, change := range []struct {
		typ  string
		data any
	}{
		{events.InboxTokensRevoked, events.InboxTokensRevokedData{SubscriberID: "u1"}},
		{events.SubscriberPreferencesUpdated, events.SubscriberPreferencesUpdatedData{SubscriberID: "u1",
			Preferences: []byte(`{"channels":{"email":false}}`)}},
	} {
		before := sub.Seq
		apply(change.typ, change.data)
		if sub, err = read(); err != nil || sub.Seq <= before {
			t.Fatalf("after %s: seq %d (was %d), %v", change.typ, sub.Seq, before, err)
		}
	}
	apply(events.SubscriberDeleted, events.SubscriberDeletedData{SubscriberID: "u1"})
	if _, err := read(); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("after its delete: %v", err)
	}
	apply(events.SubscriberUpserted, events.SubscriberUpsertedData{SubscriberID: "u1", Contacts: map[string][]string{}})
	if _, err := read(); err != nil {
		t.Fatal(err)
	}
	apply(events.SubscriberErased, events.SubscriberErasedData{SubscriberID: "u1"})
	if _, err := read(); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("after its erasure: %v", err)
	}
}
