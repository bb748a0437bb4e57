package control_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/egress"
)

// fieldsOf returns the fields a validation error names.
func fieldsOf(t *testing.T, err error) []string {
	t.Helper()
	var ve *apierr.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v, want a *apierr.ValidationError", err)
	}
	var fields []string
	for _, p := range ve.Problems {
		fields = append(fields, p.Field)
	}
	return fields
}

func TestBridgeURLUnderEgressPolicy(t *testing.T) {
	ctx := context.Background()
	h := newChannelHarness(t, channelKeyring(t, 7))
	h.rebuild(control.Config{Egress: &egress.Policy{}})
	for _, u := range []string{
		"http://bridge.example.com/herald", // plain http
		"https://127.0.0.1/bridge",
		"https://[::1]:8443/bridge",
		"https://169.254.169.254/latest/meta-data",
		"https://10.0.0.5/bridge",
		"https://[::ffff:192.168.1.1]/bridge",
		"https://localhost:4000/bridge", // a name resolving to loopback
	} {
		_, err := h.ctl.ConfigureBridge(ctx, "ten_a", u)
		if f := fieldsOf(t, err); len(f) != 1 || f[0] != "webhookUrl" {
			t.Errorf("%s: fields %v", u, f)
		}
	}
	if _, err := h.ctl.ConfigureBridge(ctx, "ten_a", "https://93.184.216.34/bridge"); err != nil {
		t.Fatalf("a public https URL: %v", err)
	}

	h.rebuild(control.Config{Egress: &egress.Policy{AllowPrivate: true}})
	if _, err := h.ctl.ConfigureBridge(ctx, "ten_a", "http://127.0.0.1:4000/bridge"); err != nil {
		t.Fatalf("private egress on: %v", err)
	}
}

func TestChannelHostUnderEgressPolicy(t *testing.T) {
	ctx := context.Background()
	h := newChannelHarness(t, channelKeyring(t, 7))
	h.rebuild(control.Config{Egress: &egress.Policy{}})
	config := func(host string) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"host": host, "port": 25, "fromEmail": "a@example.com"})
		return b
	}
	for _, host := range []string{"127.0.0.1", "localhost", "10.1.2.3", "169.254.169.254", "::1", "fd00::1", "100.64.0.1"} {
		_, err := h.ctl.ConfigureChannel(ctx, "ten_a", control.ChannelInput{ChannelKey: "email-smtp", Config: config(host)})
		if f := fieldsOf(t, err); len(f) != 1 || f[0] != "config.host" {
			t.Errorf("create, host %s: fields %v", host, f)
		}
	}
	if _, err := h.ctl.ConfigureChannel(ctx, "ten_a", control.ChannelInput{ChannelKey: "email-smtp", Config: config("93.184.216.34")}); err != nil {
		t.Fatalf("a public host: %v", err)
	}
	_, err := h.ctl.UpdateChannel(ctx, "ten_a", "email-smtp", control.ChannelPatch{Config: config("192.168.0.10")})
	if f := fieldsOf(t, err); len(f) != 1 || f[0] != "config.host" {
		t.Errorf("patch: fields %v", f)
	}
}

// A check's candidate Bridge URL passes the egress rules of a Bridge URL:
// refused with bridgeUrl named, before any call.
func TestCheckCandidateUnderEgressPolicy(t *testing.T) {
	ctx := context.Background()
	h := newChannelHarness(t, channelKeyring(t, 7))
	h.rebuild(control.Config{Egress: &egress.Policy{}})
	for _, u := range []string{
		"http://bridge.example.com/herald",
		"https://127.0.0.1/bridge",
		"https://169.254.169.254/latest/meta-data",
		"https://localhost:4000/bridge",
		"ftp://bridge.example.com/",
	} {
		_, err := h.ctl.Check(ctx, "ten_a", control.CheckCommand{BridgeURL: u, SigningSecret: "whsec_x"})
		if f := fieldsOf(t, err); len(f) != 1 || f[0] != "bridgeUrl" {
			t.Errorf("%s: fields %v", u, f)
		}
	}
}
