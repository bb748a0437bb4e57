package httpapi_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/embedded"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testwait"
)

// TestInboxAPI: messages sent through triggers are listed newest first
// under each filter, with the contract's fields; counts follow every
// change (read implies seen, archived counts in neither); marks answer
// the message; read-all answers how many it changed.
func TestInboxAPI(t *testing.T) {
	f := newInboxFixture(t, testherald.Options{}, "ada", "bob")
	tok := f.token("ada")
	f.expectCounts(tok, 0, 0)
	for _, b := range []string{"one", "two", "three"} {
		f.send("ada", b)
	}
	f.send("bob", "bobs")
	all := f.list(tok, "all")
	if bodies(all) != "three,two,one" {
		t.Fatalf("all = %s", bodies(all))
	}
	m := all[0]
	if m.Subject == nil || *m.Subject != "S three" || m.WorkflowID == nil || *m.WorkflowID != "note" || m.RunID == "" ||
		m.Data["n"] != float64(1) || m.PrimaryAction["label"] != "Open" || m.CreatedAt == "" ||
		m.SeenAt != nil || m.ReadAt != nil || m.ArchivedAt != nil || !strings.HasPrefix(m.MessageID, "msg_") {
		t.Fatalf("message %+v", m)
	}
	f.expectCounts(tok, 3, 3)
	one, two, three := all[2].MessageID, all[1].MessageID, all[0].MessageID

	if got := f.mark(tok, three, "seen"); got.SeenAt == nil || got.ReadAt != nil {
		t.Fatalf("seen: %+v", got)
	}
	f.expectCounts(tok, 3, 2)
	got := f.mark(tok, two, "read")
	if got.ReadAt == nil || got.SeenAt == nil {
		t.Fatalf("read: %+v", got)
	}
	f.expectCounts(tok, 2, 1)
	if again := f.mark(tok, two, "read"); *again.ReadAt != *got.ReadAt {
		t.Fatalf("a repeated read moved readAt: %+v then %+v", got, again)
	}
	if bodies(f.list(tok, "unread")) != "three,one" || bodies(f.list(tok, "read")) != "two" {
		t.Fatalf("unread %s, read %s", bodies(f.list(tok, "unread")), bodies(f.list(tok, "read")))
	}
	if got := f.mark(tok, two, "unread"); got.ReadAt != nil || got.SeenAt == nil {
		t.Fatalf("unread: %+v", got)
	}
	f.expectCounts(tok, 3, 1)
	if got := f.mark(tok, one, "archive"); got.ArchivedAt == nil {
		t.Fatalf("archive: %+v", got)
	}
	f.expectCounts(tok, 2, 0)
	if bodies(f.list(tok, "all")) != "three,two" || bodies(f.list(tok, "archived")) != "one" ||
		bodies(f.list(tok, "unread")) != "three,two" {
		t.Fatalf("after archive: all %s, archived %s", bodies(f.list(tok, "all")), bodies(f.list(tok, "archived")))
	}
	var n struct{ Updated int }
	f.call("POST", "/v1/inbox/read-all", tok, nil, http.StatusOK).JSON(t, &n)
	if n.Updated != 2 {
		t.Fatalf("read-all updated %d, want 2", n.Updated)
	}
	f.expectCounts(tok, 0, 0)
	if bodies(f.list(tok, "read")) != "three,two" || bodies(f.list(tok, "unread")) != "" {
		t.Fatalf("after read-all: read %s", bodies(f.list(tok, "read")))
	}
	f.call("POST", "/v1/inbox/read-all", tok, nil, http.StatusOK).JSON(t, &n)
	if n.Updated != 0 {
		t.Fatalf("a second read-all updated %d", n.Updated)
	}
	if got := f.mark(tok, one, "unarchive"); got.ArchivedAt != nil {
		t.Fatalf("unarchive: %+v", got)
	}
	f.expectCounts(tok, 1, 1) // the archived one was never read nor seen
	if bodies(f.list(tok, "all")) != "three,two,one" {
		t.Fatalf("after unarchive: %s", bodies(f.list(tok, "all")))
	}

	// Pages of one, newest first, with cursors.
	var page struct {
		Data       []inboxMessage
		NextCursor *string
	}
	var paged []inboxMessage
	path := "/v1/inbox/messages?limit=1"
	for i := 0; ; i++ {
		f.call("GET", path, tok, nil, http.StatusOK).JSON(t, &page)
		paged = append(paged, page.Data...)
		if page.NextCursor == nil || i > 5 {
			break
		}
		path = "/v1/inbox/messages?limit=1&cursor=" + *page.NextCursor
	}
	if bodies(paged) != "three,two,one" {
		t.Fatalf("paged %s", bodies(paged))
	}

	// The back-end's view of a subscriber's inbox, with the tenant key.
	var l struct{ Data []inboxMessage }
	f.call("GET", "/v1/subscribers/bob/inbox", f.key, nil, http.StatusOK).JSON(t, &l)
	if bodies(l.Data) != "bobs" {
		t.Fatalf("bob's inbox %s", bodies(l.Data))
	}
	f.call("GET", "/v1/subscribers/nobody/inbox", f.key, nil, http.StatusNotFound)

	// Bad input.
	expectCode(t, f.h.Do("GET", "/v1/inbox/messages?filter=new", tok, nil), http.StatusUnprocessableEntity, "validation_failed")
	expectCode(t, f.h.Do("GET", "/v1/inbox/messages?cursor=zz", tok, nil), http.StatusUnprocessableEntity, "validation_failed")
	expectCode(t, f.h.Do("POST", "/v1/inbox/messages/"+strings.Repeat("m", 5000)+"/read", tok, nil), http.StatusNotFound, "message_not_found")
	expectCode(t, f.h.Do("POST", "/v1/inbox/messages/"+one+"/read", tok, map[string]any{"x": 1}), http.StatusUnprocessableEntity, "validation_failed")
	expectCode(t, f.h.Do("POST", "/v1/inbox/messages/"+one+"/delete", tok, nil), http.StatusNotFound, "not_found")
}

