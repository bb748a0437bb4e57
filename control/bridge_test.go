package control_test

import (
	"context"
	"errors"
	"testing"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/secrets"
)

func TestBridgeSecret(t *testing.T) {
	ctx := context.Background()
	h := newChannelHarness(t, channelKeyring(t, 7))
	_, _, err := h.ctl.BridgeSecret(ctx, "ten_a")
	var ce *apierr.Error
	if !errors.Is(err, apierr.ErrNotFound) || !errors.As(err, &ce) || ce.Code != "bridge_not_configured" {
		t.Fatalf("before registration: %v", err)
	}
	first, err := h.ctl.ConfigureBridge(ctx, "ten_a", "https://bridge.example.com/api/herald")
	if err != nil {
		t.Fatal(err)
	}
	url, secret, err := h.ctl.BridgeSecret(ctx, "ten_a")
	if err != nil || url != first.WebhookURL || secret != first.SigningSecret {
		t.Fatalf("bridge secret: %q %v", url, err)
	}
	second, err := h.ctl.ConfigureBridge(ctx, "ten_a", "http://localhost:4000/bridge")
	if err != nil {
		t.Fatal(err)
	}
	if second.SigningSecret == first.SigningSecret {
		t.Fatal("rotation kept the secret")
	}
	if url, secret, err = h.ctl.BridgeSecret(ctx, "ten_a"); err != nil || url != second.WebhookURL || secret != second.SigningSecret {
		t.Fatalf("after rotation: %q %v", url, err)
	}
	if _, _, err := h.ctl.BridgeSecret(ctx, "ten_b"); !errors.Is(err, apierr.ErrNotFound) {
		t.Fatalf("other tenant: %v", err)
	}
	bb, err := h.store.Bridge("ten_a")
	if err != nil || bb.SealedSecret == second.SigningSecret || !secrets.IsSealed(bb.SealedSecret) {
		t.Fatalf("stored binding: %v", err)
	}
}

// TestBridgeSecretsWithoutAControl: the engine is built before the Control
// it serves and opens Bridge secrets through BridgeSecrets alone, which
// answers as Control.BridgeSecret does, rotation and unknown tenant
// included.
func TestBridgeSecretsWithoutAControl(t *testing.T) {
	ctx := context.Background()
	keys := channelKeyring(t, 7)
	h := newChannelHarness(t, keys)
	bs := control.NewBridgeSecrets(h.log, h.store, keys)
	if _, _, err := bs.BridgeSecret(ctx, "ten_a"); !errors.Is(err, apierr.ErrNotFound) {
		t.Fatalf("before registration: %v", err)
	}
	for _, u := range []string{"https://bridge.example.com/api/herald", "https://bridge.example.com/v2"} {
		reg, err := h.ctl.ConfigureBridge(ctx, "ten_a", u)
		if err != nil {
			t.Fatal(err)
		}
		if url, secret, err := bs.BridgeSecret(ctx, "ten_a"); err != nil || url != u || secret != reg.SigningSecret {
			t.Fatalf("%s: %q %v", u, url, err)
		}
	}
}
