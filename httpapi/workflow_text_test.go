package httpapi_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/heraldhq/herald/bridge"
)

// TestWorkflowDisplayText: the name and description a workflow declares
// at discover come back from the sync and GET /v1/workflows (null when
// not declared), and the preference page shows them, escaped, in place of
// the id; a workflow without a name shows its id.
func TestWorkflowDisplayText(t *testing.T) {
	h := startPublic(t)
	_, key := h.Tenant("Acme")
	var mu sync.Mutex
	var links *bridge.Links
	h.Bridge(key, bridge.NewRegistry().MustRegister(
		bridge.MustWorkflow("weekly_digest", func(ctx *bridge.Context, _ struct{}) error {
			mu.Lock()
			links = ctx.Links
			mu.Unlock()
			return nil
		}, bridge.WithName("Weekly digest"), bridge.WithDescription("What happened in your <b>projects</b> this week.")),
		bridge.MustWorkflow("plain_one", func(*bridge.Context, struct{}) error { return nil }),
	))
	want := map[string][2]any{
		"weekly_digest": {"Weekly digest", "What happened in your <b>projects</b> this week."},
		"plain_one":     {nil, nil},
	}
	for _, r := range []struct {
		method, path string
	}{{"POST", "/v1/sync"}, {"GET", "/v1/workflows"}} {
		resp := h.Do(r.method, r.path, key, nil)
		var body struct{ Workflows []map[string]any }
		resp.JSON(t, &body)
		if resp.Status != http.StatusOK || len(body.Workflows) != 2 {
			t.Fatalf("%s %s: %d %s", r.method, r.path, resp.Status, resp.Body)
		}
		for _, wf := range body.Workflows {
			w := want[wf["workflowId"].(string)]
			if wf["name"] != w[0] || wf["description"] != w[1] {
				t.Errorf("%s %s: %v, want name %v description %v", r.method, r.path, wf, w[0], w[1])
			}
		}
	}

	h.MailChannel(key, 2525)
	if r := h.Do("PUT", "/v1/subscribers/ada", key, `{"contacts":{"email":["ada@example.com"]}}`); r.Status != http.StatusCreated {
		t.Fatalf("subscriber: %d %s", r.Status, r.Body)
	}
	r := h.Do("POST", "/v1/events", key, map[string]any{"workflowId": "weekly_digest", "to": map[string]any{"subscriberId": "ada"}})
	var tr struct{ Runs []struct{ RunID string } }
	r.JSON(t, &tr)
	if len(tr.Runs) != 1 {
		t.Fatalf("trigger: %d %s", r.Status, r.Body)
	}
	if run := h.WaitRun(key, tr.Runs[0].RunID, "completed", "failed"); run["status"] != "completed" {
		t.Fatalf("run %v", run)
	}
	mu.Lock()
	l := links
	mu.Unlock()
	if l == nil {
		t.Fatal("the Bridge got no links")
	}
	status, page, _ := send(t, "GET", h.URL()+strings.TrimPrefix(l.Preferences, publicBase), "", "")
	if status != http.StatusOK {
		t.Fatalf("preference page: %d", status)
	}
	for _, s := range []string{">Weekly digest<", "What happened in your &lt;b&gt;projects&lt;/b&gt; this week.", ">plain_one<", `aria-label="Weekly digest: Email"`} {
		if !strings.Contains(page, s) {
			t.Errorf("the preference page lacks %q:\n%s", s, page)
		}
	}
	if strings.Contains(page, ">weekly_digest<") {
		t.Error("the preference page shows the id of a workflow that has a name")
	}
}