// TestInboxIsolation: a subscriber's token reaches its own inbox only:
// another subscriber's message is 404 and changes nothing.
func TestInboxIsolation(t *testing.T) {
	f := newInboxFixture(t, testherald.Options{}, "ada", "bob")
	f.send("bob", "secret")
	bobs := f.list(f.token("bob"), "all")
	ada := f.token("ada")
	for _, action := range []string{"read", "unread", "seen", "archive", "unarchive"} {
		expectCode(t, f.h.Do("POST", "/v1/inbox/messages/"+bobs[0].MessageID+"/"+action, ada, nil),
			http.StatusNotFound, "message_not_found")
	}
	if len(f.list(ada, "all")) != 0 {
		t.Fatal("ada sees bob's message")
	}
	f.expectCounts(f.token("bob"), 1, 1)
	// Another tenant's key cannot mint for this tenant's subscriber.
	_, other := f.h.Tenant("Other")
	expectCode(t, f.h.Do("POST", "/v1/subscribers/bob/inbox-tokens", other, nil), http.StatusNotFound, "subscriber_not_found")
}

// TestInboxTokens: the subscriber routes take only an inbox token: none,
// a tenant API key, a tampered, an expired token, or one of an erased
// subscriber are 401 with the contract's body; minting needs the tenant
// key and an existing subscriber.
func TestInboxTokens(t *testing.T) {
	f := newInboxFixture(t, testherald.Options{InboxTokenTTL: 800 * time.Millisecond}, "ada")
	var tok struct{ Token, ExpiresAt string }
	f.call("POST", "/v1/subscribers/ada/inbox-tokens", f.key, nil, http.StatusCreated).JSON(t, &tok)
	if !strings.HasPrefix(tok.Token, "hit_") || strings.Contains(tok.Token, "ada") {
		t.Fatalf("token %q", tok.Token)
	}
	exp, err := time.Parse(time.RFC3339, tok.ExpiresAt)
	if err != nil || exp.Before(time.Now()) || exp.After(time.Now().Add(2*time.Second)) {
		t.Fatalf("expiresAt %q: %v", tok.ExpiresAt, err)
	}
	f.call("GET", "/v1/inbox/counts", tok.Token, nil, http.StatusOK)
	f.call("POST", "/v1/subscribers/nobody/inbox-tokens", f.key, nil, http.StatusNotFound)
	f.call("POST", "/v1/subscribers/ada/inbox-tokens", "", nil, http.StatusUnauthorized)
	f.call("POST", "/v1/subscribers/ada/inbox-tokens", tok.Token, nil, http.StatusUnauthorized)

	tampered := []byte(tok.Token)
	tampered[len(tampered)-3] ^= 1
	for name, bad := range map[string]string{
		"none": "", "tenant key": f.key, "tampered": string(tampered), "garbage": "hit_x.y.z",
		"huge": "hit_" + strings.Repeat("a", 10000),
	} {
		for _, path := range []string{"/v1/inbox/counts", "/v1/inbox/messages", "/v1/inbox/stream"} {
			r := f.h.Do("GET", path, bad, nil)
			expectCode(t, r, http.StatusUnauthorized, "unauthorized")
			if r.Header.Get("WWW-Authenticate") != "Bearer" {
				t.Errorf("%s on %s: no WWW-Authenticate", name, path)
			}
		}
		expectCode(t, f.h.Do("POST", "/v1/inbox/read-all", bad, nil), http.StatusUnauthorized, "unauthorized")
	}
	time.Sleep(time.Until(exp) + 50*time.Millisecond)
	expectCode(t, f.h.Do("GET", "/v1/inbox/counts", tok.Token, nil), http.StatusUnauthorized, "unauthorized")
	expectCode(t, f.h.Do("GET", "/v1/inbox/stream?token="+tok.Token, "", nil), http.StatusUnauthorized, "unauthorized")

	// An erased subscriber's token is refused, and its inbox is gone.
	f.send("ada", "private")
	fresh := f.token("ada")
	f.call("DELETE", "/v1/subscribers/ada?erase=true", f.key, nil, http.StatusNoContent)
	expectCode(t, f.h.Do("GET", "/v1/inbox/counts", fresh, nil), http.StatusUnauthorized, "unauthorized")
	f.call("PUT", "/v1/subscribers/ada", f.key, map[string]any{}, http.StatusCreated)
	if msgs := f.list(f.token("ada"), "all"); len(msgs) != 0 {
		t.Fatalf("the erased inbox is still listed: %+v", msgs)
	}
}

