package control_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testnats"
	"github.com/heraldhq/herald/internal/teststore"
	"github.com/heraldhq/herald/projections"
	"github.com/heraldhq/herald/secrets"
)

// channelHarness is a Control on a real event log and real projections.
type channelHarness struct {
	log   *eventlog.Log
	store *projections.Store
	keys  *secrets.Keyring
	ctl   *control.Control
}

// rebuild replaces h.ctl with a Control built with cfg on h's log, store
// and keys.
func (h *channelHarness) rebuild(cfg control.Config) {
	cfg.Log, cfg.Store, cfg.Keys = h.log, h.store, h.keys
	h.ctl = control.New(cfg)
}

func newChannelHarness(t *testing.T, keys *secrets.Keyring) *channelHarness {
	t.Helper()
	log := testnats.Log(t)
	h := &channelHarness{log: log, store: teststore.Running(t, log), keys: keys}
	h.rebuild(control.Config{})
	return h
}

func channelKeyring(t *testing.T, b byte, previous ...[]byte) *secrets.Keyring {
	t.Helper()
	kr, err := secrets.NewKeyring(bytes.Repeat([]byte{b}, secrets.KeySize), previous...)
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

// put appends a channel event at a chosen time and waits until the
// projections applied it.
func (h *channelHarness) put(t *testing.T, tenant, typ string, at time.Time, channelKey string, data any) {
	t.Helper()
	ctx := context.Background()
	seq, err := h.log.Append(ctx, eventlog.Record{Subject: eventlog.Subject(tenant, eventlog.AggChannel, channelKey),
		Type: typ, Tenant: tenant, Data: data, At: at})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.store.WaitFor(ctx, seq); err != nil {
		t.Fatal(err)
	}
}

func (h *channelHarness) configured(t *testing.T, tenant, key, kind string, priority int, at time.Time) {
	t.Helper()
	h.put(t, tenant, events.ChannelConfigured, at, key, events.ChannelConfiguredData{
		ChannelKey: key, Kind: kind, Enabled: true, Priority: priority,
		Config: events.ChannelConfig{Public: map[string]any{}, Sealed: map[string]string{}}})
}

func (h *channelHarness) setEnabled(t *testing.T, tenant, key string, enabled bool, at time.Time) {
	t.Helper()
	h.put(t, tenant, events.ChannelUpdated, at, key, events.ChannelUpdatedData{ChannelKey: key, Enabled: &enabled})
}

func (h *channelHarness) wantSelected(t *testing.T, tenant, kind, want string) {
	t.Helper()
	ch, err := firstChannel(h.store, tenant, kind)
	if want == "" {
		if !errors.Is(err, delivery.ErrNoChannel) {
			t.Fatalf("select %s: got %q, %v; want ErrNoChannel", kind, ch.ChannelKey, err)
		}
		return
	}
	if err != nil || ch.ChannelKey != want {
		t.Fatalf("select %s: got %q, %v; want %q", kind, ch.ChannelKey, err, want)
	}
}

// The catalog holds one entry, so a tenant has one email channel through
// the API; several channels of a kind are written here as events, which
// the projections accept whatever the key.
func TestSelectChannelOrder(t *testing.T) {
	h := newChannelHarness(t, channelKeyring(t, 1))
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }

	h.wantSelected(t, "ten_a", "email", "")

	h.configured(t, "ten_a", "a-prio1", "email", 1, at(0))
	h.wantSelected(t, "ten_a", "email", "a-prio1")

	h.configured(t, "ten_a", "b-prio0", "email", 0, at(10))
	h.wantSelected(t, "ten_a", "email", "b-prio0") // lower priority beats older

	h.configured(t, "ten_a", "z-prio0-older", "email", 0, at(5))
	h.wantSelected(t, "ten_a", "email", "z-prio0-older") // tie: the oldest

	h.configured(t, "ten_a", "c-prio0-same-instant", "email", 0, at(5))
	h.wantSelected(t, "ten_a", "email", "z-prio0-older") // same instant: the first created

	h.configured(t, "ten_a", "sms-prio0-oldest", "sms", 0, at(-60))
	h.wantSelected(t, "ten_a", "email", "z-prio0-older") // other kinds are not candidates
	h.wantSelected(t, "ten_a", "sms", "sms-prio0-oldest")
	h.wantSelected(t, "ten_a", "push", "")

	h.setEnabled(t, "ten_a", "z-prio0-older", false, at(20))
	h.wantSelected(t, "ten_a", "email", "c-prio0-same-instant") // disabled skipped
	h.setEnabled(t, "ten_a", "c-prio0-same-instant", false, at(21))
	h.wantSelected(t, "ten_a", "email", "b-prio0")

	// A repeat configure keeps the creation time: b stays older than d.
	h.configured(t, "ten_a", "d-prio0-newer", "email", 0, at(30))
	h.configured(t, "ten_a", "b-prio0", "email", 0, at(40))
	h.wantSelected(t, "ten_a", "email", "b-prio0")

	// Re-enabling brings the oldest back.
	h.setEnabled(t, "ten_a", "z-prio0-older", true, at(50))
	h.wantSelected(t, "ten_a", "email", "z-prio0-older")

	// Another tenant sees none of these.
	h.wantSelected(t, "ten_b", "email", "")

	// Every channel of the kind disabled or deleted: no channel.
	for _, k := range []string{"z-prio0-older", "b-prio0", "d-prio0-newer"} {
		h.setEnabled(t, "ten_a", k, false, at(60))
	}
	h.put(t, "ten_a", events.ChannelDeleted, at(61), "a-prio1", events.ChannelDeletedData{ChannelKey: "a-prio1"})
	h.wantSelected(t, "ten_a", "email", "")
}

