package control_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testsmtp"
)

// welcomeControls is the control schema of the e2e workflows' welcome
// email.
const welcomeControls = `{"type":"object","properties":{
	"subject":{"type":"string","maxLength":60,"default":"Welcome"},
	"greeting":{"type":"string","default":"Hello"}}}`

// controlledWelcome is a workflow whose welcome email reads its controls.
func controlledWelcome(extra ...func(ctx *bridge.Context) error) *bridge.Workflow {
	return controlledWelcomeSchema(welcomeControls, extra...)
}

// controlledWelcomeSchema is controlledWelcome with another control schema.
func controlledWelcomeSchema(schema string, extra ...func(ctx *bridge.Context) error) *bridge.Workflow {
	return bridge.MustWorkflow("welcome", func(ctx *bridge.Context, _ struct{}) error {
		for _, f := range extra {
			if err := f(ctx); err != nil {
				return err
			}
		}
		_, err := bridge.Notify(ctx, "mail", func(context.Context) (bridge.EmailContent, error) {
			var c struct{ Subject, Greeting string }
			if err := ctx.Controls("mail", &c); err != nil {
				return bridge.EmailContent{}, err
			}
			return bridge.EmailContent{Subject: c.Subject, Text: c.Greeting + " from Herald", HTML: "<p>" + c.Greeting + "</p>"}, nil
		})
		return err
	}, bridge.Controls("mail", json.RawMessage(schema)))
}