// TestInboxTokenRevocation: a subscriber deleted and created again under
// the same id does not take back its old tokens; POST
// /v1/subscribers/{id}/inbox-tokens/revoke refuses every token minted
// before it (and ends their streams at the next heartbeat) and accepts
// those minted after; it needs the tenant key and an existing subscriber.
func TestInboxTokenRevocation(t *testing.T) {
	f := newInboxFixture(t, testherald.Options{InboxHeartbeat: 50 * time.Millisecond}, "ada", "bob")
	old := f.token("ada")
	f.call("DELETE", "/v1/subscribers/ada", f.key, nil, http.StatusNoContent)
	f.call("PUT", "/v1/subscribers/ada", f.key, map[string]any{}, http.StatusCreated)
	expectCode(t, f.h.Do("GET", "/v1/inbox/counts", old, nil), http.StatusUnauthorized, "unauthorized")
	expectCode(t, f.h.Do("GET", "/v1/inbox/stream?token="+old, "", nil), http.StatusUnauthorized, "unauthorized")

	first, second, bobs := f.token("ada"), f.token("ada"), f.token("bob")
	f.call("PUT", "/v1/subscribers/ada", f.key, map[string]any{"locale": "fr"}, http.StatusOK) // an update revokes nothing
	f.call("GET", "/v1/inbox/counts", first, nil, http.StatusOK)
	stream := f.openStream(first, "")
	if stream.Status != http.StatusOK {
		t.Fatalf("stream: %d", stream.Status)
	}
	stream.expectCounts(t, 0, 0)

	f.call("POST", "/v1/subscribers/ada/inbox-tokens/revoke", f.key, nil, http.StatusNoContent)
	for _, tok := range []string{first, second} {
		expectCode(t, f.h.Do("GET", "/v1/inbox/counts", tok, nil), http.StatusUnauthorized, "unauthorized")
		expectCode(t, f.h.Do("POST", "/v1/inbox/read-all", tok, nil), http.StatusUnauthorized, "unauthorized")
	}
	// The open stream ends at a heartbeat (the deadline only guards
	// against a hang).
	deadline := time.After(10 * time.Second)
	for ended := false; !ended; {
		select {
		case _, ok := <-stream.Events:
			ended = !ok
		case <-deadline:
			t.Fatal("a stream of a revoked token stayed open")
		}
	}
	f.call("GET", "/v1/inbox/counts", bobs, nil, http.StatusOK) // another subscriber's are untouched
	after := f.token("ada")
	f.call("GET", "/v1/inbox/counts", after, nil, http.StatusOK)
	f.call("POST", "/v1/subscribers/ada/inbox-tokens/revoke", f.key, map[string]any{}, http.StatusNoContent)
	expectCode(t, f.h.Do("GET", "/v1/inbox/counts", after, nil), http.StatusUnauthorized, "unauthorized")

	expectCode(t, f.h.Do("POST", "/v1/subscribers/nobody/inbox-tokens/revoke", f.key, nil), http.StatusNotFound, "subscriber_not_found")
	expectCode(t, f.h.Do("POST", "/v1/subscribers/ada/inbox-tokens/revoke", f.token("ada"), nil), http.StatusUnauthorized, "unauthorized")
	expectCode(t, f.h.Do("POST", "/v1/subscribers/ada/inbox-tokens/revoke", f.key, map[string]any{"x": 1}), http.StatusUnprocessableEntity, "validation_failed")
	expectCode(t, f.h.Do("POST", "/v1/subscribers/"+strings.Repeat("x", 300)+"/inbox-tokens/revoke", f.key, nil), http.StatusUnprocessableEntity, "validation_failed")
}

