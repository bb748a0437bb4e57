package wire_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge/wire"
)

func TestSignGolden(t *testing.T) {
	// printf '%s' '1700000000.{"action":"health"}' | openssl dgst -sha256 -hmac whsec_test
	const want = "0baaf36c6a86bf76d8d88bac4230fc4c36746de47a86021b4e3cc4d2c4da79bf"
	if got := wire.Sign("whsec_test", 1700000000, []byte(`{"action":"health"}`)); got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
}

func TestVerify(t *testing.T) {
	const secret = "whsec_current"
	body := []byte(`{"action":"health"}`)
	now := time.Unix(1700000000, 0)
	ts := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).Unix(), 10) }
	sig := func(s string, at time.Duration) string { return wire.Sign(s, now.Add(at).Unix(), body) }
	altered := []byte(`{"action":"hEalth"}`)

	tests := []struct {
		name      string
		body      []byte
		timestamp string
		signature string
		now       time.Time
		tolerance time.Duration
		secrets   []string
		want      error
	}{
		{name: "valid", timestamp: ts(0), signature: sig(secret, 0), want: nil},
		{name: "wrong secret", timestamp: ts(0), signature: sig("whsec_other", 0), want: wire.ErrNoValidSignature},
		{name: "missing signature", timestamp: ts(0), want: wire.ErrNotSigned},
		{name: "missing timestamp", signature: sig(secret, 0), want: wire.ErrNotSigned},
		{name: "timestamp not decimal", timestamp: "1.7e9", signature: sig(secret, 0), want: wire.ErrInvalidHeader},
		{name: "timestamp signed", timestamp: "+" + ts(0), signature: sig(secret, 0), want: wire.ErrInvalidHeader},
		{name: "timestamp overflow", timestamp: "99999999999999999999", signature: sig(secret, 0), want: wire.ErrInvalidHeader},
		{name: "signature of another timestamp", timestamp: ts(1 * time.Second), signature: sig(secret, 0), want: wire.ErrNoValidSignature},
		{name: "body altered by one byte", body: altered, timestamp: ts(0), signature: sig(secret, 0), want: wire.ErrNoValidSignature},
		{name: "uppercase hex", timestamp: ts(0), signature: strings.ToUpper(sig(secret, 0)), want: wire.ErrNoValidSignature},
		{name: "prefixed signature", timestamp: ts(0), signature: "sha256=" + sig(secret, 0), want: wire.ErrNoValidSignature},
		{name: "300 s in the past", timestamp: ts(-300 * time.Second), signature: sig(secret, -300*time.Second), want: nil},
		{name: "301 s in the past", timestamp: ts(-301 * time.Second), signature: sig(secret, -301*time.Second), want: wire.ErrStale},
		{name: "300 s in the future", timestamp: ts(300 * time.Second), signature: sig(secret, 300*time.Second), want: nil},
		{name: "301 s in the future", timestamp: ts(301 * time.Second), signature: sig(secret, 301*time.Second), want: wire.ErrStale},
		{name: "fraction of the clock ignored", now: now.Add(300*time.Second + 999*time.Millisecond), timestamp: ts(0), signature: sig(secret, 0), want: nil},
		{name: "custom tolerance", tolerance: 10 * time.Second, timestamp: ts(-11 * time.Second), signature: sig(secret, -11*time.Second), want: wire.ErrStale},
		{name: "timestamp zero", timestamp: "0", signature: wire.Sign(secret, 0, body), want: wire.ErrStale},
		{name: "old key during rotation", secrets: []string{"whsec_new", secret}, timestamp: ts(0), signature: sig(secret, 0), want: nil},
		{name: "new key during rotation", secrets: []string{"whsec_new", secret}, timestamp: ts(0), signature: sig("whsec_new", 0), want: nil},
		{name: "no secret", secrets: []string{}, timestamp: ts(0), signature: sig(secret, 0), want: wire.ErrNoValidSignature},
		{name: "empty secret is never a key", secrets: []string{""}, timestamp: ts(0), signature: sig("", 0), want: wire.ErrNoValidSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, at, secrets := body, now, []string{secret}
			if tt.body != nil {
				b = tt.body
			}
			if !tt.now.IsZero() {
				at = tt.now
			}
			if tt.secrets != nil {
				secrets = tt.secrets
			}
			err := wire.Verify(b, tt.timestamp, tt.signature, at, tt.tolerance, secrets...)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Verify = %v, want %v", err, tt.want)
			}
		})
	}
}
