package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/internal/testbrowser"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testwait"
)

// openConsole opens a browser signed in to the console of f's tenant,
// on its overview.
func openConsole(t *testing.T, base, key string) context.Context {
	t.Helper()
	tab := testbrowser.New(t)
	logPageErrors(t, tab)
	if err := chromedp.Do(tab, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatal(err)
	}
	signInWith(t, tab, base, key)
	waitText(t, tab, "the overview", "Overview")
	return tab
}

// pageJSON evaluates js (an expression of a string) in the page and
// decodes it into v.
func pageJSON(t *testing.T, tab context.Context, js string, v any) {
	t.Helper()
	s, err := chromedp.Run(tab, chromedp.Evaluate[string](js))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
}

// TestConsoleChecksADeploy: on the "Check a deploy" page, a candidate
// Bridge whose welcome renames the step its runs sleep at, pasted with
// its secret, lists both sleeping runs as breaking, linked to their
// pages, at the position and with the steps the API reports.
func TestConsoleChecksADeploy(t *testing.T) {
	t.Parallel() // a browser and a service of its own: beside the others
	f := newConsoleFixture(t)
	renamed := bridge.MustWorkflow("welcome", func(ctx *bridge.Context, _ any) error {
		name, err := bridge.Run(ctx, "load-user", func(context.Context) (string, error) { return "Ada", nil })
		if err != nil {
			return err
		}
		if _, err := bridge.Send(ctx, "mail", "email", func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Subject: "Hi " + name, Body: "Welcome"}, nil
		}); err != nil {
			return err
		}
		return bridge.Delay(ctx, "pause_1h", time.Hour)
	})
	candidate := httptest.NewServer(bridge.Serve(bridge.NewRegistry().MustRegister(renamed), bridge.Options{SigningKey: "whsec_candidate"}))
	t.Cleanup(candidate.Close)

	tab := openConsole(t, f.h.URL(), f.key)
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`nav a[href="/console/check"]`))); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "the check page", "Check a deploy", "Candidate Bridge URL")
	if err := chromedp.Do(tab, chromedp.SendKeys(chromedp.CSS(`#bridgeUrl`), candidate.URL),
		chromedp.SendKeys(chromedp.CSS(`#signingSecret`), "whsec_candidate"),
		chromedp.Click(`//form[contains(@class,"check")]//button[text()="Check"]`)); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "the breaking runs", "2 unfinished runs would break", "Breaking runs", "pause_1h")

	var rep struct {
		Checked, OK int
		Breaking    []struct {
			RunID               string
			Position            int
			Recorded, Candidate struct{ StepID string }
		}
	}
	r := f.h.Do("POST", "/v1/checks", f.key, map[string]any{"bridgeUrl": candidate.URL, "signingSecret": "whsec_candidate"})
	if r.Status != http.StatusOK {
		t.Fatalf("check: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &rep)
	if len(rep.Breaking) != 2 {
		t.Fatalf("the API's check: %s", r.Body)
	}
	// The page's rows, read back: run link, position, recorded, candidate.
	var rows [][]string
	pageJSON(t, tab, `JSON.stringify([...document.querySelectorAll("main tbody tr")].map(tr => [
		tr.querySelector("a[href^='/console/runs/']").getAttribute("href"),
		tr.querySelector("td[data-label=Position]").innerText.trim(),
		tr.querySelector("td[data-label=Recorded] code").innerText,
		tr.querySelector("td[data-label=Candidate] code").innerText]))`, &rows)
	var want [][]string
	for _, b := range rep.Breaking {
		want = append(want, []string{"/console/runs/" + b.RunID, fmt.Sprint(b.Position), b.Recorded.StepID, b.Candidate.StepID})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i][0] < rows[j][0] })
	sort.Slice(want, func(i, j int) bool { return want[i][0] < want[j][0] })
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("the page lists %q, the API %q", rows, want)
	}
	for _, w := range want {
		if w[1] != "3" || w[2] != "pause" || w[3] != "pause_1h" || (w[0] != "/console/runs/"+f.adaRun && w[0] != "/console/runs/"+f.bobRun) {
			t.Errorf("breaking row %q, want a sleeping run at 3, pause against pause_1h", w)
		}
	}
	testbrowser.Screenshot(t, tab, "console-check-deploy")
}

