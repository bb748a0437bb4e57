package main

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testsmtp"
	"github.com/heraldhq/herald/internal/testwait"
)

// filesHolding returns the files under dir whose bytes contain marker.
func filesHolding(t *testing.T, dir, marker string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			if os.IsNotExist(err) {
				return nil // swapped meanwhile
			}
			return err
		}
		if bytes.Contains(data, []byte(marker)) {
			found = append(found, strings.TrimPrefix(path, dir))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// DELETE /v1/subscribers/{id}?erase=true leaves the subscriber's contacts,
// attributes and trigger payloads readable neither through the API nor
// `herald audit` nor in the data dir's files; its runs stay (CONTRACT
// §18).
func TestEraseSubscriber(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end: a service, a Bridge and an SMTP sink")
	}
	for _, k := range []string{"HERALD_NATS_URL", "HERALD_HTTP_ADDR", "HERALD_DATA_DIR", "HERALD_ADMIN_TOKEN", "HERALD_MASTER_KEY"} {
		t.Setenv(k, "")
	}
	const (
		contactMark = "zq7contact"
		attrMark    = "zq7attribute"
		payloadMark = "zq7payload"
		keeperMark  = "zq7keeper"
	)
	dir := t.TempDir()
	h := testherald.Start(t, testherald.Options{DataDir: dir})
	must := func(method, path, key string, body any, want int) testherald.Response {
		t.Helper()
		r := h.Do(method, path, key, body)
		if r.Status != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, r.Status, r.Body, want)
		}
		return r
	}
	_, key := h.Tenant("Acme")
	mail := testsmtp.StartCatcher(t, 0)
	must("POST", "/v1/channels", key, map[string]any{"channelKey": "email-smtp", "config": map[string]any{
		"host": mail.Host, "port": mail.Port, "fromEmail": "noreply@acme.test"}}, 201)
	h.Bridge(key, bridge.NewRegistry().MustRegister(bridge.MustWorkflow("welcome", func(ctx *bridge.Context, _ any) error {
		_, err := bridge.Send(ctx, "mail", "email", func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Subject: "Welcome", Body: "hello"}, nil
		})
		return err
	})))

	must("PUT", "/v1/subscribers/erasee", key, map[string]any{
		"contacts": map[string]any{"email": []string{contactMark + "@acme.test"}}, "attributes": map[string]any{"note": attrMark}}, 201)
	must("PUT", "/v1/subscribers/erasee", key, map[string]any{"locale": "fr"}, 200)
	must("PUT", "/v1/subscribers/erasee/subscriptions/news", key, nil, 201)
	must("PUT", "/v1/subscribers/keeper", key, map[string]any{
		"contacts": map[string]any{"email": []string{keeperMark + "@acme.test"}}}, 201)
	var res struct{ Runs []struct{ RunID string } }
	must("POST", "/v1/events", key, map[string]any{"workflowId": "welcome", "to": map[string]any{"subscriberId": "erasee"},
		"payload": map[string]any{"note": payloadMark}}, 202).JSON(t, &res)
	runID := res.Runs[0].RunID
	h.WaitRun(key, runID, "completed")
	if r := must("GET", "/v1/deliveries?runId="+runID, key, nil, 200); !bytes.Contains(r.Body, []byte(contactMark)) {
		t.Fatalf("the delivery does not show the address: %s", r.Body)
	}
	// Its address is suppressed (and an sms number of it was, once).
	must("PUT", "/v1/suppressions/email/"+contactMark+"@acme.test", key, map[string]any{"reason": "complained"}, 201)
	must("PUT", "/v1/subscribers/erasee", key, map[string]any{"contacts": map[string]any{
		"email": []string{contactMark + "@acme.test"}, "sms": []string{"+15550001777"}}}, 200)
	must("PUT", "/v1/suppressions/sms/+15550001777", key, nil, 201)
	must("DELETE", "/v1/suppressions/sms/+15550001777", key, nil, 204)
	// Before: every marker is in the files (the check below can see them).
	for _, m := range []string{contactMark, attrMark, payloadMark} {
		testwait.For(t, m+" in the data dir's files", func() bool { return len(filesHolding(t, dir, m)) != 0 })
	}

	must("DELETE", "/v1/subscribers/erasee?erase=maybe", key, nil, 422)
	must("DELETE", "/v1/subscribers/erasee?erase=true", key, nil, 204)

	// The API.
	must("GET", "/v1/subscribers/erasee", key, nil, 404)
	if r := must("GET", "/v1/deliveries?runId="+runID, key, nil, 200); bytes.Contains(r.Body, []byte(contactMark)) {
		t.Fatalf("the delivery still shows the address: %s", r.Body)
	}
	if r := must("GET", "/v1/runs/"+runID, key, nil, 200); !bytes.Contains(r.Body, []byte(`"status":"completed"`)) {
		t.Fatalf("the erased subscriber's run: %s", r.Body)
	}
	if r := must("GET", "/v1/topics/news/subscribers", key, nil, 200); bytes.Contains(r.Body, []byte("erasee")) {
		t.Fatalf("the erased subscriber is still subscribed: %s", r.Body)
	}
	must("GET", "/v1/subscribers/keeper", key, nil, 200)
	must("DELETE", "/v1/subscribers/erasee?erase=true", key, nil, 404)
	// The suppression stays in force without its address.
	wantSuppressions := `[{"kind":"email","address":null,"reason":"complained","createdAt":`
	if r := must("GET", "/v1/suppressions", key, nil, 200); !bytes.Contains(r.Body, []byte(wantSuppressions)) ||
		bytes.Count(r.Body, []byte(`"kind"`)) != 1 {
		t.Fatalf("suppressions after the erasure: %s", r.Body)
	}
	must("PUT", "/v1/subscribers/again", key, map[string]any{
		"contacts": map[string]any{"email": []string{strings.ToUpper(contactMark) + "@acme.test"}}}, 201)
	must("POST", "/v1/events", key, map[string]any{"workflowId": "welcome", "to": map[string]any{"subscriberId": "again"}}, 202).JSON(t, &res)
	h.WaitRun(key, res.Runs[0].RunID, "completed")
	if r := must("GET", "/v1/deliveries?runId="+res.Runs[0].RunID, key, nil, 200); !bytes.Contains(r.Body, []byte(`"reason":"suppressed"`)) {
		t.Fatalf("a send to the erased subscriber's suppressed address: %s", r.Body)
	}
	must("DELETE", "/v1/subscribers/again?erase=true", key, nil, 204)

	// herald audit, through the server: the erasure, not the data.
	raw, lines := runAudit(t, "--data", dir, "--http", h.Addr())
	for _, m := range []string{contactMark, strings.ToUpper(contactMark), attrMark, payloadMark, "15550001777"} {
		if bytes.Contains(raw, []byte(m)) {
			t.Fatalf("herald audit still prints %s", m)
		}
	}
	if !bytes.Contains(raw, []byte(keeperMark)) {
		t.Fatal("herald audit lost another subscriber's data")
	}
	erased := 0
	for _, l := range lines {
		if l.Type == "SubscriberErased" {
			erased++
		}
	}
	if erased != 2 { // erasee, and the later one with its address
		t.Fatalf("herald audit shows %d SubscriberErased events", erased)
	}

	// The data dir's files, while the server runs and after it stopped.
	for _, m := range []string{contactMark, attrMark, payloadMark, "15550001777"} {
		if found := filesHolding(t, dir, m); len(found) > 0 {
			t.Fatalf("%s still in %v after the erasure", m, found)
		}
	}
	h.Stop()
	for _, m := range []string{contactMark, attrMark, payloadMark} {
		if found := filesHolding(t, dir, m); len(found) > 0 {
			t.Fatalf("%s in %v after shutdown", m, found)
		}
	}
	if raw, _ := runAudit(t, "--data", dir); bytes.Contains(raw, []byte(contactMark)) || bytes.Contains(raw, []byte(payloadMark)) {
		t.Fatal("the offline audit prints the erased data")
	}
	if len(filesHolding(t, dir, keeperMark)) == 0 {
		t.Fatal("another subscriber's data is gone from the files")
	}

	// A rebuild from the erased log holds none of it either, and serves.
	if err := run(context.Background(), []string{"rebuild", "--data", dir}, io.Discard, io.Discard); err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	h = testherald.Start(t, testherald.Options{DataDir: dir})
	must("GET", "/v1/subscribers/erasee", key, nil, 404)
	must("GET", "/v1/runs/"+runID, key, nil, 200)
	if r := must("GET", "/v1/suppressions", key, nil, 200); !bytes.Contains(r.Body, []byte(wantSuppressions)) {
		t.Fatalf("suppressions after the rebuild: %s", r.Body)
	}
	// Naming the address again shows it again, as one suppression.
	must("PUT", "/v1/suppressions/email/"+contactMark+"@acme.test", key, map[string]any{"reason": "complained"}, 200)
	if r := must("GET", "/v1/suppressions", key, nil, 200); !bytes.Contains(r.Body, []byte(`"address":"`+contactMark+`@acme.test"`)) ||
		bytes.Count(r.Body, []byte(`"kind"`)) != 1 {
		t.Fatalf("suppressions after naming the address again: %s", r.Body)
	}
}
