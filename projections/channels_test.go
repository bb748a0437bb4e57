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

func TestChannelsProjection(t *testing.T) {
	log, st := followed(t)
	ctx := context.Background()
	cfg := events.ChannelConfig{
		Public: map[string]any{"host": "smtp.example.com", "port": 587.0},
		Sealed: map[string]string{"password": "v1:00000000:sealed"},
	}
	first := appendChannelEvent(t, log, "ten_a", eventlog.AggChannel, "email-smtp", events.ChannelConfigured, t0,
		events.ChannelConfiguredData{ChannelKey: "email-smtp", Kind: "email", Config: cfg, Enabled: true, Priority: 3})
	appendChannelEvent(t, log, "ten_b", eventlog.AggChannel, "email-smtp", events.ChannelConfigured, t0,
		events.ChannelConfiguredData{ChannelKey: "email-smtp", Kind: "email", Config: cfg, Enabled: true})

	// A repeat keeps the creation time and sequence, replaces the rest.
	t1 := t0.Add(time.Hour)
	appendChannelEvent(t, log, "ten_a", eventlog.AggChannel, "email-smtp", events.ChannelConfigured, t1,
		events.ChannelConfiguredData{ChannelKey: "email-smtp", Kind: "email",
			Config: events.ChannelConfig{Public: map[string]any{"host": "other"}}, Enabled: false, Priority: 1})
	// An enabled-only update leaves the config.
	t2 := t1.Add(time.Hour)
	on := true
	seq := appendChannelEvent(t, log, "ten_a", eventlog.AggChannel, "email-smtp", events.ChannelUpdated, t2,
		events.ChannelUpdatedData{ChannelKey: "email-smtp", Enabled: &on})
	if err := st.WaitFor(ctx, seq); err != nil {
		t.Fatal(err)
	}
	ch, err := st.Channel("ten_a", "email-smtp")
	if err != nil {
		t.Fatal(err)
	}
	if !ch.CreatedAt.Equal(t0) || ch.Seq != first || !ch.UpdatedAt.Equal(t2) || !ch.Enabled || ch.Priority != 1 ||
		ch.Public["host"] != "other" || len(ch.Sealed) != 0 || ch.Kind != "email" {
		t.Fatalf("after repeat and update: %+v", ch)
	}

	// A config update replaces the whole config.
	seq = appendChannelEvent(t, log, "ten_a", eventlog.AggChannel, "email-smtp", events.ChannelUpdated, t2,
		events.ChannelUpdatedData{ChannelKey: "email-smtp", Config: &cfg})
	if err := st.WaitFor(ctx, seq); err != nil {
		t.Fatal(err)
	}
	if ch, _ = st.Channel("ten_a", "email-smtp"); ch.Public["port"] != 587.0 || ch.Sealed["password"] != "v1:00000000:sealed" {
		t.Fatalf("after config update: %+v", ch)
	}

	// An update of a channel that does not exist creates nothing.
	seq = appendChannelEvent(t, log, "ten_c", eventlog.AggChannel, "email-smtp", events.ChannelUpdated, t2,
		events.ChannelUpdatedData{ChannelKey: "email-smtp", Enabled: &on})
	if err := st.WaitFor(ctx, seq); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Channel("ten_c", "email-smtp"); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("update created a channel: %v", err)
	}

	// Delete: gone for ten_a only; a new create starts a new creation time.
	seq = appendChannelEvent(t, log, "ten_a", eventlog.AggChannel, "email-smtp", events.ChannelDeleted, t2,
		events.ChannelDeletedData{ChannelKey: "email-smtp"})
	if err := st.WaitFor(ctx, seq); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Channel("ten_a", "email-smtp"); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("deleted channel: %v", err)
	}
	if chs, err := st.Channels("ten_a"); err != nil || len(chs) != 0 {
		t.Fatalf("channels after delete: %v %v", chs, err)
	}
	if chs, err := st.Channels("ten_b"); err != nil || len(chs) != 1 || chs[0].ChannelKey != "email-smtp" {
		t.Fatalf("other tenant's channels: %v %v", chs, err)
	}
	t3 := t2.Add(time.Hour)
	seq = appendChannelEvent(t, log, "ten_a", eventlog.AggChannel, "email-smtp", events.ChannelConfigured, t3,
		events.ChannelConfiguredData{ChannelKey: "email-smtp", Kind: "email", Config: cfg, Enabled: true})
	if err := st.WaitFor(ctx, seq); err != nil {
		t.Fatal(err)
	}
	if ch, _ = st.Channel("ten_a", "email-smtp"); !ch.CreatedAt.Equal(t3) || ch.Seq != seq {
		t.Fatalf("re-created channel kept its old creation: %+v", ch)
	}

	// Bridge binding: the last registration wins.
	appendChannelEvent(t, log, "ten_a", eventlog.AggBridge, "ten_a", events.BridgeConfigured, t0,
		events.BridgeConfiguredData{WebhookURL: "https://a.example/1", SealedSecret: "v1:00000000:one"})
	seq = appendChannelEvent(t, log, "ten_a", eventlog.AggBridge, "ten_a", events.BridgeConfigured, t1,
		events.BridgeConfiguredData{WebhookURL: "https://a.example/2", SealedSecret: "v1:00000000:two"})
	if err := st.WaitFor(ctx, seq); err != nil {
		t.Fatal(err)
	}
	bb, err := st.Bridge("ten_a")
	if err != nil || bb.WebhookURL != "https://a.example/2" || bb.SealedSecret != "v1:00000000:two" || !bb.UpdatedAt.Equal(t1) {
		t.Fatalf("bridge: %+v %v", bb, err)
	}
	if _, err := st.Bridge("ten_b"); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("bridge of another tenant: %v", err)
	}

	// Rebuilding from the log gives the same bytes.
	checkRebuild(t, log, st)
}