// TestInboxTokenRevocationHoldsOnEveryProcess: a revocation made through
// one process is held by another process of the same log once its
// projections applied it (the deadline only guards against a hang).
func TestInboxTokenRevocationHoldsOnEveryProcess(t *testing.T) {
	srv, err := embedded.Start(embedded.Config{StoreDir: t.TempDir(), Listen: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	env := map[string]string{"HERALD_NATS_URL": srv.ClientURL(),
		"HERALD_MASTER_KEY": base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))}
	a := testherald.Start(t, testherald.Options{Env: env})
	b := testherald.Start(t, testherald.Options{Env: env})
	_, key := a.Tenant("Acme")
	if r := a.Do("PUT", "/v1/subscribers/ada", key, map[string]any{}); r.Status != http.StatusCreated {
		t.Fatalf("subscriber: %d %s", r.Status, r.Body)
	}
	var tok struct{ Token string }
	a.Do("POST", "/v1/subscribers/ada/inbox-tokens", key, nil).JSON(t, &tok)
	until := func(want int) {
		t.Helper()
		testwait.Until(t, fmt.Sprintf("the other process to answer %d", want), func() error {
			if r := b.Do("GET", "/v1/inbox/counts", tok.Token, nil); r.Status != want {
				return fmt.Errorf("%d %s", r.Status, r.Body)
			}
			return nil
		})
	}
	until(http.StatusOK)
	if r := a.Do("POST", "/v1/subscribers/ada/inbox-tokens/revoke", key, nil); r.Status != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", r.Status, r.Body)
	}
	until(http.StatusUnauthorized)
}

// expectCode fails unless r answered status with the error code.
func expectCode(t *testing.T, r testherald.Response, status int, code string) {
	t.Helper()
	if r.Status != status || r.ErrorCode() != code {
		t.Fatalf("answer %d %s, want %d %s", r.Status, r.Body, status, code)
	}
}

// TestInboxRateLimit: the inbox calls of a tenant's subscribers count
// against the tenant's rate limit.
func TestInboxRateLimit(t *testing.T) {
	f := newInboxFixture(t, testherald.Options{Env: map[string]string{"HERALD_RATE_LIMIT": "2"}}, "ada")
	time.Sleep(2 * time.Second) // the set-up's calls took the burst of 4
	tok := f.token("ada")
	limited := false
	for range 8 {
		if r := f.h.Do("GET", "/v1/inbox/counts", tok, nil); r.Status == http.StatusTooManyRequests {
			expectCode(t, r, http.StatusTooManyRequests, "rate_limited")
			limited = true
			break
		}
	}
	if !limited {
		t.Fatal("8 inbox calls in a row at 2 requests a second (burst 4) were not limited")
	}
}