// TestConsoleDryRunsATrigger: on welcome's page, a dry run to a topic of
// ada (with an address) and bob (without) shows the recipients and the
// counts by kind and outcome that the API's dry run answers, and starts
// no run.
func TestConsoleDryRunsATrigger(t *testing.T) {
	t.Parallel() // a browser and a service of its own: beside the others
	f := newConsoleFixture(t)
	for _, s := range []string{"ada", "bob"} {
		if r := f.h.Do("PUT", "/v1/subscribers/"+s+"/subscriptions/team", f.key, nil); r.Status >= 300 {
			t.Fatalf("subscribe %s: %d %s", s, r.Status, r.Body)
		}
	}
	tab := openConsole(t, f.h.URL(), f.key)
	if err := chromedp.Do(tab, chromedp.Navigate(f.h.URL()+"/console/workflows/welcome")); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "welcome's page", "Workflow welcome", "Dry run", "Trigger")
	if err := chromedp.Do(tab, chromedp.SetValue(chromedp.CSS(`#toKind`), "topics"),
		chromedp.SendKeys(chromedp.CSS(`#toValue`), "team"),
		chromedp.Click(`//button[text()="Dry run"]`)); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "the dry run", "Dry run: the trigger would reach", "Nothing was sent")

	var api struct {
		Recipients int
		ByKind     map[string]struct {
			Send                  int
			Skipped, Held, Failed map[string]int
		}
	}
	r := f.h.Do("POST", "/v1/events?dryRun=true", f.key, map[string]any{"workflowId": "welcome", "payload": map[string]any{}, "to": map[string]any{"topics": []string{"team"}}})
	if r.Status != http.StatusOK {
		t.Fatalf("dry run: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &api)
	want := map[string]map[string]int{}
	for kind, k := range api.ByKind {
		m := map[string]int{"send": k.Send}
		for group, reasons := range map[string]map[string]int{"skipped": k.Skipped, "held": k.Held, "failed": k.Failed} {
			for reason, n := range reasons {
				m[group+": "+strings.ReplaceAll(reason, "_", " ")] = n
			}
		}
		want[kind] = m
	}
	var shown struct {
		Recipients int
		ByKind     map[string]map[string]int
	}
	pageJSON(t, tab, `JSON.stringify({recipients: Number(document.querySelector("[data-count=recipients]").textContent),
		byKind: Object.fromEntries([...document.querySelectorAll(".dryrun [data-kind]")].map(f => [f.dataset.kind,
			Object.fromEntries([...f.querySelectorAll("li[data-outcome]")].map(li => [li.dataset.outcome, Number(li.querySelector(".value").textContent)]))]))})`, &shown)
	if shown.Recipients != api.Recipients || !reflect.DeepEqual(shown.ByKind, want) {
		t.Errorf("the page shows %d recipients %v; the API %d %v", shown.Recipients, shown.ByKind, api.Recipients, want)
	}
	if api.Recipients != 2 || want["email"]["send"] != 1 || want["email"]["skipped: no address"] != 1 {
		t.Errorf("the dry run: %s", r.Body)
	}
	waitText(t, tab, "the sample", "ada", "bob", "skipped:no_address")
	testbrowser.Screenshot(t, tab, "console-dry-run")
	var runs struct{ Data []any }
	f.h.Do("GET", "/v1/runs", f.key, nil).JSON(t, &runs)
	if len(runs.Data) != 2 {
		t.Errorf("%d runs after a dry run, want the fixture's 2", len(runs.Data))
	}
}

// TestConsoleEditsControlsWithAPreview: on a workflow's page, a
// teammate adds the locale fr, types a subject and sees the preview
// change before saving; saved and confirmed, the value is read back
// through GET controls; saved again and then reverted from the history,
// the first value is current again.
func TestConsoleEditsControlsWithAPreview(t *testing.T) {
	t.Parallel() // a browser and a service of its own: beside the others
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("Acme")
	news := bridge.MustWorkflow("news", func(ctx *bridge.Context, _ any) error {
		_, err := bridge.Notify(ctx, "mail", func(context.Context) (bridge.EmailContent, error) {
			var c struct {
				Subject, Greeting string
				Issue             int
				Tone              string
				Footer            bool
			}
			if err := ctx.Controls("mail", &c); err != nil {
				return bridge.EmailContent{}, err
			}
			return bridge.EmailContent{Subject: fmt.Sprintf("%s #%d", c.Subject, c.Issue),
				HTML: `<h1 style="color:#0550ae">` + c.Greeting + "</h1><p>Tone: " + c.Tone + "</p>", Text: c.Greeting}, nil
		})
		return err
	}, bridge.Controls("mail", json.RawMessage(`{"type":"object","properties":{
		"subject":{"type":"string","default":"Hello","description":"The email's subject"},
		"greeting":{"type":"string","default":"Welcome aboard"},
		"issue":{"type":"integer","default":1},
		"tone":{"enum":["warm","plain"],"default":"warm"},
		"footer":{"type":"boolean","default":true}}}`)))
	h.Bridge(key, bridge.NewRegistry().MustRegister(news))
	if r := h.Do("POST", "/v1/sync", key, nil); r.Status != http.StatusOK {
		t.Fatalf("sync: %d %s", r.Status, r.Body)
	}
	tab := openConsole(t, h.URL(), key)
	if err := chromedp.Do(tab, chromedp.Navigate(h.URL()+"/console/workflows/news")); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "the controls with their preview", "Controls", "The email's subject", "Subject: Hello #1")
	if err := chromedp.Do(tab, chromedp.SendKeys(chromedp.CSS(`#ctlNewLocale`), "fr"),
		chromedp.Click(`//button[text()="Add locale"]`)); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "the fr locale", "Editing fr")
	if err := chromedp.Do(tab, chromedp.Clear(chromedp.CSS(`#ctl-mail-subject`)), chromedp.SendKeys(chromedp.CSS(`#ctl-mail-subject`), "Bonjour"),
		chromedp.Clear(chromedp.CSS(`#ctl-mail-greeting`)), chromedp.SendKeys(chromedp.CSS(`#ctl-mail-greeting`), "Salut"),
		chromedp.SetValue(chromedp.CSS(`#ctl-mail-tone`), "1")); err != nil {
		t.Fatal(err)
	}
	// The preview follows the unsaved values, the HTML in a frame that
	// runs no script.
	waitText(t, tab, "the preview of the unsaved subject", "Subject: Bonjour #1", "locale fr")
	if _, err := chromedp.Run(tab, chromedp.Poll[bool](`(() => { const f = document.querySelector("iframe.pv-html");
		return !!f && f.getAttribute("sandbox") === "" && f.srcdoc.includes(">Salut</h1>") && f.srcdoc.includes("Tone: plain"); })()`,
		chromedp.WithPollingTimeout(browserWait))); err != nil {
		t.Fatalf("the email's HTML in its sandboxed frame: %v", err)
	}
	// Its inline style applies there (the frame inherits the console's
	// policy): the heading is drawn in its colour.
	// The frame paints after its srcdoc is set: shots are taken until one
	// shows the colour, bounded only against a hang.
	// A shot may also miss the frame while the debounced preview replaces
	// it ("No node with given id found"): that shot is taken again.
	styled := false
	var shotErr error
	for deadline := time.Now().Add(browserWait); !styled && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		png, err := chromedp.Run(tab, chromedp.Screenshot(`iframe.pv-html`))
		if shotErr = err; err != nil {
			continue
		}
		styled = hasColour(t, png, color.RGBA{0x05, 0x50, 0xae, 0xff})
	}
	if !styled {
		t.Errorf("the email's inline style is not applied in the preview (the last shot's error: %v)", shotErr)
	}
	shot := testbrowser.Screenshot(t, tab, "console-controls-preview")
	// A full-page screenshot leaves the sandboxed frame (a frame of its
	// own) blank: the frame is shot alone beside it.
	if png, err := chromedp.Run(tab, chromedp.Screenshot(`iframe.pv-html`)); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(filepath.Join(filepath.Dir(shot), "console-controls-preview-frame.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	var ctl struct {
		Values map[string]map[string]map[string]any
	}
	if err := chromedp.Do(tab, chromedp.Click(`//div[@data-step="mail"]//button[text()="Save"]`), chromedp.Click(`//button[text()="Yes, save"]`)); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "the save", "Saved mail for fr as version 1")
	h.Do("GET", "/v1/workflows/news/controls", key, nil).JSON(t, &ctl)
	want := map[string]any{"subject": "Bonjour", "greeting": "Salut", "issue": float64(1), "tone": "plain", "footer": true}
	if got := ctl.Values["fr"]["mail"]; !reflect.DeepEqual(got, want) {
		t.Fatalf("fr's values read back: %v, want %v", got, want)
	}
	if _, ok := ctl.Values["default"]["mail"]; ok {
		t.Errorf("the default content changed: %v", ctl.Values)
	}

	// Saved again, then version 1 reverted from the history.
	if err := chromedp.Do(tab, chromedp.Clear(chromedp.CSS(`#ctl-mail-subject`)), chromedp.SendKeys(chromedp.CSS(`#ctl-mail-subject`), "Coucou"),
		chromedp.Click(`//div[@data-step="mail"]//button[text()="Save"]`), chromedp.Click(`//button[text()="Yes, save"]`)); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "the second save", "Saved mail for fr as version 2")
	if err := chromedp.Do(tab, chromedp.Click(`//tr[td[@data-label="Version"]//div[text()="1"]]//button[text()="Revert"]`),
		chromedp.Click(`//button[text()="Yes, revert"]`)); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "the revert", "Reverted mail (fr) to version 1, recorded as version 3")
	testwait.Until(t, "the reverted value", func() error {
		ctl.Values = nil
		h.Do("GET", "/v1/workflows/news/controls", key, nil).JSON(t, &ctl)
		if s := ctl.Values["fr"]["mail"]["subject"]; s != "Bonjour" {
			return fmt.Errorf("fr's subject %v", s)
		}
		return nil
	})
	waitText(t, tab, "the reverted preview", "Subject: Bonjour #1")
	testbrowser.Screenshot(t, tab, "console-controls-reverted")
	onAPhone(t, tab, "the controls", "console-controls-phone")
}

