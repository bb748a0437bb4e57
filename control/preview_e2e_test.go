package control_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testsmtp"
)

// A preview renders one step's content through the tenant's real Bridge:
// no other step body runs (the callbacks are counted), earlier steps
// replay a chosen run's recorded outputs or declared samples, the layout
// applies as at send, controls can be tried, a run step without a sample
// is named, a failing content function is a 502 with its message; and
// nothing is sent or written.
func TestPreviewE2E(t *testing.T) {
	m := testsmtp.Start(t, testsmtp.Options{})
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("Acme")
	h.MailChannel(key, m.Port)
	if r := h.Do("PUT", "/v1/subscribers/ada", key, map[string]any{"locale": "fr-CA",
		"contacts": map[string]any{"email": []string{"ada@example.com"}}}); r.Status >= 300 {
		t.Fatalf("subscriber: %d %s", r.Status, r.Body)
	}
	var loads, renders, audits atomic.Int64
	wf := bridge.MustWorkflow("welcome", func(ctx *bridge.Context, p struct{ Boom bool }) error {
		user, err := bridge.Run(ctx, "load", func(context.Context) (map[string]string, error) {
			loads.Add(1)
			return map[string]string{"name": "Ada"}, nil
		}, bridge.PreviewSample(map[string]string{"name": "Sample"}))
		if err != nil {
			return err
		}
		if _, _, err := bridge.WaitForEvent[any](ctx, "hold", "go", 0); err != nil {
			return err
		}
		if _, err := bridge.Notify(ctx, "mail", func(context.Context) (bridge.EmailContent, error) {
			renders.Add(1)
			if p.Boom {
				return bridge.EmailContent{}, errors.New("the template is broken")
			}
			var c struct{ Subject, Greeting string }
			if err := ctx.Controls("mail", &c); err != nil {
				return bridge.EmailContent{}, err
			}
			return bridge.EmailContent{Subject: c.Subject + " " + user["name"], HTML: "<p>" + c.Greeting + "</p>", Text: c.Greeting}, nil
		}); err != nil {
			return err
		}
		if _, err := bridge.Run(ctx, "audit", func(context.Context) (int, error) {
			audits.Add(1)
			return 1, nil
		}); err != nil {
			return err
		}
		_, err = bridge.Notify(ctx, "bye", func(context.Context) (bridge.SMSContent, error) {
			return bridge.SMSContent{Body: "bye"}, nil
		})
		return err
	}, bridge.Controls("mail", []byte(welcomeControls)))
	h.Bridge(key, bridge.NewRegistry().MustRegister(wf))
	if r := h.Do("POST", "/v1/sync", key, nil); r.Status != http.StatusOK {
		t.Fatalf("sync: %d %s", r.Status, r.Body)
	}
	if r := h.Do("PUT", "/v1/workflows/welcome/controls/mail?locale=fr", key, map[string]any{"subject": "Bienvenue", "greeting": "Salut"}); r.Status != http.StatusOK {
		t.Fatalf("controls: %d %s", r.Status, r.Body)
	}
	if r := h.Do("PUT", "/v1/layouts/brand", key, map[string]any{"name": "Brand", "html": "<main>{{content}}</main>", "default": true}); r.Status != http.StatusCreated {
		t.Fatalf("layout: %d %s", r.Status, r.Body)
	}

	type answer struct {
		Step struct {
			StepID, Type, Channel string
			Content               struct{ Subject, HTML, Text string }
		}
		Controls map[string]map[string]any
		Locale   string
	}
	preview := func(body map[string]any) (testherald.Response, answer) {
		t.Helper()
		r := h.Do("POST", "/v1/workflows/welcome/preview", key, body)
		var a answer
		if r.Status == http.StatusOK {
			r.JSON(t, &a)
		}
		return r, a
	}
	seq, _ := h.Log().LastSeq(context.Background())

	r, a := preview(map[string]any{"stepId": "mail", "subscriberId": "ada"})
	if r.Status != http.StatusOK || a.Step.StepID != "mail" || a.Step.Type != "send" || a.Step.Channel != "email" ||
		a.Step.Content.Subject != "Bienvenue Sample" || a.Step.Content.HTML != "<main><p>Salut</p></main>" || a.Step.Content.Text != "Salut" ||
		a.Locale != "fr-CA" || a.Controls["mail"]["greeting"] != "Salut" {
		t.Fatalf("preview with samples: %d %s", r.Status, r.Body)
	}
	if loads.Load() != 0 || renders.Load() != 1 || audits.Load() != 0 {
		t.Fatalf("callbacks: load %d, render %d, audit %d; want 0, 1, 0", loads.Load(), renders.Load(), audits.Load())
	}
	// Trying values of the controls, and another locale.
	if r, a := preview(map[string]any{"stepId": "mail", "subscriberId": "ada", "locale": "en", "controls": map[string]any{"mail": map[string]any{"subject": "Try"}}}); r.Status != http.StatusOK ||
		a.Step.Content.Subject != "Try Sample" || a.Step.Content.Text != "Hello" || a.Locale != "en" {
		t.Fatalf("preview trying controls: %d %s", r.Status, r.Body)
	}
	if r, _ := preview(map[string]any{"stepId": "mail", "controls": map[string]any{"mail": map[string]any{"subject": 3}}}); r.Status != 422 || r.ErrorCode() != "invalid_controls" {
		t.Fatalf("preview with bad controls: %d %s", r.Status, r.Body)
	}
	// A run step with neither a recorded output nor a sample is named.
	if r, _ := preview(map[string]any{"stepId": "bye"}); r.Status != 422 || r.ErrorCode() != "preview_needs_sample" || !strings.Contains(string(r.Body), "audit") {
		t.Fatalf("preview needing a sample: %d %s", r.Status, r.Body)
	}
	// The Bridge's failure, with its message.
	if r, _ := preview(map[string]any{"stepId": "mail", "payload": map[string]any{"boom": true}}); r.Status != http.StatusBadGateway || !strings.Contains(string(r.Body), "the template is broken") {
		t.Fatalf("preview of a failing template: %d %s", r.Status, r.Body)
	}
	for _, tt := range []struct {
		body   map[string]any
		status int
		code   string
	}{
		{map[string]any{}, 422, "validation_failed"},
		{map[string]any{"stepId": "mail", "subscriberId": "nobody"}, 404, "subscriber_not_found"},
		{map[string]any{"stepId": "mail", "runId": "run_nope"}, 404, "run_not_found"},
	} {
		if r, _ := preview(tt.body); r.Status != tt.status || r.ErrorCode() != tt.code {
			t.Errorf("preview %v: %d %s, want %d %s", tt.body, r.Status, r.Body, tt.status, tt.code)
		}
	}
	if r := h.Do("POST", "/v1/workflows/gone/preview", key, map[string]any{"stepId": "mail"}); r.Status != 404 {
		t.Errorf("preview of an unknown workflow: %d %s", r.Status, r.Body)
	}
	if after, _ := h.Log().LastSeq(context.Background()); after != seq || len(m.Messages()) != 0 {
		t.Fatalf("a preview wrote %d events, sent %d messages", after-seq, len(m.Messages()))
	}

	// A real run, waiting after its load step: its preview replays the
	// recorded output, and runs no body again.
	tr := h.Do("POST", "/v1/events", key, map[string]any{"workflowId": "welcome", "to": map[string]any{"subscriberId": "ada"}})
	var res struct{ Runs []struct{ RunID string } }
	tr.JSON(t, &res)
	if tr.Status != http.StatusAccepted || len(res.Runs) != 1 {
		t.Fatalf("trigger: %d %s", tr.Status, tr.Body)
	}
	runID := res.Runs[0].RunID
	h.WaitRun(key, runID, "waiting")
	loadsBefore, rendersBefore := loads.Load(), renders.Load()
	// Edited after the run started: the run's preview shows the values it
	// recorded at its start (with its first step, in one event).
	if r := h.Do("PUT", "/v1/workflows/welcome/controls/mail?locale=fr", key, map[string]any{"subject": "Changed", "greeting": "Salut"}); r.Status != http.StatusOK {
		t.Fatalf("controls: %d %s", r.Status, r.Body)
	}
	if r, a := preview(map[string]any{"stepId": "mail", "runId": runID}); r.Status != http.StatusOK || a.Step.Content.Subject != "Bienvenue Ada" || a.Locale != "fr-CA" {
		t.Fatalf("preview of a run: %d %s", r.Status, r.Body)
	}
	if loads.Load() != loadsBefore || renders.Load() != rendersBefore+1 || audits.Load() != 0 {
		t.Fatalf("callbacks after the run's preview: load %d (was %d), render %d (was %d), audit %d",
			loads.Load(), loadsBefore, renders.Load(), rendersBefore, audits.Load())
	}
	// Once the run is over, a step its code does not reach is refused.
	if r := h.Do("POST", "/v1/events/"+runID+"/signal", key, map[string]any{"event": "go"}); r.Status != http.StatusAccepted {
		t.Fatalf("signal: %d %s", r.Status, r.Body)
	}
	h.WaitRun(key, runID, "completed", "failed")
	if r, _ := preview(map[string]any{"stepId": "nope", "runId": runID}); r.Status != 422 || r.ErrorCode() != "validation_failed" || !strings.Contains(string(r.Body), "without reaching") {
		t.Fatalf("preview of a step never reached: %d %s", r.Status, r.Body)
	}
}
