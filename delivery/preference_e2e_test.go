package delivery_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testlog"
	"github.com/heraldhq/herald/internal/testsmtp"
)

const publicURL = "https://herald.example"

// newPublicFixture is newFixture with HERALD_PUBLIC_URL set.
func newPublicFixture(t *testing.T, m *testsmtp.Server) *fixture {
	t.Helper()
	dir := t.TempDir()
	h := testherald.Start(t, testherald.Options{
		DataDir:     dir,
		Env:         map[string]string{"HERALD_PUBLIC_URL": publicURL + "/"},
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		ProviderTLS: &tls.Config{RootCAs: m.Roots},
	})
	tenant, key := h.Tenant("Acme")
	f := &fixture{t: t, h: h, dataDir: dir, tenant: tenant, key: key, mail: m, logs: &testlog.Buffer{}}
	f.configureChannel(m.Port, false, 201)
	f.tenantCall("PUT", "/v1/subscribers/ada", map[string]any{"contacts": map[string]any{"email": []string{adaFirst}}}, 201)
	return f
}

// mailer is a workflow of one email to the run's subscriber whose body
// carries the links the service gave the Bridge.
func mailer(id string, opts ...bridge.WorkflowOption) *bridge.Workflow {
	return bridge.MustWorkflow(id, func(ctx *bridge.Context, _ any) error {
		unsub, pref := "none", "none"
		if l := ctx.Links; l != nil {
			pref = l.Preferences
			if l.Unsubscribe != nil {
				unsub = *l.Unsubscribe
			}
		}
		_, err := bridge.Send(ctx, "mail", "email", func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Subject: id, Body: fmt.Sprintf("unsubscribe=%s\npreferences=%s\n", unsub, pref)}, nil
		})
		return err
	}, opts...)
}

func (f *fixture) run(workflow string) map[string]any {
	f.t.Helper()
	r := f.tenantCall("POST", "/v1/events", map[string]any{"workflowId": workflow, "to": map[string]any{"subscriberId": "ada"}}, http.StatusAccepted)
	var tr struct{ Runs []struct{ RunID string } }
	r.JSON(f.t, &tr)
	if len(tr.Runs) != 1 {
		f.t.Fatalf("trigger: %s", r.Body)
	}
	return f.h.WaitRun(f.key, tr.Runs[0].RunID, "completed", "failed")
}