// TestConsoleShowsTransactionProgress: the transactions page, open
// before a broadcast, shows it and its progress bar reaching finished
// with every recipient's run, as GET /v1/transactions/{id} counts them;
// a broadcast whose runs sleep is cancelled from its row, confirmed, and
// read back as cancelled.
func TestConsoleShowsTransactionProgress(t *testing.T) {
	t.Parallel() // a browser and a service of its own: beside the others
	f := newConsoleFixture(t)
	for _, s := range []string{"ada", "bob", "cy"} {
		if s == "cy" {
			if r := f.h.Do("PUT", "/v1/subscribers/cy", f.key, map[string]any{}); r.Status >= 300 {
				t.Fatalf("subscriber cy: %d %s", r.Status, r.Body)
			}
		}
		if r := f.h.Do("PUT", "/v1/subscribers/"+s+"/subscriptions/team", f.key, nil); r.Status >= 300 {
			t.Fatalf("subscribe %s: %d %s", s, r.Status, r.Body)
		}
	}
	tab := openConsole(t, f.h.URL(), f.key)
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`nav a[href="/console/transactions"]`))); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "the transactions page", "Transactions", "Progress")

	broadcast := func(workflow string, payload map[string]any) string {
		t.Helper()
		r := f.h.Do("POST", "/v1/events", f.key, map[string]any{"workflowId": workflow, "payload": payload, "to": map[string]any{"topics": []string{"team"}}})
		var res struct{ TransactionID string }
		r.JSON(t, &res)
		if r.Status != http.StatusAccepted || res.TransactionID == "" {
			t.Fatalf("broadcast %s: %d %s", workflow, r.Status, r.Body)
		}
		return res.TransactionID
	}
	type progress struct {
		Status     string
		Recipients int
		Runs       struct{ Started, Completed, Cancelled int }
	}
	read := func(tx string) progress {
		var p progress
		f.h.Do("GET", "/v1/transactions/"+tx, f.key, nil).JSON(t, &p)
		return p
	}
	bar := func(tx string) string {
		return fmt.Sprintf(`document.querySelector('[data-transaction=%q]').closest("tr").querySelector(".txbar")`, tx)
	}

	done := broadcast("invite", map[string]any{"name": "Grace"})
	if _, err := chromedp.Run(tab, chromedp.Poll[bool](fmt.Sprintf(`(() => { try { const b = %s;
		return b.dataset.status === "finished" && b.querySelector("[role=progressbar]").getAttribute("aria-valuenow") === "100"; } catch { return false; } })()`, bar(done)),
		chromedp.WithPollingTimeout(browserWait))); err != nil {
		text, _ := chromedp.Run(tab, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("the broadcast's bar does not reach finished: %v\n%s", err, text)
	}
	if p := read(done); p.Status != "finished" || p.Recipients != 3 || p.Runs.Started != 3 || p.Runs.Completed != 3 {
		t.Fatalf("the finished broadcast through the API: %+v", p)
	}
	waitText(t, tab, "the bar's words", "3 of 3 finished")

	// A broadcast of sleeping runs, cancelled from its row.
	sleepy := broadcast("welcome", map[string]any{})
	testwait.Until(t, "the sleeping broadcast's runs", func() error {
		if p := read(sleepy); p.Runs.Started != 3 {
			return fmt.Errorf("%+v", p)
		}
		return nil
	})
	waitText(t, tab, "the running broadcast with its cancel", "0 of 3 finished, 3 under way", "Cancel")
	testbrowser.Screenshot(t, tab, "console-transactions-running")
	clickLive(t, tab, fmt.Sprintf(`//tr[.//span[@data-transaction=%q]]//button[text()="Cancel"]`, sleepy))
	clickLive(t, tab, `//button[text()="Yes, cancel it"]`)
	waitText(t, tab, "the cancel's answer", "Cancelled 3 runs of")
	testwait.Until(t, "the cancelled broadcast", func() error {
		if p := read(sleepy); p.Status != "cancelled" || p.Runs.Cancelled != 3 {
			return fmt.Errorf("%+v", p)
		}
		return nil
	})
	if _, err := chromedp.Run(tab, chromedp.Poll[bool](fmt.Sprintf(`(() => { try { return %s.dataset.status === "cancelled"; } catch { return false; } })()`, bar(sleepy)),
		chromedp.WithPollingTimeout(browserWait))); err != nil {
		t.Fatalf("the cancelled broadcast's bar: %v", err)
	}
	testbrowser.Screenshot(t, tab, "console-transactions")
	onAPhone(t, tab, "the transactions", "console-transactions-phone")
}

