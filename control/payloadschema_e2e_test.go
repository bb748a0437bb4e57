package control_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testsmtp"
)

// A workflow's payloadSchema, declared by a real Bridge and recorded by a
// sync, is enforced at POST /v1/events: a payload it refuses answers 422
// invalid_payload naming each bad field and starts nothing (no event on
// the log, no run, no mail); a payload it accepts starts the run, which
// sends its email.
func TestPayloadSchemaEnforcedAtTriggerE2E(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","required":["orderId","items"],
		"properties":{
			"orderId":{"type":"string"},
			"items":{"type":"array","minItems":1,"items":{"$ref":"#/$defs/item"}}},
		"$defs":{"item":{"type":"object","required":["sku"],"properties":{"sku":{"type":"string"},"qty":{"type":"integer","minimum":1}}}}}`)
	wf := bridge.MustWorkflow("order_shipped", func(ctx *bridge.Context, _ any) error {
		_, err := bridge.Send(ctx, "email", "email", func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Subject: "Shipped", Body: "on its way"}, nil
		})
		return err
	}, bridge.WithPayloadSchema(schema))
	m := testsmtp.Start(t, testsmtp.Options{})
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("Acme")
	h.MailChannel(key, m.Port)
	if r := h.Do("PUT", "/v1/subscribers/u1", key, map[string]any{"contacts": map[string]any{"email": []string{"u1@example.com"}}}); r.Status >= 300 {
		t.Fatalf("subscriber: %d %s", r.Status, r.Body)
	}
	h.Bridge(key, bridge.NewRegistry().MustRegister(wf))
	if r := h.Do("POST", "/v1/sync", key, nil); r.Status != http.StatusOK {
		t.Fatalf("sync: %d %s", r.Status, r.Body)
	}
	// The workflow's schema is shown as declared.
	var listed struct {
		Workflows []struct{ PayloadSchema map[string]any }
	}
	h.Do("GET", "/v1/workflows", key, nil).JSON(t, &listed)
	if len(listed.Workflows) != 1 || listed.Workflows[0].PayloadSchema["$defs"] == nil {
		t.Fatalf("GET /v1/workflows does not show the payload schema: %+v", listed)
	}

	ctx := context.Background()
	lastSeq := func() uint64 {
		t.Helper()
		seq, err := h.Log().LastSeq(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return seq
	}
	before := lastSeq()
	r := h.Do("POST", "/v1/events", key, map[string]any{"workflowId": "order_shipped", "to": map[string]any{"subscriberId": "u1"},
		"transactionId": "order-1",
		"payload":       map[string]any{"items": []any{map[string]any{"sku": "a", "qty": 1}, map[string]any{"qty": 0}}, "note": 1}})
	if r.Status != http.StatusUnprocessableEntity || r.ErrorCode() != "invalid_payload" {
		t.Fatalf("bad payload: %d %s", r.Status, r.Body)
	}
	var body struct {
		Error struct {
			Details []struct{ Field, Problem string }
		}
	}
	r.JSON(t, &body)
	var fields []string
	for _, d := range body.Error.Details {
		fields = append(fields, d.Field+" "+d.Problem)
	}
	want := []string{"payload.items[1].qty must be greater than or equal to 1", "payload.items[1].sku is required", "payload.orderId is required"}
	if !slices.Equal(fields, want) {
		t.Fatalf("details %q, want %q (%s)", fields, want, r.Body)
	}
	if after := lastSeq(); after != before {
		t.Fatalf("a refused trigger appended %d events", after-before)
	}
	if r := h.Do("GET", "/v1/runs?transactionId=order-1", key, nil); r.Status != http.StatusOK || !jsonHasEmptyData(t, r.Body) {
		t.Fatalf("runs of the refused transaction: %d %s", r.Status, r.Body)
	}

	r = h.Do("POST", "/v1/events", key, map[string]any{"workflowId": "order_shipped", "to": map[string]any{"subscriberId": "u1"},
		"transactionId": "order-1",
		"payload":       map[string]any{"orderId": "o1", "items": []any{map[string]any{"sku": "a", "qty": 2}}}})
	if r.Status != http.StatusAccepted {
		t.Fatalf("good payload: %d %s", r.Status, r.Body)
	}
	var res struct{ Runs []struct{ RunID string } }
	r.JSON(t, &res)
	if run := h.WaitRun(key, res.Runs[0].RunID, "completed", "failed"); run["status"] != "completed" {
		t.Fatalf("run: %v", run)
	}
	if n := m.Accepted(); n != 1 {
		t.Fatalf("%d messages, want 1", n)
	}

	// A workflow without a schema takes any object.
	if r := h.Do("POST", "/v1/events", key, map[string]any{"workflowId": "unsynced", "to": map[string]any{"subscriberId": "u1"},
		"payload": map[string]any{"x": 1}}); r.Status != http.StatusAccepted {
		t.Fatalf("workflow without a schema: %d %s", r.Status, r.Body)
	}
}

// A Bridge declaring a payloadSchema herald cannot enforce fails the sync
// with 422 invalid_payload_schema naming the workflow's schema, and the
// last good sync (with its schema) stays in force: triggers go on being
// checked against it.
func TestUnenforceableSchemaRefusesTheSyncE2E(t *testing.T) {
	noop := func(*bridge.Context, any) error { return nil }
	good := bridge.MustWorkflow("w", noop, bridge.WithPayloadSchema(json.RawMessage(`{"required":["a"]}`)))
	h := testherald.Start(t, testherald.Options{DeliverURL: testherald.NewStandInDelivery(t).URL})
	_, key := h.Tenant("Acme")
	// A Bridge whose workflows change between syncs.
	var serving atomic.Pointer[http.Handler]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*serving.Load()).ServeHTTP(w, r) }))
	defer srv.Close()
	bind, err := h.API(key).BindBridge(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	serve := func(reg *bridge.Registry) {
		hd := bridge.Serve(reg, bridge.Options{SigningKey: bind.SigningSecret})
		serving.Store(&hd)
	}
	serve(bridge.NewRegistry().MustRegister(good))
	if r := h.Do("POST", "/v1/sync", key, nil); r.Status != http.StatusOK {
		t.Fatalf("sync: %d %s", r.Status, r.Body)
	}
	bad := bridge.MustWorkflow("w", noop, bridge.WithPayloadSchema(json.RawMessage(`{"$ref":"http://169.254.169.254/schema.json"}`)))
	serve(bridge.NewRegistry().MustRegister(bad))
	r := h.Do("POST", "/v1/sync", key, nil)
	if r.Status != http.StatusUnprocessableEntity || r.ErrorCode() != "invalid_payload_schema" {
		t.Fatalf("sync of an unenforceable schema: %d %s", r.Status, r.Body)
	}
	var body struct {
		Error struct {
			Details []struct{ Field, Problem string }
		}
	}
	r.JSON(t, &body)
	if len(body.Error.Details) != 1 || body.Error.Details[0].Field != "workflows[0].payloadSchema" {
		t.Fatalf("details: %s", r.Body)
	}
	if r := h.Do("POST", "/v1/events", key, map[string]any{"workflowId": "w", "to": map[string]any{"subscriberId": "u1"}}); r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("trigger against the last good schema: %d %s", r.Status, r.Body)
	}
	first := h.Do("POST", "/v1/events", key, map[string]any{"workflowId": "w", "to": map[string]any{"subscriberId": "u1"},
		"transactionId": "t1", "payload": map[string]any{"a": 1}})
	if first.Status != http.StatusAccepted {
		t.Fatalf("good trigger: %d %s", first.Status, first.Body)
	}

	// A new version of the schema applies to new triggers; a repeat of a
	// trigger accepted under the last one still answers its runs.
	serve(bridge.NewRegistry().MustRegister(bridge.MustWorkflow("w", noop, bridge.WithPayloadSchema(json.RawMessage(`{"required":["b"]}`)))))
	if r := h.Do("POST", "/v1/sync", key, nil); r.Status != http.StatusOK {
		t.Fatalf("sync: %d %s", r.Status, r.Body)
	}
	if r := h.Do("POST", "/v1/events", key, map[string]any{"workflowId": "w", "to": map[string]any{"subscriberId": "u1"},
		"transactionId": "t2", "payload": map[string]any{"a": 1}}); r.Status != http.StatusUnprocessableEntity || r.ErrorCode() != "invalid_payload" {
		t.Fatalf("a trigger against the new schema: %d %s", r.Status, r.Body)
	}
	repeat := h.Do("POST", "/v1/events", key, map[string]any{"workflowId": "w", "to": map[string]any{"subscriberId": "u1"},
		"transactionId": "t1", "payload": map[string]any{"a": 1}})
	if repeat.Status != http.StatusAccepted || string(repeat.Body) != string(first.Body) {
		t.Fatalf("repeat of a trigger accepted before the schema changed: %d %s, first %s", repeat.Status, repeat.Body, first.Body)
	}
}

func jsonHasEmptyData(t *testing.T, body []byte) bool {
	t.Helper()
	var page struct{ Data []json.RawMessage }
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatal(err)
	}
	return len(page.Data) == 0
}
