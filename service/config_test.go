package service

import (
	"strings"
	"testing"
	"time"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadConfigDefaults(t *testing.T) {
	c, err := LoadConfig(envOf(nil), Flags{})
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTPAddr != "127.0.0.1:8080" || c.DataDir != "./herald-data" || !c.Embedded() || c.Replicas != 1 ||
		c.Sync != SyncInterval || c.RetryBase != time.Second || c.MaxAttempts != 8 || c.Workers != 128 {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestFlagBeatsEnvBeatsDefault(t *testing.T) {
	env := envOf(map[string]string{"HERALD_HTTP_ADDR": "127.0.0.1:9000", "HERALD_DATA_DIR": "/env",
		"HERALD_NATS_URL": "nats://a:4222, nats://b:4222", "HERALD_MASTER_KEY": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
		"HERALD_REPLICAS": "3", "HERALD_RETRY_BASE": "250ms", "HERALD_MAX_ATTEMPTS": "3", "HERALD_WORKERS": "48"})
	c, err := LoadConfig(env, Flags{DataDir: "/flag"})
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTPAddr != "127.0.0.1:9000" || c.DataDir != "/flag" || len(c.NATSURLs) != 2 || c.NATSURLs[1] != "nats://b:4222" ||
		c.Replicas != 3 || c.RetryBase != 250*time.Millisecond || c.MaxAttempts != 3 || c.Workers != 48 {
		t.Fatalf("%+v", c)
	}
}

func TestLoadConfigReportsEveryProblem(t *testing.T) {
	env := envOf(map[string]string{"HERALD_HTTP_ADDR": "nope", "HERALD_SYNC": "sometimes",
		"HERALD_MASTER_KEY": "not base64!", "HERALD_REPLICAS": "3", "HERALD_RETRY_BASE": "soon", "HERALD_WORKERS": "many"})
	_, err := LoadConfig(env, Flags{})
	if err == nil {
		t.Fatal("bad configuration accepted")
	}
	for _, want := range []string{"HERALD_HTTP_ADDR", "HERALD_SYNC", "HERALD_MASTER_KEY", "HERALD_REPLICAS", "HERALD_RETRY_BASE", "HERALD_WORKERS"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s: %v", want, err)
		}
	}
}

func TestExternalNATSNeedsMasterKey(t *testing.T) {
	_, err := LoadConfig(envOf(map[string]string{"HERALD_NATS_URL": "nats://127.0.0.1:1"}), Flags{})
	if err == nil || !strings.Contains(err.Error(), "HERALD_MASTER_KEY") {
		t.Fatalf("got %v", err)
	}
}

func TestWorkersOutOfRange(t *testing.T) {
	for _, v := range []string{"0", "-1", "4097"} {
		_, err := LoadConfig(envOf(map[string]string{"HERALD_WORKERS": v}), Flags{})
		if err == nil || !strings.Contains(err.Error(), "HERALD_WORKERS") {
			t.Errorf("HERALD_WORKERS=%s: %v", v, err)
		}
	}
}

func TestAllowPrivateEgressDefaults(t *testing.T) {
	const key = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
	tests := []struct {
		env  map[string]string
		want bool
	}{
		{nil, true}, // embedded: development
		{map[string]string{"HERALD_NATS_URL": "nats://a:4222", "HERALD_MASTER_KEY": key}, false},
		{map[string]string{"HERALD_NATS_URL": "nats://a:4222", "HERALD_MASTER_KEY": key, "HERALD_ALLOW_PRIVATE_EGRESS": "true"}, true},
		{map[string]string{"HERALD_ALLOW_PRIVATE_EGRESS": "false"}, false},
	}
	for _, tt := range tests {
		c, err := LoadConfig(envOf(tt.env), Flags{})
		if err != nil {
			t.Fatal(err)
		}
		if c.AllowPrivateEgress != tt.want {
			t.Errorf("%v: AllowPrivateEgress = %t, want %t", tt.env, c.AllowPrivateEgress, tt.want)
		}
	}
	_, err := LoadConfig(envOf(map[string]string{"HERALD_ALLOW_PRIVATE_EGRESS": "maybe"}), Flags{})
	if err == nil || !strings.Contains(err.Error(), "HERALD_ALLOW_PRIVATE_EGRESS") {
		t.Fatalf("a bad value: %v", err)
	}
}

func TestTenantConcurrencyAndRateLimit(t *testing.T) {
	c, err := LoadConfig(envOf(nil), Flags{})
	if err != nil {
		t.Fatal(err)
	}
	if c.TenantConcurrency != 0 || c.RateLimit != 200 || c.InboundRate != 100 {
		t.Fatalf("defaults: tenant concurrency %d (want 0: half the workers), rate limit %v (want 200), inbound rate %v (want 100)",
			c.TenantConcurrency, c.RateLimit, c.InboundRate)
	}
	c, err = LoadConfig(envOf(map[string]string{"HERALD_TENANT_CONCURRENCY": "8", "HERALD_RATE_LIMIT": "0.5", "HERALD_INBOUND_RATE": "0"}), Flags{})
	if err != nil || c.TenantConcurrency != 8 || c.RateLimit != 0.5 || c.InboundRate != 0 {
		t.Fatalf("set: %d %v %v %v", c.TenantConcurrency, c.RateLimit, c.InboundRate, err)
	}
	if c, err = LoadConfig(envOf(map[string]string{"HERALD_RATE_LIMIT": "0"}), Flags{}); err != nil || c.RateLimit != 0 {
		t.Fatalf("rate limit off: %v %v", c.RateLimit, err)
	}
	for k, vs := range map[string][]string{
		"HERALD_TENANT_CONCURRENCY": {"0", "-1", "4097", "many"},
		"HERALD_RATE_LIMIT":         {"-1", "fast", "NaN", "1e7"},
		"HERALD_INBOUND_RATE":       {"-1", "fast", "NaN", "1e7"},
	} {
		for _, v := range vs {
			_, err := LoadConfig(envOf(map[string]string{k: v}), Flags{})
			if err == nil || !strings.Contains(err.Error(), k) {
				t.Errorf("%s=%s: %v", k, v, err)
			}
		}
	}
}