// clickLive clicks the element at xpath on a page that re-renders as it
// polls (the transactions' progress): the node found can be replaced
// before the click reaches it, which the browser answers "Could not find
// node with given id"; the click is then tried again on the new node.
// Such a failure comes before the mouse events, so no click lands twice.
func clickLive(t *testing.T, tab context.Context, xpath string) {
	t.Helper()
	deadline := time.Now().Add(browserWait)
	for {
		err := chromedp.Do(tab, chromedp.Click(xpath))
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), "Could not find node") || time.Now().After(deadline) {
			t.Fatalf("click %s: %v", xpath, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// onAPhone narrows the screen to 390 pixels: the page must not scroll
// sideways, and no header, pill or button break inside a word.
func onAPhone(t *testing.T, tab context.Context, page, shot string) {
	t.Helper()
	if err := chromedp.Do(tab, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(tab, chromedp.Poll[bool](`document.documentElement.scrollWidth <= window.innerWidth`,
		chromedp.WithPollingTimeout(browserWait))); err != nil {
		wide, _ := chromedp.Run(tab, chromedp.Evaluate[[]string](`[...document.querySelectorAll("main *")].filter(e => e.getBoundingClientRect().right > window.innerWidth + 1).slice(0, 8).map(e => e.tagName + "." + e.className)`))
		t.Errorf("%s scroll sideways on a phone: %v", page, wide)
	}
	noBrokenWords(t, tab, page+" on a phone")
	testbrowser.Screenshot(t, tab, shot)
}

// hasColour reports whether the PNG img has a pixel of colour c (within
// a little anti-aliasing).
func hasColour(t *testing.T, img []byte, c color.RGBA) bool {
	t.Helper()
	m, err := png.Decode(bytes.NewReader(img))
	if err != nil {
		t.Fatal(err)
	}
	near := func(a uint32, b uint8) bool { d := int(a>>8) - int(b); return d > -12 && d < 12 }
	b := m.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := m.At(x, y).RGBA()
			if near(r, c.R) && near(g, c.G) && near(bl, c.B) {
				return true
			}
		}
	}
	return false
}