// The routes of a workflow's controls: values per locale checked against
// the step's schema, read back, listed as versions with their actor,
// reverted and deleted, each change an event of the log.
func TestControlsAPIE2E(t *testing.T) {
	h := testherald.Start(t, testherald.Options{})
	tenant, key := h.Tenant("Acme")
	h.Bridge(key, bridge.NewRegistry().MustRegister(controlledWelcome()))
	if r := h.Do("POST", "/v1/sync", key, nil); r.Status != http.StatusOK {
		t.Fatalf("sync: %d %s", r.Status, r.Body)
	}
	put := func(locale string, body any) testherald.Response {
		path := "/v1/workflows/welcome/controls/mail"
		if locale != "" {
			path += "?locale=" + locale
		}
		return h.Do("PUT", path, key, body)
	}
	r := put("", map[string]any{"subject": "Hi there"})
	if r.Status != http.StatusOK {
		t.Fatalf("put: %d %s", r.Status, r.Body)
	}
	var v struct {
		StepID, Locale string
		Values         map[string]any
		Version        int
	}
	r.JSON(t, &v)
	if v.StepID != "mail" || v.Locale != "default" || v.Values["subject"] != "Hi there" || v.Version != 1 {
		t.Fatalf("put answered %s", r.Body)
	}
	if r := put("FR", map[string]any{"subject": "Bienvenue", "greeting": "Bonjour"}); r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"locale":"fr"`) {
		t.Fatalf("put fr: %d %s", r.Status, r.Body)
	}

	// Refused, with nothing written.
	seq, _ := h.Log().LastSeq(context.Background())
	for _, tt := range []struct {
		locale, path string
		body         any
		status       int
		code, field  string
	}{
		{"fr", "", map[string]any{"subject": strings.Repeat("x", 61)}, 422, "invalid_controls", "controls.subject"},
		{"fr", "", map[string]any{"subjet": "typo"}, 422, "invalid_controls", "controls.subjet"},
		{"fr", "", map[string]any{"greeting": 7}, 422, "invalid_controls", "controls.greeting"},
		{"fr", "", []any{1}, 422, "invalid_controls", "controls"},
		{"f r", "", map[string]any{}, 422, "validation_failed", "locale"},
		{"fr", "/v1/workflows/welcome/controls/nope", map[string]any{}, 422, "validation_failed", "stepId"},
		{"fr", "/v1/workflows/gone/controls/mail", map[string]any{}, 404, "workflow_not_found", ""},
	} {
		path := tt.path
		if path == "" {
			path = "/v1/workflows/welcome/controls/mail"
		}
		r := h.Do("PUT", path+"?locale="+strings.ReplaceAll(tt.locale, " ", "%20"), key, tt.body)
		if r.Status != tt.status || r.ErrorCode() != tt.code || (tt.field != "" && !strings.Contains(string(r.Body), `"field":"`+tt.field+`"`)) {
			t.Errorf("%s %v: %d %s, want %d %s naming %s", path, tt.body, r.Status, r.Body, tt.status, tt.code, tt.field)
		}
	}
	if after, _ := h.Log().LastSeq(context.Background()); after != seq {
		t.Fatalf("a refused change wrote to the log: %d → %d", seq, after)
	}

	var got struct {
		Schema  map[string]map[string]any
		Values  map[string]map[string]map[string]any
		Version int
	}
	h.Do("GET", "/v1/workflows/welcome/controls", key, nil).JSON(t, &got)
	if got.Schema["mail"]["type"] != "object" || got.Values["default"]["mail"]["subject"] != "Hi there" ||
		got.Values["fr"]["mail"]["greeting"] != "Bonjour" || got.Version != 2 {
		t.Fatalf("GET controls: %+v", got)
	}

	if r := put("fr", map[string]any{"subject": "Salut"}); r.Status != http.StatusOK {
		t.Fatalf("put fr again: %d %s", r.Status, r.Body)
	}
	var hist struct {
		Versions []struct {
			Version       int
			StepID, Actor string
			Locale        string
			Values        map[string]any
			At            string
		}
	}
	h.Do("GET", "/v1/workflows/welcome/controls/history?stepId=mail&locale=fr", key, nil).JSON(t, &hist)
	if len(hist.Versions) != 2 || hist.Versions[0].Version != 3 || hist.Versions[1].Version != 2 ||
		!strings.HasPrefix(hist.Versions[0].Actor, "hk_") || !strings.HasPrefix(key, hist.Versions[0].Actor+"_") || hist.Versions[0].At == "" {
		t.Fatalf("history: %+v", hist)
	}

	// Revert restores version 2's values as version 4.
	r = h.Do("POST", "/v1/workflows/welcome/controls/mail/revert", key, map[string]any{"version": 2})
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"version":4`) || !strings.Contains(string(r.Body), `"Bonjour"`) {
		t.Fatalf("revert: %d %s", r.Status, r.Body)
	}
	if r := h.Do("POST", "/v1/workflows/welcome/controls/mail/revert", key, map[string]any{"version": 99}); r.Status != 422 {
		t.Fatalf("revert to no version: %d %s", r.Status, r.Body)
	}
	// Delete: the locale falls back.
	if r := h.Do("DELETE", "/v1/workflows/welcome/controls/mail?locale=fr", key, nil); r.Status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	got.Values = nil
	h.Do("GET", "/v1/workflows/welcome/controls", key, nil).JSON(t, &got)
	if _, ok := got.Values["fr"]; ok || got.Version != 5 {
		t.Fatalf("after delete: %+v", got)
	}

	// Every change is an event of the log with its actor.
	evs, err := h.Log().History(context.Background(), eventlog.Subject(tenant, eventlog.AggControls, "welcome"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 5 {
		t.Fatalf("%d events, want 5", len(evs))
	}
	for _, ev := range evs {
		var d events.ControlsChangedData
		if err := ev.Decode(&d); err != nil || ev.Type != events.ControlsChanged || !strings.HasPrefix(d.Actor, "hk_") || strings.Contains(string(ev.Data), key) {
			t.Fatalf("event %s %s: %v", ev.Type, ev.Data, err)
		}
	}
}

// mailSubject returns the Subject header of a message.
func mailSubject(data []byte) string {
	for _, line := range strings.Split(string(data), "\r\n") {
		if s, ok := strings.CutPrefix(line, "Subject: "); ok {
			return s
		}
		if line == "" {
			break
		}
	}
	return ""
}

// At a run's start its controls resolve for its subscriber's locale
// (defaults, the tenant's default values, the language, the exact
// locale) and are recorded on the run: a run started before an edit and
// resumed after it still sends its first values; the next run sends the
// new ones; fr-CA falls back to fr, and en to the default values.
func TestControlsResolvedAtRunStartE2E(t *testing.T) {
	m := testsmtp.Start(t, testsmtp.Options{})
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("Acme")
	h.MailChannel(key, m.Port)
	for id, locale := range map[string]string{"ada": "fr-CA", "bob": "en"} {
		if r := h.Do("PUT", "/v1/subscribers/"+id, key, map[string]any{"locale": locale,
			"contacts": map[string]any{"email": []string{id + "@example.com"}}}); r.Status >= 300 {
			t.Fatalf("subscriber: %d %s", r.Status, r.Body)
		}
	}
	hold := func(ctx *bridge.Context) error {
		_, _, err := bridge.WaitForEvent[any](ctx, "hold", "go", 0)
		return err
	}
	b := h.Bridge(key, bridge.NewRegistry().MustRegister(controlledWelcome(hold)))
	if r := h.Do("POST", "/v1/sync", key, nil); r.Status != http.StatusOK {
		t.Fatalf("sync: %d %s", r.Status, r.Body)
	}
	put := func(locale string, values map[string]any) {
		t.Helper()
		if r := h.Do("PUT", "/v1/workflows/welcome/controls/mail?locale="+locale, key, values); r.Status != http.StatusOK {
			t.Fatalf("put %s: %d %s", locale, r.Status, r.Body)
		}
	}
	put("", map[string]any{"subject": "Hello from default"})
	put("fr", map[string]any{"subject": "Bonjour", "greeting": "Salut"})

	start := func(sub string) string {
		t.Helper()
		r := h.Do("POST", "/v1/events", key, map[string]any{"workflowId": "welcome", "to": map[string]any{"subscriberId": sub}})
		var res struct{ Runs []struct{ RunID string } }
		r.JSON(t, &res)
		if r.Status != http.StatusAccepted || len(res.Runs) != 1 {
			t.Fatalf("trigger: %d %s", r.Status, r.Body)
		}
		h.WaitRun(key, res.Runs[0].RunID, "waiting")
		return res.Runs[0].RunID
	}
	finish := func(runID string) string {
		t.Helper()
		n := len(m.Messages())
		if r := h.Do("POST", "/v1/events/"+runID+"/signal", key, map[string]any{"event": "go"}); r.Status != http.StatusAccepted {
			t.Fatalf("signal: %d %s", r.Status, r.Body)
		}
		if run := h.WaitRun(key, runID, "completed", "failed"); run["status"] != "completed" {
			t.Fatalf("run: %v", run)
		}
		msgs := m.Messages()
		if len(msgs) != n+1 {
			t.Fatalf("%d messages, want %d", len(msgs), n+1)
		}
		last := msgs[len(msgs)-1]
		return mailSubject(last.Data) + " | " + map[bool]string{true: "Salut", false: "Hello"}[strings.Contains(string(last.Data), "Salut from Herald")]
	}

	before := start("ada")
	// Edited while the run waits.
	put("fr", map[string]any{"subject": "Bonjour encore", "greeting": "Salut"})
	put("", map[string]any{"subject": "Hello again"})
	if got := finish(before); got != "Bonjour | Salut" {
		t.Errorf("the run started before the edit sent %q, want its first values", got)
	}
	if got := finish(start("ada")); got != "Bonjour encore | Salut" {
		t.Errorf("fr-CA after the edit: %q", got)
	}
	if got := finish(start("bob")); got != "Hello again | Hello" {
		t.Errorf("en: %q", got)
	}
	// A later schema that refuses a stored value skips it, field by
	// field: a subject over the new maxLength falls back to the layer
	// under it, the greeting stays.
	put("fr", map[string]any{"subject": strings.Repeat("B", 50), "greeting": "Salut"})
	b.Serve(bridge.NewRegistry().MustRegister(controlledWelcomeSchema(strings.Replace(welcomeControls, `"maxLength":60`, `"maxLength":40`, 1), hold)))
	if r := h.Do("POST", "/v1/sync", key, nil); r.Status != http.StatusOK {
		t.Fatalf("sync: %d %s", r.Status, r.Body)
	}
	if got := finish(start("ada")); got != "Hello again | Salut" {
		t.Errorf("fr with a subject the new schema refuses: %q", got)
	}
	var view struct {
		Skipped map[string]map[string][]string
	}
	h.Do("GET", "/v1/workflows/welcome/controls", key, nil).JSON(t, &view)
	if got := view.Skipped["fr"]["mail"]; len(got) != 1 || got[0] != "subject" || len(view.Skipped) != 1 {
		t.Errorf("GET controls shows skipped %v, want fr mail [subject]", view.Skipped)
	}
}

// A Bridge declaring step controls herald cannot enforce fails the sync,
// 422 invalid_payload_schema naming the step's schema, and records
// nothing: the SDKs refuse such schemas, so a hand-written Bridge plays
// one here.
func TestUnenforceableControlsRefuseTheSyncE2E(t *testing.T) {
	h := testherald.Start(t, testherald.Options{DeliverURL: testherald.NewStandInDelivery(t).URL})
	_, key := h.Tenant("Acme")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"workflows":[{"workflowId":"welcome","schedule":null,"payloadSchema":null,
			"controls":{"mail":{"type":"object","properties":{"subject":{"type":"string"}}}}}]}`))
	}))
	defer srv.Close()
	if _, err := h.API(key).BindBridge(context.Background(), srv.URL); err != nil {
		t.Fatal(err)
	}
	r := h.Do("POST", "/v1/sync", key, nil)
	if r.Status != 422 || r.ErrorCode() != "invalid_payload_schema" ||
		!strings.Contains(string(r.Body), `"field":"workflows[0].controls.mail"`) || !strings.Contains(string(r.Body), "has no default") {
		t.Fatalf("sync: %d %s", r.Status, r.Body)
	}
	var list struct{ Workflows []any }
	h.Do("GET", "/v1/workflows", key, nil).JSON(t, &list)
	if len(list.Workflows) != 0 {
		t.Fatalf("a refused sync recorded %v", list.Workflows)
	}
}
