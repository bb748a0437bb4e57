package httpapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/embedded"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testwait"
)

// openTail opens GET /v1/tail with key and waits for its first line, the
// comment it writes once it listens.
func openTail(t *testing.T, h *testherald.Herald, key string) *sseClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", h.URL()+"/v1/tail", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	c := dialSSE(t, req, cancel)
	if c.Status != http.StatusOK {
		t.Fatalf("tail: %d", c.Status)
	}
	if ev, ok := <-c.Events; !ok || !ev.Comment {
		t.Fatalf("the tail's first line: %+v %v", ev, ok)
	}
	return c
}

// tailUntil reads the tail until an event whose data holds want.
func tailUntil(t *testing.T, c *sseClient, what, want string) {
	t.Helper()
	guard := time.After(testwait.HangGuard)
	for {
		select {
		case ev, ok := <-c.Events:
			if !ok {
				t.Fatalf("%s: the tail ended", what)
			}
			if strings.Contains(ev.Data, want) {
				return
			}
		case <-guard:
			t.Fatalf("%s: not streamed within %v (a hang)", what, testwait.HangGuard)
		}
	}
}

// tailEnds waits until the stream ends, failing on an event holding unwanted
// (what must no longer reach it) before, or after a hang.
func tailEnds(t *testing.T, c *sseClient, what, unwanted string) {
	t.Helper()
	guard := time.After(testwait.HangGuard)
	for {
		select {
		case ev, ok := <-c.Events:
			if !ok {
				return
			}
			if unwanted != "" && strings.Contains(ev.Data, unwanted) {
				t.Fatalf("%s: still streamed %s", what, ev.Data)
			}
		case <-guard:
			t.Fatalf("%s: the live tail of a revoked key stayed open %v (a hang)", what, testwait.HangGuard)
		}
	}
}

// TestRevokingAKeyClosesItsTails: a live tail (GET /v1/tail) opened with
// an API key ends when that key is revoked, on the process that revoked
// it and on another process of the same log, before it streams anything
// written after the revocation; a tail of another key of the tenant goes
// on, and the revoked key opens no new tail.
func TestRevokingAKeyClosesItsTails(t *testing.T) {
	srv, err := embedded.Start(embedded.Config{StoreDir: t.TempDir(), Listen: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	env := map[string]string{"HERALD_NATS_URL": srv.ClientURL(),
		"HERALD_MASTER_KEY": base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))}
	a := testherald.Start(t, testherald.Options{Env: env})
	b := testherald.Start(t, testherald.Options{Env: env})
	_, keep := a.Tenant("Acme")
	var minted struct{ APIKey, Prefix string }
	if r := a.Do("POST", "/v1/api-keys", keep, map[string]any{}); r.Status != http.StatusCreated {
		t.Fatalf("api key: %d %s", r.Status, r.Body)
	} else {
		r.JSON(t, &minted)
	}

	here := openTail(t, a, minted.APIKey)
	there := openTail(t, b, minted.APIKey)
	other := openTail(t, b, keep)
	if r := a.Do("PUT", "/v1/subscribers/ada", keep, map[string]any{"contacts": map[string]any{"email": []string{"ada@example.com"}}}); r.Status != http.StatusCreated {
		t.Fatalf("subscriber: %d %s", r.Status, r.Body)
	}
	for _, c := range []*sseClient{here, there, other} {
		tailUntil(t, c, "ada's creation", "ada@example.com")
	}

	if r := a.Do("DELETE", "/v1/api-keys/"+minted.Prefix, keep, nil); r.Status != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", r.Status, r.Body)
	}
	if r := a.Do("PUT", "/v1/subscribers/bob", keep, map[string]any{"contacts": map[string]any{"email": []string{"bob@example.com"}}}); r.Status != http.StatusCreated {
		t.Fatalf("subscriber: %d %s", r.Status, r.Body)
	}
	tailEnds(t, here, "the tail on the revoking process", "bob@example.com")
	tailEnds(t, there, "the tail on another process", "bob@example.com")
	tailUntil(t, other, "bob's creation on the other key's tail", "bob@example.com")

	for _, h := range []*testherald.Herald{a, b} {
		expectCode(t, h.Do("GET", "/v1/tail", minted.APIKey, nil), http.StatusUnauthorized, "unauthorized")
	}
}
