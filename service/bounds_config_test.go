package service

import (
	"testing"
	"time"
)

// HERALD_CRON_MIN_INTERVAL defaults to 1m against a NATS cluster and 1s
// embedded; a negative or unparsable value is refused.
func TestCronMinInterval(t *testing.T) {
	key := "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
	for _, tt := range []struct {
		env  map[string]string
		want time.Duration
		bad  bool
	}{
		{map[string]string{}, time.Second, false},
		{map[string]string{"HERALD_NATS_URL": "nats://a:4222", "HERALD_MASTER_KEY": key}, time.Minute, false},
		{map[string]string{"HERALD_CRON_MIN_INTERVAL": "5m"}, 5 * time.Minute, false},
		{map[string]string{"HERALD_CRON_MIN_INTERVAL": "-1s"}, 0, true},
		{map[string]string{"HERALD_CRON_MIN_INTERVAL": "often"}, 0, true},
	} {
		c, err := LoadConfig(func(k string) string { return tt.env[k] }, Flags{})
		if (err != nil) != tt.bad || (!tt.bad && c.CronMinInterval != tt.want) {
			t.Errorf("%v: %v, %v", tt.env, c.CronMinInterval, err)
		}
	}
}

// HERALD_CACHE_MIB defaults to 256 and must be a non-negative integer.
func TestCacheMiB(t *testing.T) {
	c, err := LoadConfig(func(string) string { return "" }, Flags{})
	if err != nil || c.CacheMiB != 256 {
		t.Fatalf("default %d, %v", c.CacheMiB, err)
	}
	for _, bad := range []string{"-1", "lots"} {
		if _, err := LoadConfig(func(k string) string {
			if k == "HERALD_CACHE_MIB" {
				return bad
			}
			return ""
		}, Flags{}); err == nil {
			t.Errorf("HERALD_CACHE_MIB=%s accepted", bad)
		}
	}
}
