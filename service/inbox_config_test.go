package service

import (
	"slices"
	"strings"
	"testing"
)

// HERALD_INBOX_ORIGINS is a comma-separated list of origins or *; the flag
// beats it; anything else is refused, naming the variable.
func TestInboxOrigins(t *testing.T) {
	c, err := LoadConfig(envOf(map[string]string{"HERALD_INBOX_ORIGINS": " https://App.example.com/ ,http://localhost:3000,"}), Flags{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.InboxOrigins, []string{"https://app.example.com", "http://localhost:3000"}) {
		t.Fatalf("origins %q", c.InboxOrigins)
	}
	c, err = LoadConfig(envOf(map[string]string{"HERALD_INBOX_ORIGINS": "https://a.example"}), Flags{InboxOrigins: "*"})
	if err != nil || !slices.Equal(c.InboxOrigins, []string{"*"}) {
		t.Fatalf("flag: %q, %v", c.InboxOrigins, err)
	}
	if c, err := LoadConfig(envOf(nil), Flags{}); err != nil || len(c.InboxOrigins) != 0 {
		t.Fatalf("default %q, %v", c.InboxOrigins, err)
	}
	for _, bad := range []string{"app.example.com", "https://app.example.com/inbox", "ftp://x", "https://"} {
		_, err := LoadConfig(envOf(map[string]string{"HERALD_INBOX_ORIGINS": bad}), Flags{})
		if err == nil || !strings.Contains(err.Error(), "HERALD_INBOX_ORIGINS") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
