package httpapi_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/internal/testbrowser"
	"github.com/heraldhq/herald/internal/testherald"
)

const publicBase = "https://herald.example"

// publicTenant is a tenant whose Bridge records the links of each run it
// executes, with subscriber "ada" and workflows digest, news and reset
// (critical).
type publicTenant struct {
	h     *testherald.Herald
	key   string
	mu    sync.Mutex
	links map[string]*bridge.Links // by workflow
}

func newPublicTenant(t *testing.T, h *testherald.Herald, name string) *publicTenant {
	t.Helper()
	_, key := h.Tenant(name)
	pt := &publicTenant{h: h, key: key, links: map[string]*bridge.Links{}}
	record := func(id string, opts ...bridge.WorkflowOption) *bridge.Workflow {
		return bridge.MustWorkflow(id, func(ctx *bridge.Context, _ struct{}) error {
			pt.mu.Lock()
			pt.links[id] = ctx.Links
			pt.mu.Unlock()
			return nil
		}, opts...)
	}
	h.Bridge(key, bridge.NewRegistry().MustRegister(record("digest"), record("news"), record("reset", bridge.WithCritical())))
	if r := h.Do("POST", "/v1/sync", key, nil); r.Status != 200 {
		t.Fatalf("sync: %d %s", r.Status, r.Body)
	}
	h.MailChannel(key, 2525)
	if r := h.Do("PUT", sub("ada"), key, `{"contacts":{"email":["ada@example.com"]}}`); r.Status != 201 {
		t.Fatalf("subscriber: %d %s", r.Status, r.Body)
	}
	return pt
}

// linksOf runs workflow for ada and returns the links its Bridge got,
// pointed at the test server.
func (pt *publicTenant) linksOf(t *testing.T, workflow string) (unsubscribe, prefs string) {
	t.Helper()
	r := pt.h.Do("POST", "/v1/events", pt.key, map[string]any{"workflowId": workflow, "to": map[string]any{"subscriberId": "ada"}})
	var tr struct{ Runs []struct{ RunID string } }
	r.JSON(t, &tr)
	if len(tr.Runs) != 1 {
		t.Fatalf("trigger: %d %s", r.Status, r.Body)
	}
	if run := pt.h.WaitRun(pt.key, tr.Runs[0].RunID, "completed", "failed"); run["status"] != "completed" {
		t.Fatalf("run %v", run)
	}
	pt.mu.Lock()
	l := pt.links[workflow]
	pt.mu.Unlock()
	if l == nil {
		t.Fatalf("%s: the Bridge got no links", workflow)
	}
	local := func(u string) string {
		if !strings.HasPrefix(u, publicBase+"/") {
			t.Fatalf("link %q is not under HERALD_PUBLIC_URL", u)
		}
		return pt.h.URL() + strings.TrimPrefix(u, publicBase)
	}
	if l.Unsubscribe != nil {
		unsubscribe = local(*l.Unsubscribe)
	}
	return unsubscribe, local(l.Preferences)
}

func (pt *publicTenant) prefs(t *testing.T) string {
	t.Helper()
	r := pt.h.Do("GET", prefs("ada"), pt.key, nil)
	if r.Status != 200 {
		t.Fatalf("preferences: %d %s", r.Status, r.Body)
	}
	return strings.TrimSpace(string(r.Body))
}

func startPublic(t *testing.T) *testherald.Herald {
	return testherald.Start(t, testherald.Options{Env: map[string]string{"HERALD_PUBLIC_URL": publicBase}})
}

// send makes a request as a mailbox provider or a browser would: no API
// key.
func send(t *testing.T, method, u, contentType, body string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b), res.Header
}