func smtpConfig(password string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"host": "smtp.example.com", "port": 587, "fromEmail": "no-reply@example.com",
		"username": "ada", "password": password})
	return b
}

func TestOpenChannelConfigAndKeyRotation(t *testing.T) {
	ctx := context.Background()
	keyA := bytes.Repeat([]byte{0xA}, secrets.KeySize)
	krA := channelKeyring(t, 0xA)
	h := newChannelHarness(t, krA)
	const password = "Tr0ub4dor&3-rotation"
	ch, err := h.ctl.ConfigureChannel(ctx, "ten_a", control.ChannelInput{ChannelKey: "email-smtp", Config: smtpConfig(password)})
	if err != nil {
		t.Fatal(err)
	}
	if _, inPublic := ch.Public["password"]; inPublic || !secrets.IsSealed(ch.Sealed["password"]) {
		t.Fatalf("password not sealed in the projection: %+v", ch)
	}
	cfg, err := delivery.OpenChannelConfig(krA, "ten_a", ch)
	if err != nil {
		t.Fatal(err)
	}
	if cfg["password"] != password || cfg["host"] != "smtp.example.com" || cfg["port"] != 587.0 || cfg["username"] != "ada" {
		t.Fatalf("opened config: %v", len(cfg))
	}

	// Key B becomes current, A stays as a previous key: A's value opens.
	krBA := channelKeyring(t, 0xB, keyA)
	rotated := control.New(control.Config{Log: h.log, Store: h.store, Keys: krBA})
	if cfg, err := delivery.OpenChannelConfig(krBA, "ten_a", ch); err != nil || cfg["password"] != password {
		t.Fatalf("after rotation: %v", err)
	}
	// Written again, the value is sealed with B and still opens.
	ch2, err := rotated.ConfigureChannel(ctx, "ten_a", control.ChannelInput{ChannelKey: "email-smtp", Config: smtpConfig(password)})
	if err != nil {
		t.Fatal(err)
	}
	if ch2.Sealed["password"][3:11] == ch.Sealed["password"][3:11] {
		t.Fatal("re-written value still sealed with the old key")
	}
	if cfg, err := delivery.OpenChannelConfig(krBA, "ten_a", ch2); err != nil || cfg["password"] != password {
		t.Fatalf("re-sealed value: %v", err)
	}

	// Without A, A's value fails loudly.
	if _, err := delivery.OpenChannelConfig(channelKeyring(t, 0xB), "ten_a", ch); !errors.Is(err, secrets.ErrUnknownKey) {
		t.Fatalf("opened without its key: %v", err)
	}
	// A sealed value copied to another tenant does not open there.
	if _, err := delivery.OpenChannelConfig(krA, "ten_b", ch); !errors.Is(err, secrets.ErrDecrypt) {
		t.Fatalf("opened under another tenant: %v", err)
	}
}

// Concurrent POSTs of one channel make one channel: the losers of the
// optimistic race re-read and update it.
func TestConfigureChannelConcurrentRepeats(t *testing.T) {
	h := newChannelHarness(t, channelKeyring(t, 3))
	ctx := context.Background()
	const n = 5
	errs := make(chan error, n)
	for i := range n {
		go func() {
			prio := i
			_, err := h.ctl.ConfigureChannel(ctx, "ten_a", control.ChannelInput{ChannelKey: "email-smtp",
				Config: smtpConfig("pw"), Priority: &prio})
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	chs, err := h.ctl.Channels("ten_a")
	if err != nil || len(chs) != 1 {
		t.Fatalf("channels: %d %v", len(chs), err)
	}
	evs, err := h.log.History(ctx, eventlog.Subject("ten_a", eventlog.AggChannel, "email-smtp"), 0)
	if err != nil || len(evs) != n {
		t.Fatalf("history: %d events, %v", len(evs), err)
	}
	if first := evs[0]; chs[0].Seq != first.Seq || !chs[0].CreatedAt.Equal(first.At) {
		t.Fatalf("channel not dated by the first event: %+v", chs[0])
	}
}

// firstChannel is the channel a send of kind tries first.
func firstChannel(store *projections.Store, tenant, kind string) (projections.Channel, error) {
	chs, err := delivery.SelectChannels(store, tenant, kind)
	if err != nil {
		return projections.Channel{}, err
	}
	return chs[0], nil
}
