package service

import (
	"strings"
	"testing"
	"time"
)

// TestWebhookRetryBase: HERALD_WEBHOOK_RETRY_BASE defaults to 5s, is read
// from the environment, and must be a positive duration of at most 1h.
func TestWebhookRetryBase(t *testing.T) {
	c, err := LoadConfig(envOf(nil), Flags{})
	if err != nil || c.WebhookRetryBase != 5*time.Second {
		t.Fatalf("default: %v %v", c.WebhookRetryBase, err)
	}
	c, err = LoadConfig(envOf(map[string]string{"HERALD_WEBHOOK_RETRY_BASE": "100ms"}), Flags{})
	if err != nil || c.WebhookRetryBase != 100*time.Millisecond {
		t.Fatalf("100ms: %v %v", c.WebhookRetryBase, err)
	}
	for _, bad := range []string{"soon", "0s", "-1s", "2h"} {
		_, err := LoadConfig(envOf(map[string]string{"HERALD_WEBHOOK_RETRY_BASE": bad}), Flags{})
		if err == nil || !strings.Contains(err.Error(), "HERALD_WEBHOOK_RETRY_BASE") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
