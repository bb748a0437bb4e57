package egress_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/egress"
)

func TestLogURL(t *testing.T) {
	for raw, want := range map[string]string{
		"https://user:pass@bridge.example.com:8443/hook?token=SECRET#frag": "https://bridge.example.com:8443/hook",
		"http://bridge.example.com?token=SECRET":                           "http://bridge.example.com",
		"http://a@b@host/p@q?x=1":                                          "http://host/p@q",
		"https://host/path":                                                "https://host/path",
		"host:80/x?y":                                                      "host:80/x",
		"http://user:***@host/":                                            "http://host/",
	} {
		if got := egress.LogURL(raw); got != want {
			t.Errorf("LogURL(%q) = %q, want %q", raw, got, want)
		}
	}
}

// A request that fails at the network level: its error, as Go gives it,
// names the URL with its query and user; LogText keeps the host alone.
func TestLogTextDropsQueryAndUserinfo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := "http://user:pass@127.0.0.1:1/hook?token=SECRET"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = egress.Policy{AllowPrivate: true}.Client(10 * time.Second).Do(req)
	if err == nil {
		t.Skip("something listens on port 1")
	}
	if !strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("the error no longer quotes the query (%v): this test shows nothing", err)
	}
	for _, e := range []error{err, fmt.Errorf("bridge: %w", err), fmt.Errorf("flattened: %v", err), errors.Join(errors.New("x"), err)} {
		got := egress.LogText(e)
		if strings.Contains(got, "SECRET") || strings.Contains(got, "pass") || strings.Contains(got, "user") ||
			!strings.Contains(got, "http://127.0.0.1:1/hook") {
			t.Errorf("LogText = %q", got)
		}
	}
	if egress.LogText(nil) != "" {
		t.Error("LogText(nil) is not empty")
	}
}
