package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/testnet"
	"github.com/heraldhq/herald/internal/testwait"
)

// TestAdminCommands drives `herald tenant` and `herald key` against a real
// herald serve: a tenant is created and listed, a second key is minted,
// listed and revoked, and the revoked key is refused by the API at once.
func TestAdminCommands(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, addr := t.TempDir(), testnet.FreeAddr(t)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--data", dir, "--http", addr}, &bytes.Buffer{}, &bytes.Buffer{})
	}()
	defer func() { cancel(); <-done }()
	waitReady(t, addr)
	t.Setenv("HERALD_ADMIN_TOKEN", "")
	t.Setenv("HERALD_HTTP_ADDR", "")
	flags := []string{"--http", addr, "--data", dir}
	cli := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		if err := run(ctx, args, &out, &out); err != nil {
			t.Fatalf("herald %v: %v", args, err)
		}
		return out.String()
	}

	out := cli(append(append([]string{"tenant", "create"}, flags...), "Acme Corp")...)
	tenant := regexp.MustCompile(`tenant:\s+(\S+)`).FindStringSubmatch(out)
	first := regexp.MustCompile(`api key:\s+(hk_\S+)`).FindStringSubmatch(out)
	if tenant == nil || first == nil {
		t.Fatalf("tenant create printed %q", out)
	}
	// Flags go before the verb, between it and its arguments, or after them.
	if out := cli(append(append([]string{"tenant"}, flags...), "list")...); !strings.Contains(out, tenant[1]) || !strings.Contains(out, "Acme Corp") {
		t.Fatalf("tenant list lacks the tenant: %q", out)
	}

	out = cli(append(append([]string{"key", "create"}, flags...), tenant[1])...)
	second := regexp.MustCompile(`prefix:\s+(hk_\S+)\napi key:\s+(hk_\S+)`).FindStringSubmatch(out)
	if second == nil {
		t.Fatalf("key create printed %q", out)
	}
	list := cli(append([]string{"key", "list", tenant[1]}, flags...)...)
	if !strings.Contains(list, second[1]) || !strings.Contains(list, first[1][:11]) {
		t.Fatalf("key list lacks a key: %q", list)
	}
	if strings.Contains(list, second[2]) {
		t.Fatal("key list shows a key, not only its prefix")
	}
	if got := status(t, addr, second[2]); got != http.StatusOK {
		t.Fatalf("the new key answers %d", got)
	}
	cli(append(append([]string{"key", "revoke"}, flags...), tenant[1], second[1])...)
	if got := status(t, addr, second[2]); got != http.StatusUnauthorized {
		t.Fatalf("the revoked key answers %d", got)
	}
	if list := cli(append(append([]string{"key", "list"}, flags...), tenant[1])...); strings.Contains(list, second[1]) {
		t.Fatalf("key list still shows the revoked key: %q", list)
	}

	// Mistakes answer the API's error, never a usage or a panic.
	for _, args := range [][]string{
		append(append([]string{"key", "list"}, flags...), "ten_doesnotexist"),
		append(append([]string{"key", "revoke"}, flags...), tenant[1], second[1]),
	} {
		err := run(ctx, args, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || errors.Is(err, errUsage) || !strings.Contains(err.Error(), "404") {
			t.Errorf("herald %v: %v", args, err)
		}
	}
	for _, args := range [][]string{{"key"}, {"key", "list"}, {"key", "revoke", "x"}, {"tenant", "list", "extra"}, {"tenant", "create"}} {
		if err := run(ctx, args, &bytes.Buffer{}, &bytes.Buffer{}); !errors.Is(err, errUsage) {
			t.Errorf("herald %v: %v, want the usage", args, err)
		}
	}
}

// status is the answer of GET /v1/api-keys to key.
func status(t *testing.T, addr, key string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/v1/api-keys", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// waitReady returns once addr answers /readyz with 200.
func waitReady(t *testing.T, addr string) {
	t.Helper()
	testwait.For(t, "serve ready", func() bool {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// TestHealthcheck: herald healthcheck succeeds against a live server, on
// its address or on the wildcard address it listens on, and fails where
// nothing answers.
func TestHealthcheck(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := testnet.FreeAddr(t)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--data", t.TempDir(), "--http", addr}, &bytes.Buffer{}, &bytes.Buffer{})
	}()
	defer func() { cancel(); <-done }()
	waitReady(t, addr)
	_, port, _ := strings.Cut(addr, ":")
	for _, a := range []string{addr, "0.0.0.0:" + port} {
		var out bytes.Buffer
		if err := run(ctx, []string{"healthcheck", "--http", a}, &out, &out); err != nil || strings.TrimSpace(out.String()) != "ok" {
			t.Errorf("healthcheck %s: %v %q", a, err, out.String())
		}
	}
	if err := run(ctx, []string{"healthcheck", "--http", testnet.FreeAddr(t)}, &bytes.Buffer{}, &bytes.Buffer{}); err == nil || errors.Is(err, errUsage) {
		t.Errorf("healthcheck where nothing listens: %v", err)
	}
}
