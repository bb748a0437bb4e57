package control_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testsmtp"
)

// Layouts: one {{content}} at most 256 KiB, listed, read, deleted; an
// email's HTML part goes into its layout (the one it names, the tenant's
// default when it names none, none for null), its text part untouched;
// a layout id the tenant does not have fails the send.
func TestLayoutsE2E(t *testing.T) {
	m := testsmtp.Start(t, testsmtp.Options{})
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("Acme")
	h.MailChannel(key, m.Port)
	if r := h.Do("PUT", "/v1/subscribers/ada", key, map[string]any{"contacts": map[string]any{"email": []string{"ada@example.com"}}}); r.Status >= 300 {
		t.Fatalf("subscriber: %d %s", r.Status, r.Body)
	}
	wf := bridge.MustWorkflow("news", func(ctx *bridge.Context, p struct {
		Layout json.RawMessage `json:"layout"`
	}) error {
		_, err := bridge.Notify(ctx, "mail", func(context.Context) (bridge.EmailContent, error) {
			return bridge.EmailContent{Subject: "News", HTML: "<p>Inner news</p>", Text: "Inner text", Layout: p.Layout}, nil
		})
		return err
	})
	h.Bridge(key, bridge.NewRegistry().MustRegister(wf))
	if r := h.Do("POST", "/v1/sync", key, nil); r.Status != http.StatusOK {
		t.Fatalf("sync: %d %s", r.Status, r.Body)
	}

	for _, tt := range []struct {
		id   string
		body map[string]any
		code string
	}{
		{"brand", map[string]any{"name": "Brand", "html": "<div>no placeholder</div>"}, "invalid_layout"},
		{"brand", map[string]any{"name": "Brand", "html": "{{content}}{{content}}"}, "invalid_layout"},
		{"brand", map[string]any{"name": "Brand", "html": "{{content}}" + strings.Repeat("x", 256<<10)}, "invalid_layout"},
		{"brand", map[string]any{"html": "{{content}}"}, "validation_failed"},
		{"bad id!", map[string]any{"name": "X", "html": "{{content}}"}, "validation_failed"},
	} {
		if r := h.Do("PUT", "/v1/layouts/"+strings.ReplaceAll(tt.id, " ", "%20"), key, tt.body); r.Status != 422 || r.ErrorCode() != tt.code {
			t.Errorf("PUT %s: %d %s, want 422 %s", tt.id, r.Status, r.Body, tt.code)
		}
	}
	if r := h.Do("PUT", "/v1/layouts/brand", key, map[string]any{"name": "Brand", "html": `<div class="brand">{{content}}</div>`, "default": true}); r.Status != http.StatusCreated {
		t.Fatalf("PUT brand: %d %s", r.Status, r.Body)
	}
	if r := h.Do("PUT", "/v1/layouts/plain", key, map[string]any{"name": "Plain", "html": `<section>{{content}}</section>`}); r.Status != http.StatusCreated {
		t.Fatalf("PUT plain: %d %s", r.Status, r.Body)
	}
	var list struct {
		Layouts []struct {
			LayoutID string
			Default  bool
		}
	}
	h.Do("GET", "/v1/layouts", key, nil).JSON(t, &list)
	if len(list.Layouts) != 2 || list.Layouts[0].LayoutID != "brand" || !list.Layouts[0].Default || list.Layouts[1].Default {
		t.Fatalf("list: %+v", list)
	}

	send := func(payload map[string]any, want string) string {
		t.Helper()
		n := len(m.Messages())
		r := h.Do("POST", "/v1/events", key, map[string]any{"workflowId": "news", "to": map[string]any{"subscriberId": "ada"}, "payload": payload})
		var res struct{ Runs []struct{ RunID string } }
		r.JSON(t, &res)
		if r.Status != http.StatusAccepted || len(res.Runs) != 1 {
			t.Fatalf("trigger: %d %s", r.Status, r.Body)
		}
		run := h.WaitRun(key, res.Runs[0].RunID, "completed", "failed")
		if run["status"] != want {
			t.Fatalf("run %v, want %s", run, want)
		}
		if want != "completed" {
			if e, _ := run["error"].(map[string]any); e["code"] != "invalid_content" || !strings.Contains(e["message"].(string), "layout") {
				t.Fatalf("failed run's error: %v", run["error"])
			}
			return ""
		}
		msgs := m.Messages()
		if len(msgs) != n+1 {
			t.Fatalf("%d messages, want %d", len(msgs), n+1)
		}
		return string(msgs[len(msgs)-1].Data)
	}
	inText := func(msg string) bool { return strings.Contains(msg, "Inner text") }
	if msg := send(map[string]any{}, "completed"); !strings.Contains(msg, `<div class=3D"brand"><p>Inner news</p></div>`) && !strings.Contains(msg, `<div class="brand"><p>Inner news</p></div>`) || !inText(msg) {
		t.Errorf("default layout not applied:\n%s", msg)
	}
	if msg := send(map[string]any{"layout": "plain"}, "completed"); !strings.Contains(msg, `<section><p>Inner news</p></section>`) || !inText(msg) {
		t.Errorf("named layout not applied:\n%s", msg)
	}
	if msg := send(map[string]any{"layout": nil}, "completed"); strings.Contains(msg, "brand") || strings.Contains(msg, "<section>") || !strings.Contains(msg, "<p>Inner news</p>") {
		t.Errorf("layout null still wrapped:\n%s", msg)
	}
	send(map[string]any{"layout": "gone"}, "failed")

	// Marking another default unmarks the first; deleting answers 404 after.
	if r := h.Do("PUT", "/v1/layouts/plain", key, map[string]any{"name": "Plain", "html": `<section>{{content}}</section>`, "default": true}); r.Status != http.StatusOK {
		t.Fatalf("PUT plain again: %d %s", r.Status, r.Body)
	}
	var one struct{ Default bool }
	h.Do("GET", "/v1/layouts/brand", key, nil).JSON(t, &one)
	if one.Default {
		t.Fatal("brand is still the default")
	}
	if r := h.Do("DELETE", "/v1/layouts/brand", key, nil); r.Status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	if r := h.Do("GET", "/v1/layouts/brand", key, nil); r.Status != 404 || r.ErrorCode() != "layout_not_found" {
		t.Fatalf("get deleted: %d %s", r.Status, r.Body)
	}
	if r := h.Do("DELETE", "/v1/layouts/brand", key, nil); r.Status != 404 {
		t.Fatalf("delete again: %d %s", r.Status, r.Body)
	}
}