// flip changes one byte of the token at the end of u.
func flip(u string, at int) string {
	i := strings.LastIndexByte(u, '/') + 1 + at
	b := []byte(u)
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

// TestOneClickUnsubscribe: the POST Gmail sends (RFC 8058) turns the
// workflow's email off for that subscriber of that tenant only; a GET of
// the same URL shows a confirm page and changes nothing; a token with one
// byte changed, or of the other purpose, is 404; a critical workflow has
// no unsubscribe link; the audit names the public page.
func TestOneClickUnsubscribe(t *testing.T) {
	h := startPublic(t)
	a := newPublicTenant(t, h, "A")
	b := newPublicTenant(t, h, "B")
	unsubA, prefsA := a.linksOf(t, "digest")
	unsubB, _ := b.linksOf(t, "digest")
	const none = `{"channels":{},"workflows":{}}`

	status, page, hdr := send(t, "GET", unsubA, "", "")
	if status != 200 || !strings.Contains(page, `<form method="post"`) || !strings.Contains(page, "digest") ||
		!strings.HasPrefix(hdr.Get("Content-Type"), "text/html") || hdr.Get("Referrer-Policy") != "no-referrer" ||
		hdr.Get("Set-Cookie") != "" || strings.Contains(page, "<script") {
		t.Fatalf("GET: %d %v\n%s", status, hdr, page)
	}
	if got := a.prefs(t); got != none {
		t.Fatalf("a GET changed the preferences: %s", got)
	}

	for i := range []int{0, 1, 2} {
		bad := flip(unsubA, i*17)
		for _, m := range []string{"GET", "POST"} {
			if status, _, _ := send(t, m, bad, "application/x-www-form-urlencoded", "List-Unsubscribe=One-Click"); status != 404 {
				t.Fatalf("%s of a token with one byte changed: %d", m, status)
			}
		}
	}
	if status, _, _ := send(t, "POST", strings.Replace(prefsA, "/p/", "/u/", 1), "application/x-www-form-urlencoded", "List-Unsubscribe=One-Click"); status != 404 {
		t.Fatalf("a preference token on /u/: %d", status)
	}
	if status, _, _ := send(t, "GET", strings.Replace(unsubA, "/u/", "/p/", 1), "", ""); status != 404 {
		t.Fatalf("an unsubscribe token on /p/: %d", status)
	}
	if got := a.prefs(t) + b.prefs(t); got != none+none {
		t.Fatalf("refused tokens changed preferences: %s", got)
	}

	status, page, _ = send(t, "POST", unsubA, "application/x-www-form-urlencoded", "List-Unsubscribe=One-Click")
	if status != 200 || !strings.Contains(page, "no longer receive") {
		t.Fatalf("one-click POST: %d\n%s", status, page)
	}
	if got := a.prefs(t); got != `{"channels":{},"workflows":{"digest":{"channels":{"email":false}}}}` {
		t.Fatalf("tenant A after the one-click POST: %s", got)
	}
	if got := b.prefs(t); got != none {
		t.Fatalf("tenant A's token touched tenant B: %s", got)
	}
	// Any body will do, again: nothing more changes.
	if status, _, _ := send(t, "POST", unsubB, "", ""); status != 200 {
		t.Fatalf("an empty POST: %d", status)
	}
	if got := b.prefs(t); got != `{"channels":{},"workflows":{"digest":{"channels":{"email":false}}}}` {
		t.Fatalf("tenant B: %s", got)
	}
	if status, _, _ := send(t, "POST", unsubA, "application/x-www-form-urlencoded", "x="+strings.Repeat("a", 300<<10)); status != http.StatusRequestEntityTooLarge {
		t.Fatalf("a 300 KiB body: %d", status)
	}

	if u, _ := a.linksOf(t, "reset"); u != "" {
		t.Fatalf("a critical workflow got an unsubscribe link %s", u)
	}

	audit := h.Do("GET", "/v1/admin/events?type=SubscriberPreferencesUpdated", h.AdminToken(), nil)
	if n := strings.Count(string(audit.Body), `"actor":"public-page"`); n != 2 {
		t.Fatalf("audit: %d changes by the public page, want 2\n%s", n, audit.Body)
	}

	// An erased subscriber's token opens nothing.
	if r := h.Do("DELETE", sub("ada")+"?erase=true", a.key, nil); r.Status != 204 {
		t.Fatalf("erase: %d", r.Status)
	}
	if status, _, _ := send(t, "GET", prefsA, "", ""); status != 404 {
		t.Fatalf("an erased subscriber's page: %d", status)
	}
}

// TestPreferencePageInBrowser: the preference page in a real headless
// Chromium: each workflow × kind box shows whether a send goes out, a
// critical workflow's are locked; a box turned off and submitted is read
// back through the API, and written by the public page.
func TestPreferencePageInBrowser(t *testing.T) {
	h := startPublic(t)
	a := newPublicTenant(t, h, "A")
	if r := h.Do("PATCH", prefs("ada"), a.key, `{"workflows":{"news":{"channels":{"email":false}}}}`); r.Status != 200 {
		t.Fatalf("patch: %d %s", r.Status, r.Body)
	}
	_, page := a.linksOf(t, "digest")

	tab := testbrowser.New(t)
	if err := chromedp.Do(tab, chromedp.Navigate(page), chromedp.WaitVisible("#save")); err != nil {
		t.Fatal(err)
	}
	checked := func(id string) (on, disabled bool) {
		t.Helper()
		on, err := chromedp.Run(tab, chromedp.JavascriptAttribute[bool]("#"+id, "checked"))
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		disabled, err = chromedp.Run(tab, chromedp.JavascriptAttribute[bool]("#"+id, "disabled"))
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		return on, disabled
	}
	for _, c := range []struct {
		id           string
		on, disabled bool
	}{
		{"box-digest-email", true, false},
		{"box-news-email", false, false},
		{"box-reset-email", true, true},
	} {
		if on, disabled := checked(c.id); on != c.on || disabled != c.disabled {
			t.Fatalf("%s: checked %v disabled %v, want %v %v", c.id, on, disabled, c.on, c.disabled)
		}
	}
	// A viewport for phones.
	vp, err := chromedp.Run(tab, chromedp.AttributeValue(`meta[name="viewport"]`, "content"))
	if err != nil || !strings.Contains(vp.Value, "width=device-width") {
		t.Fatalf("viewport %+v %v", vp, err)
	}
	testbrowser.Screenshot(t, tab, "preference-page")

	if err := chromedp.Do(tab, chromedp.Click("#box-digest-email"), chromedp.Click("#box-news-email"),
		chromedp.Click("#save"), chromedp.WaitVisible("#result")); err != nil {
		t.Fatal(err)
	}
	text, err := chromedp.Run(tab, chromedp.Text("#result"))
	if err != nil || !strings.Contains(text, "saved") {
		t.Fatalf("result %q %v", text, err)
	}
	if on, _ := checked("box-digest-email"); on {
		t.Fatal("the page shows digest email on after turning it off")
	}
	testbrowser.Screenshot(t, tab, "preference-page-saved")

	if got := a.prefs(t); got != `{"channels":{},"workflows":{"digest":{"channels":{"email":false}},"news":{"channels":{"email":true}}}}` {
		t.Fatalf("read back through the API: %s", got)
	}
	audit := h.Do("GET", "/v1/admin/events?type=SubscriberPreferencesUpdated", h.AdminToken(), nil)
	if !strings.Contains(string(audit.Body), `"actor":"public-page"`) {
		t.Fatalf("audit: %s", audit.Body)
	}
}
