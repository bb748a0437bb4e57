package service

import (
	"strings"
	"testing"
)

// TestPublicURL: HERALD_PUBLIC_URL is read (the flag wins), its trailing
// slash dropped; unset means none; anything but an absolute http(s) URL
// without query or fragment is refused.
func TestPublicURL(t *testing.T) {
	c, err := LoadConfig(envOf(nil), Flags{})
	if err != nil || c.PublicURL != "" {
		t.Fatalf("default: %q %v", c.PublicURL, err)
	}
	c, err = LoadConfig(envOf(map[string]string{"HERALD_PUBLIC_URL": "https://notify.example.com/herald/"}), Flags{})
	if err != nil || c.PublicURL != "https://notify.example.com/herald" {
		t.Fatalf("env: %q %v", c.PublicURL, err)
	}
	c, err = LoadConfig(envOf(map[string]string{"HERALD_PUBLIC_URL": "https://env.example"}), Flags{PublicURL: "http://flag.example:8080"})
	if err != nil || c.PublicURL != "http://flag.example:8080" {
		t.Fatalf("flag: %q %v", c.PublicURL, err)
	}
	for _, bad := range []string{"notify.example.com", "ftp://x.example", "https://", "https://x.example/?a=1",
		"https://x.example/#f", "https://user:pw@x.example", "https://x.example/a b"} {
		_, err := LoadConfig(envOf(map[string]string{"HERALD_PUBLIC_URL": bad}), Flags{})
		if err == nil || !strings.Contains(err.Error(), "HERALD_PUBLIC_URL") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
