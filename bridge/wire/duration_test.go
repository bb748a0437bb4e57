package wire_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge/wire"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"10m", 10 * time.Minute, true},
		{"2s", 2 * time.Second, true},
		{"1h30m", 90 * time.Minute, true},
		{"300ms", 300 * time.Millisecond, true},
		{"0", 0, true},
		{"1d", 24 * time.Hour, true},
		{"1.5d", 36 * time.Hour, true},
		{"2d12h", 60 * time.Hour, true},
		{"1d30m15s", 24*time.Hour + 30*time.Minute + 15*time.Second, true},
		{"", 0, false},
		{"10", 0, false},
		{"-1h", 0, false},
		{"+1h", 0, false},
		{"1d-1h", 0, false},
		{"d", 0, false},
		{".5d", 0, false},
		{"1.d", 0, false},
		{"1e2d", 0, false},
		{"1h1d", 0, false},
		{"1d1d", 0, false},
		{"1w", 0, false},
		{"1 h", 0, false},
		{"200000d", 0, false},
		{"106751d23h47m17s", 0, false},
	}
	for _, tt := range tests {
		got, err := wire.ParseDuration(tt.in)
		if tt.ok != (err == nil) || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v (ok %v)", tt.in, got, err, tt.want, tt.ok)
		}
		if err != nil && !errors.Is(err, wire.ErrInvalidDuration) {
			t.Errorf("ParseDuration(%q) error %v does not wrap ErrInvalidDuration", tt.in, err)
		}
	}
}

func TestDurationJSON(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{`3600`, time.Hour, true},
		{`1.5`, 1500 * time.Millisecond, true},
		{`0`, 0, true},
		{`1e2`, 100 * time.Second, true},
		{`"1h"`, time.Hour, true},
		{`"10m"`, 10 * time.Minute, true},
		{`"1d"`, 24 * time.Hour, true},
		{`-1`, 0, false},
		{`"3600"`, 0, false},
		{`"soon"`, 0, false},
		{`true`, 0, false},
		{`{}`, 0, false},
		{`1e300`, 0, false},
	}
	for _, tt := range tests {
		var v struct {
			Timeout *wire.Duration `json:"timeout"`
		}
		err := json.Unmarshal([]byte(`{"timeout":`+tt.in+`}`), &v)
		if tt.ok != (err == nil) {
			t.Errorf("%s: err = %v, want ok %v", tt.in, err, tt.ok)
			continue
		}
		if !tt.ok {
			continue
		}
		if got := v.Timeout.Duration(); got != tt.want {
			t.Errorf("%s: Duration() = %v, want %v", tt.in, got, tt.want)
		}
		// The form read is the form written.
		if out, _ := json.Marshal(v.Timeout); string(out) != tt.in {
			t.Errorf("%s: marshals back as %s", tt.in, out)
		}
	}

	var v struct {
		Timeout *wire.Duration `json:"timeout"`
	}
	if err := json.Unmarshal([]byte(`{"timeout":null}`), &v); err != nil || v.Timeout != nil {
		t.Errorf("null: %v, %v; want nil, nil", v.Timeout, err)
	}
}

func TestDurationOf(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Hour:               "3600",
		1500 * time.Millisecond: "1.5",
		0:                       "0",
	} {
		got := wire.DurationOf(d)
		if out, _ := json.Marshal(got); string(out) != want || got.Duration() != d || got.String() != want {
			t.Errorf("DurationOf(%v) = %s (%q), want %s", d, out, got.String(), want)
		}
	}
	if out, _ := json.Marshal(wire.Duration{}); string(out) != "null" {
		t.Errorf("zero Duration marshals as %s, want null", out)
	}
}
