package bridge_test

import (
	"testing"

	"github.com/heraldhq/herald/bridge"
)

// TestDiscoverPreferences: WithCritical and WithDefaultChannels show in
// the discover answer; a workflow with neither keeps today's shape.
func TestDiscoverPreferences(t *testing.T) {
	h := serve(
		bridge.MustWorkflow("plain", noop),
		bridge.MustWorkflow("reset", noop, bridge.WithCritical()),
		bridge.MustWorkflow("digest", noop, bridge.WithDefaultChannels(map[bridge.Channel]bool{bridge.Email: false, bridge.InApp: true})),
	)
	want := `{"workflows":[` +
		`{"workflowId":"plain","schedule":null,"payloadSchema":null},` +
		`{"workflowId":"reset","schedule":null,"payloadSchema":null,"critical":true},` +
		`{"workflowId":"digest","schedule":null,"payloadSchema":null,"preferences":{"channels":{"email":false,"in_app":true}}}]}`
	status, body := post(h, `{"action":"discover"}`, testKey, testNow)
	if status != 200 || body != want {
		t.Fatalf("got %d %s\nwant 200 %s", status, body, want)
	}
}

// TestContextLinks: the execute request's links reach the workflow.
func TestContextLinks(t *testing.T) {
	var got *bridge.Links
	h := serve(bridge.MustWorkflow("wf", func(ctx *bridge.Context, _ struct{}) error {
		got = ctx.Links
		return nil
	}))
	status, body := post(h, `{"action":"execute","workflowId":"wf","runId":"run_1","payload":{},"subscriber":null,"steps":[],`+
		`"links":{"unsubscribe":null,"preferences":"https://h.example/p/tok"}}`, testKey, testNow)
	if status != 200 {
		t.Fatalf("execute: %d %s", status, body)
	}
	if got == nil || got.Unsubscribe != nil || got.Preferences != "https://h.example/p/tok" {
		t.Fatalf("links %+v", got)
	}
}