// TestPreferencesEndToEnd: a subscriber who opted out of email for one
// workflow gets that workflow's email step skipped with reason
// preference (a skipped ledger row, the run completes); another workflow
// still emails, with List-Unsubscribe headers and the links in the
// Bridge's request; a critical workflow emails although the subscriber
// disabled it, without List-Unsubscribe and with no unsubscribe link; a
// workflow whose default is off skips until the subscriber turns it on.
func TestPreferencesEndToEnd(t *testing.T) {
	m := testsmtp.Start(t, testsmtp.Options{})
	f := newPublicFixture(t, m)
	f.h.Bridge(f.key, bridge.NewRegistry().MustRegister(
		mailer("digest"), mailer("news"), mailer("reset", bridge.WithCritical()),
		mailer("promo", bridge.WithDefaultChannels(map[bridge.Channel]bool{bridge.Email: false})),
	))
	sync := f.tenantCall("POST", "/v1/sync", nil, 200)
	for _, want := range []string{`"workflowId":"reset","schedule":null,"nextRunAt":null,"critical":true,"preferences":null`,
		`"workflowId":"promo","schedule":null,"nextRunAt":null,"critical":false,"preferences":{"channels":{"email":false}}`} {
		if !strings.Contains(string(sync.Body), want) {
			t.Fatalf("sync answer %s lacks %s", sync.Body, want)
		}
	}
	f.tenantCall("PATCH", "/v1/subscribers/ada/preferences",
		`{"workflows":{"digest":{"channels":{"email":false}},"reset":{"enabled":false}}}`, 200)

	skipped := func(workflow string) {
		t.Helper()
		run := f.run(workflow)
		step := run["steps"].([]any)[0].(map[string]any)
		out, _ := step["output"].(map[string]any)
		if run["status"] != "completed" || out["status"] != "skipped" || out["reason"] != "preference" {
			t.Fatalf("%s: run %v", workflow, run)
		}
		rows := f.deliveries(run["runId"].(string))
		if len(rows) != 1 || rows[0].Status != "skipped" || rows[0].Reason != "preference" || rows[0].Kind != "email" {
			t.Fatalf("%s: deliveries %+v", workflow, rows)
		}
	}
	sent := func(workflow string) parsed {
		t.Helper()
		before := len(m.Messages())
		run := f.run(workflow)
		step := run["steps"].([]any)[0].(map[string]any)
		if out, _ := step["output"].(map[string]any); run["status"] != "completed" || out["status"] != "sent" {
			t.Fatalf("%s: run %v", workflow, run)
		}
		got := m.Messages()
		if len(got) != before+1 {
			t.Fatalf("%s: %d messages, want %d", workflow, len(got), before+1)
		}
		return parseMail(t, got[before])
	}

	skipped("digest")
	skipped("promo")

	news := sent("news")
	lu := news.header.Get("List-Unsubscribe")
	if !strings.HasPrefix(lu, "<"+publicURL+"/u/") || !strings.HasSuffix(lu, ">") ||
		news.header.Get("List-Unsubscribe-Post") != "List-Unsubscribe=One-Click" {
		t.Fatalf("news headers: List-Unsubscribe %q, List-Unsubscribe-Post %q", lu, news.header.Get("List-Unsubscribe-Post"))
	}
	if !strings.Contains(news.body, "unsubscribe="+publicURL+"/u/") || !strings.Contains(news.body, "preferences="+publicURL+"/p/") {
		t.Fatalf("news: the Bridge got no links: %q", news.body)
	}

	reset := sent("reset")
	if reset.header.Get("List-Unsubscribe") != "" || reset.header.Get("List-Unsubscribe-Post") != "" {
		t.Fatalf("a critical workflow's email carries List-Unsubscribe: %v", reset.header)
	}
	if !strings.Contains(reset.body, "unsubscribe=none") || !strings.Contains(reset.body, "preferences="+publicURL+"/p/") {
		t.Fatalf("reset: links %q", reset.body)
	}

	// A subscriber id long enough to make the URL overflow a header line
	// gets no List-Unsubscribe (the Bridge still gets its links).
	long := strings.Repeat("<>", 128)
	f.tenantCall("PUT", "/v1/subscribers/"+url.PathEscape(long), map[string]any{"contacts": map[string]any{"email": []string{"long@example.com"}}}, 201)
	before := len(m.Messages())
	r := f.tenantCall("POST", "/v1/events", map[string]any{"workflowId": "news", "to": map[string]any{"subscriberId": long}}, http.StatusAccepted)
	var tr struct{ Runs []struct{ RunID string } }
	r.JSON(t, &tr)
	if run := f.h.WaitRun(f.key, tr.Runs[0].RunID, "completed", "failed"); run["status"] != "completed" {
		t.Fatalf("long id: run %v", run)
	}
	if got := m.Messages(); len(got) != before+1 {
		t.Fatalf("long id: %d messages", len(got))
	} else if p := parseMail(t, got[before]); p.header.Get("List-Unsubscribe") != "" || !strings.Contains(p.body, "unsubscribe="+publicURL+"/u/") {
		t.Fatalf("long id: List-Unsubscribe %q, body %q", p.header.Get("List-Unsubscribe"), p.body)
	} else {
		for line := range strings.SplitSeq(string(got[before].Data), "\r\n") {
			if len(line) > 998 {
				t.Fatalf("a line of %d characters", len(line))
			}
		}
	}

	// The subscriber's own switch beats the workflow's default.
	f.tenantCall("PATCH", "/v1/subscribers/ada/preferences", `{"workflows":{"promo":{"channels":{"email":true}}}}`, 200)
	sent("promo")
}

// TestNoPublicURLNoLinks: without HERALD_PUBLIC_URL, emails carry no
// List-Unsubscribe and the Bridge gets no links; preferences still apply.
func TestNoPublicURLNoLinks(t *testing.T) {
	m := testsmtp.Start(t, testsmtp.Options{})
	f := newFixture(t, m, false, nil)
	f.h.Bridge(f.key, bridge.NewRegistry().MustRegister(mailer("news"), mailer("digest")))
	f.tenantCall("PATCH", "/v1/subscribers/ada/preferences", `{"channels":{"email":false},"workflows":{"news":{"channels":{"email":true}}}}`, 200)
	if run := f.run("digest"); run["steps"].([]any)[0].(map[string]any)["output"].(map[string]any)["reason"] != "preference" {
		t.Fatalf("digest: %v", run)
	}
	if run := f.run("news"); run["status"] != "completed" {
		t.Fatalf("news: %v", run)
	}
	got := m.Messages()
	if len(got) != 1 {
		t.Fatalf("%d messages", len(got))
	}
	p := parseMail(t, got[0])
	if p.header.Get("List-Unsubscribe") != "" || !strings.Contains(p.body, "unsubscribe=none") || !strings.Contains(p.body, "preferences=none") {
		t.Fatalf("headers %v body %q", p.header, p.body)
	}
}
