package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/fetch"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/internal/testbrowser"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testsmtp"
	"github.com/heraldhq/herald/internal/testwait"
)

// consoleWorkflows: welcome loads a name, mails it and sleeps an hour
// (a run to cancel); nomail sends to a subscriber without an address (a
// skipped send); broken fails at its first step.
func consoleWorkflows() *bridge.Registry {
	welcome := bridge.MustWorkflow("welcome", func(ctx *bridge.Context, _ any) error {
		name, err := bridge.Run(ctx, "load-user", func(context.Context) (string, error) { return "Ada", nil })
		if err != nil {
			return err
		}
		if _, err := bridge.Send(ctx, "mail", "email", func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Subject: "Hi " + name, Body: "Welcome"}, nil
		}); err != nil {
			return err
		}
		return bridge.Delay(ctx, "pause", time.Hour)
	})
	approval := bridge.MustWorkflow("approval", func(ctx *bridge.Context, _ any) error {
		v, ok, err := bridge.WaitForEvent[map[string]any](ctx, "approve", "approved", time.Hour)
		if err != nil || !ok {
			return err
		}
		_, err = bridge.Run(ctx, "record", func(context.Context) (any, error) { return v, nil })
		return err
	})
	invite := bridge.MustWorkflow("invite", func(ctx *bridge.Context, p map[string]any) error {
		_, err := bridge.Run(ctx, "greet", func(context.Context) (any, error) { return p["name"], nil })
		return err
	}, bridge.WithPayloadSchema(json.RawMessage(`{"type":"object","required":["name"],"properties":{
		"name":{"type":"string","description":"Who is invited"},"seats":{"type":"integer"},"plan":{"enum":["free","pro"]},
		"urgent":{"type":"boolean"},"team":{"type":"object","properties":{"id":{"type":"string"}}}}}`)))
	broken := bridge.MustWorkflow("broken", func(ctx *bridge.Context, _ any) error {
		_, err := bridge.Run(ctx, "explode", func(context.Context) (string, error) { return "", errors.New("boom") })
		return err
	})
	return bridge.NewRegistry().MustRegister(welcome, broken, approval, invite)
}

// consoleFixture is a service with a Bridge and an SMTP sink, a tenant
// with subscribers ada (with an email) and bob (without), and one run of
// welcome for each.
type consoleFixture struct {
	h        *testherald.Herald
	key      string
	adaRun   string
	bobRun   string
	mailSink *testsmtp.Catcher
}

func newConsoleFixture(t *testing.T) *consoleFixture {
	t.Helper()
	f := &consoleFixture{mailSink: testsmtp.StartCatcher(t, 0)}
	f.h = testherald.Start(t, testherald.Options{})
	_, f.key = f.h.Tenant("Acme")
	f.h.MailChannel(f.key, f.mailSink.Port)
	f.h.Bridge(f.key, consoleWorkflows())
	if r := f.h.Do("POST", "/v1/sync", f.key, nil); r.Status != http.StatusOK {
		t.Fatalf("sync: %d %s", r.Status, r.Body)
	}
	for id, body := range map[string]any{"ada": map[string]any{"contacts": map[string]any{"email": []string{"ada@example.com"}}},
		"bob": map[string]any{}} {
		if r := f.h.Do("PUT", "/v1/subscribers/"+id, f.key, body); r.Status != http.StatusCreated {
			t.Fatalf("subscriber %s: %d %s", id, r.Status, r.Body)
		}
	}
	f.adaRun = f.trigger(t, "welcome", "ada")
	f.bobRun = f.trigger(t, "welcome", "bob")
	f.h.WaitRun(f.key, f.adaRun, "sleeping")
	f.h.WaitRun(f.key, f.bobRun, "sleeping")
	return f
}

func (f *consoleFixture) trigger(t *testing.T, workflow, subscriber string) string {
	t.Helper()
	r := f.h.Do("POST", "/v1/events", f.key, map[string]any{"workflowId": workflow, "to": map[string]any{"subscriberId": subscriber}})
	var tr struct{ Runs []struct{ RunID string } }
	r.JSON(t, &tr)
	if r.Status != http.StatusAccepted || len(tr.Runs) != 1 {
		t.Fatalf("trigger: %d %s", r.Status, r.Body)
	}
	return tr.Runs[0].RunID
}

// logPageErrors logs the page's uncaught exceptions and console errors,
// so a failing browser test says what broke in the page.
func logPageErrors(t *testing.T, tab context.Context) {
	_ = chromedp.Listen(tab, func(ev any) {
		switch e := ev.(type) {
		case *cdpruntime.EventExceptionThrown:
			d := e.ExceptionDetails
			if d.Exception != nil {
				t.Logf("page: %s: %s", d.Text, d.Exception.Description)
			} else {
				t.Logf("page: %s (%s:%d)", d.Text, d.URL, d.LineNumber)
			}
		case *cdpruntime.EventConsoleAPICalled:
			if e.Type == cdpruntime.ConsoleAPICalledTypeError {
				for _, a := range e.Args {
					t.Logf("page console: %s %s", a.Value, a.Description)
				}
			}
		}
	})
}

// waitText waits until the page's visible text holds every one of want.
func waitText(t *testing.T, tab context.Context, what string, want ...string) {
	t.Helper()
	var checks []string
	for _, w := range want {
		checks = append(checks, fmt.Sprintf("document.body.innerText.includes(%q)", w))
	}
	if _, err := chromedp.Run(tab, chromedp.Poll[bool](strings.Join(checks, " && "), chromedp.WithPollingTimeout(browserWait))); err != nil {
		text, _ := chromedp.Run(tab, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("%s: %v; the page shows:\n%s", what, err, text)
	}
}

func signInWith(t *testing.T, tab context.Context, base, key string) {
	t.Helper()
	if err := chromedp.Do(tab, chromedp.Navigate(base+"/console/runs"),
		chromedp.WaitVisible(chromedp.CSS(`input[name="apiKey"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="apiKey"]`), key),
		chromedp.Click(chromedp.CSS(`form.signin button[type="submit"]`))); err != nil {
		t.Fatal(err)
	}
}

// TestConsoleShowsRunsAndCancelsOne: a wrong key shows the API's error; a
// right one opens the runs; a run is found by its subscriber, its
// timeline shows its step ids, outputs, its delivery's channel key and
// status, and a skipped send's reason; it is cancelled from the console
// (read back through the API); a reload of a deep link opens the same
// page; a new trigger appears in the live tail; an unknown run, and a
// deep link with a malformed percent-escape, say not found; revoking the
// console's key ends its live tail and signs it out.
func TestConsoleShowsRunsAndCancelsOne(t *testing.T) {
	t.Parallel() // a browser and a service of its own: beside the others
	f := newConsoleFixture(t)
	base := f.h.URL()
	tab := testbrowser.New(t)
	if err := chromedp.Do(tab, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatal(err)
	}
	logPageErrors(t, tab)

	signInWith(t, tab, base, "hk_wrong")
	waitText(t, tab, "a wrong key shows the API's error", "invalid API key")

	if err := chromedp.Do(tab, chromedp.Clear(chromedp.CSS(`input[name="apiKey"]`))); err != nil {
		t.Fatal(err)
	}
	signInWith(t, tab, base, f.key)
	waitText(t, tab, "the runs list", "Runs", f.adaRun, f.bobRun)

	// Find ada's run by its subscriber.
	if err := chromedp.Do(tab, chromedp.SendKeys(chromedp.CSS(`input[name="subscriberId"]`), "ada"),
		chromedp.Click(chromedp.CSS(`form.filters button[type="submit"]`))); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "the runs of ada", f.adaRun)
	if _, err := chromedp.Run(tab, chromedp.Poll[bool](fmt.Sprintf(`!document.body.innerText.includes(%q)`, f.bobRun),
		chromedp.WithPollingTimeout(browserWait))); err != nil {
		t.Fatalf("bob's run is listed among ada's: %v", err)
	}
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(fmt.Sprintf(`a[href="/console/runs/%s"]`, f.adaRun)))); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "ada's run's steps", "Run "+f.adaRun, "load-user", `"Ada"`, "mail", "1 delivery", "sleeping until")
	// The raw events are one click away.
	if err := chromedp.Do(tab, chromedp.Click(`//summary[starts-with(text(), "Raw events")]`)); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "ada's run's raw events", "RunSleeping", "TriggerAccepted")
	// The send's row opens to its channel, address and status.
	if err := chromedp.Do(tab, chromedp.Click(`//tr[@data-step="mail"]//summary[text()="1 delivery"]`)); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "ada's send opened", "email-smtp", "ada@example.com", "sent")
	testbrowser.Screenshot(t, tab, "console-run")

	// Cancel it, confirming.
	if err := chromedp.Do(tab, chromedp.Click(`//button[text()="Cancel run"]`),
		chromedp.Click(`//button[text()="Yes, cancel"]`)); err != nil {
		t.Fatal(err)
	}
	f.h.WaitRun(f.key, f.adaRun, "cancelled")
	waitText(t, tab, "the cancelled run", "RunCancelled", "Cancelled by hk_", "cancelled")

	// A failed run offers a rerun; confirmed, the run is run again from
	// its failed step (it fails again: its Bridge still throws).
	broken := f.trigger(t, "broken", "ada")
	f.h.WaitRun(f.key, broken, "failed")
	if err := chromedp.Do(tab, chromedp.Navigate(base+"/console/runs/"+broken)); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "the failed run", "Run "+broken, "explode", "Rerun")
	if err := chromedp.Do(tab, chromedp.Click(`//button[text()="Rerun"]`), chromedp.Click(`//button[text()="Yes, rerun"]`)); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "the rerun on the run's page", "Rerun by hk_", "resumed at explode")
	if err := chromedp.Do(tab, chromedp.Navigate(base+"/console/runs/"+f.adaRun)); err != nil {
		t.Fatal(err)
	}

	// A deep link survives a reload.
	if err := chromedp.Do(tab, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "the run after a reload", "Run "+f.adaRun, "Cancelled by hk_")

	// bob's send was skipped, and says why.
	if err := chromedp.Do(tab, chromedp.Navigate(base+"/console/runs/"+f.bobRun)); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "bob's skipped send", "skipped: no_address")

	// bob's page says why a send to him would not go out now.
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`a[href="/console/subscribers/bob"]`))); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "why a send to bob would not go out", "Subscriber bob", "Would a send go out now?", "no_address", "no_channel")
	testbrowser.Screenshot(t, tab, "console-subscriber")

	// The live tail shows a new trigger.
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`nav a[href="/console/tail"]`))); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "the live tail", "Live tail")
	// The tail carries what is appended once the server answered its
	// request (it listens before it answers): the page shows it live only
	// then. The request merely sent is not enough: a trigger between the
	// two is before the tail's start, and never shown.
	if _, err := chromedp.Run(tab, chromedp.Poll[bool](`document.querySelector('p.stream[data-state="live"]') !== null`,
		chromedp.WithPollingTimeout(browserWait))); err != nil {
		t.Fatal(err)
	}
	next := f.trigger(t, "welcome", "ada")
	waitText(t, tab, "a new run in the live tail", "RunStarted", next)
	testbrowser.Screenshot(t, tab, "console-tail")

	// Every other page opens from the navigation and shows its list.
	for _, p := range []struct{ path, heading, shows string }{
		{"runs", "Runs", f.bobRun}, {"subscribers", "Subscribers", "bob"}, {"topics", "Topics", "Nothing yet."},
		{"workflows", "Workflows", "broken"}, {"deliveries", "Deliveries", "email-smtp"}, {"webhooks", "Webhooks", "No endpoints."},
	} {
		if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`nav a[href="/console/`+p.path+`"]`))); err != nil {
			t.Fatal(err)
		}
		waitText(t, tab, "the "+p.path+" page", p.heading, p.shows)
		noBrokenWords(t, tab, "the "+p.path+" page")
		testbrowser.Screenshot(t, tab, "console-"+p.path)
	}

	if err := chromedp.Do(tab, chromedp.Navigate(base+"/console/runs/run_000000000000000000000000")); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "an unknown run", "Not found")

	// A malformed percent-escape in a deep link names no page: the
	// console says not found rather than showing nothing. (An escape
	// net/http cannot parse at all, %E0%A4%A, never reaches the console:
	// the server refuses the request line with 400 Bad Request.)
	if err := chromedp.Do(tab, chromedp.Navigate(base+"/console/runs/%E0%A4")); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "a malformed percent-escape", "Not found", "Page runs/%E0%A4 was not found")
	testbrowser.Screenshot(t, tab, "console-not-found")

	// Revoking the console's key ends its live tail, and the console
	// asks for a key again.
	var other struct{ APIKey string }
	if r := f.h.Do("POST", "/v1/api-keys", f.key, map[string]any{}); r.Status != http.StatusCreated {
		t.Fatalf("api key: %d %s", r.Status, r.Body)
	} else {
		r.JSON(t, &other)
	}
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`nav a[href="/console/tail"]`))); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "the live tail", "Live tail")
	// The tail listens once an event written now shows in it.
	probe := 0
	testwait.Until(t, "the live tail listening", func() error {
		probe++
		id := fmt.Sprintf("tail-probe-%d", probe)
		if r := f.h.Do("PUT", "/v1/subscribers/"+id, f.key, map[string]any{}); r.Status != http.StatusCreated {
			t.Fatalf("subscriber: %d %s", r.Status, r.Body)
		}
		if shown, err := chromedp.Run(tab, chromedp.Evaluate[bool](`document.body.innerText.includes("tail-probe-")`)); err != nil || !shown {
			return fmt.Errorf("no probe shown yet (%v)", err)
		}
		return nil
	})
	if r := f.h.Do("DELETE", "/v1/api-keys/"+f.key[:len("hk_")+8], other.APIKey, nil); r.Status != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", r.Status, r.Body)
	}
	if _, err := chromedp.Run(tab, chromedp.Poll[bool](`document.querySelector('input[name="apiKey"]') !== null`,
		chromedp.WithPollingTimeout(browserWait))); err != nil {
		text, _ := chromedp.Run(tab, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("the console after its key was revoked does not ask for a key: %v; it shows:\n%s", err, text)
	}
}

// brokenWordsJS lists the words, in the visible elements a selector
// matches, that a line break cuts in two: a word whose rectangles sit on
// more than one line.
const brokenWordsJS = `((sel) => {
  const out = [];
  for (const el of document.querySelectorAll(sel)) {
    if (!el.getClientRects().length || el.closest("thead, .vh")) continue;
    const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let n; (n = walk.nextNode());) {
      for (const m of n.data.matchAll(/\S+/g)) {
        const r = document.createRange();
        r.setStart(n, m.index);
        r.setEnd(n, m.index + m[0].length);
        if (new Set([...r.getClientRects()].map((x) => Math.round(x.top))).size > 1) out.push(m[0]);
      }
    }
  }
  return out;
})(%q)`

// tooWideJS lists the visible elements reaching past the screen's right
// edge.
const tooWideJS = `[...document.querySelectorAll("body *")].filter((e) => !e.closest("thead, .vh") &&
  e.getBoundingClientRect().width > 0 && e.getBoundingClientRect().right > window.innerWidth + 1).map((e) => e.tagName + "." + e.className)`

// noBrokenWords fails the test when a table header, a status pill, a
// heading, a link of the navigation or a button breaks inside a word.
func noBrokenWords(t *testing.T, tab context.Context, page string) {
	t.Helper()
	broken, err := chromedp.Run(tab, chromedp.Evaluate[[]string](fmt.Sprintf(brokenWordsJS, "th, .status, h2, nav a, button")))
	if err != nil {
		t.Fatal(err)
	}
	if len(broken) > 0 {
		t.Errorf("%s: words broken inside: %q", page, broken)
	}
}

// TestConsoleByKeyboardOnAPhone: on a 390-pixel-wide screen, a person
// signs in and opens a run's timeline with the keyboard alone; no page
// scrolls sideways, and no element reaches past the screen; tables are
// cards, no header or status pill breaks inside a word; a long id shows
// shortened, whole in its title, with a copy button; times show the
// browser's zone, and the UTC toggle turns them all to UTC.
func TestConsoleByKeyboardOnAPhone(t *testing.T) {
	t.Parallel() // a browser and a service of its own: beside the others
	f := newConsoleFixture(t)
	tab := testbrowser.New(t)
	logPageErrors(t, tab)
	if _, err := chromedp.Call(tab, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Europe/Paris"}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(tab, chromedp.EmulateViewport(390, 844), chromedp.Navigate(f.h.URL()+"/console/runs"),
		chromedp.WaitVisible(chromedp.CSS(`input[name="apiKey"]`))); err != nil {
		t.Fatal(err)
	}
	// The sign-in field has the focus: type the key and press Enter.
	if err := chromedp.Do(tab, chromedp.KeyEvent(f.key), chromedp.KeyEvent("\r")); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "the runs after a keyboard sign-in", f.adaRun)
	noBrokenWords(t, tab, "the runs on a phone")
	cards, err := chromedp.Run(tab, chromedp.Evaluate[bool](`getComputedStyle(document.querySelector(".table tr")).display === "block"`))
	if err != nil || !cards {
		t.Errorf("the runs' table is no stack of cards on a phone (%v)", err)
	}
	short, err := chromedp.Run(tab, chromedp.Evaluate[string](fmt.Sprintf(`(() => {
		const a = document.querySelector('a[href="/console/runs/%s"]');
		const copy = a.parentElement.querySelector("button.copy");
		return a.querySelector('[aria-hidden="true"]').textContent + "|" + a.querySelector("code").title + "|" + (copy && copy.getAttribute("aria-label"));
	})()`, f.adaRun)))
	if err != nil {
		t.Fatal(err)
	}
	if parts := strings.Split(short, "|"); len(parts) != 3 || !strings.Contains(parts[0], "…") || len(parts[0]) >= len(f.adaRun) ||
		parts[1] != f.adaRun || parts[2] != "Copy "+f.adaRun {
		t.Errorf("the run's id shows as %q, want it shortened, whole in its title, with a copy button", short)
	}
	zoned := func() string {
		s, err := chromedp.Run(tab, chromedp.Evaluate[string](`[...document.querySelectorAll("time")].map((t) => t.textContent).join("\n")`))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if z := zoned(); z == "" || strings.Contains(z, "UTC") || !(strings.Contains(z, "GMT+1") || strings.Contains(z, "CET")) {
		t.Errorf("times in Paris show as %q, want the zone named", z)
	}
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`#zone`))); err != nil {
		t.Fatal(err)
	}
	if z := zoned(); strings.Count(z, "UTC") != strings.Count(z, "\n")+1 {
		t.Errorf("after the UTC toggle, times show as %q", z)
	}
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`#zone`))); err != nil {
		t.Fatal(err)
	}
	// Tab to the run's link and press Enter.
	focused := fmt.Sprintf(`document.activeElement && document.activeElement.getAttribute("href") === "/console/runs/%s"`, f.adaRun)
	for i := 0; ; i++ {
		ok, err := chromedp.Run(tab, chromedp.Evaluate[bool](focused))
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			break
		}
		if i == 60 {
			t.Fatal("tabbing 60 times never reached the run's link")
		}
		if err := chromedp.Do(tab, chromedp.KeyEvent(kb.Tab)); err != nil {
			t.Fatal(err)
		}
	}
	if err := chromedp.Do(tab, chromedp.KeyEvent("\r")); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "the run's timeline opened by keyboard", "Run "+f.adaRun, "load-user")
	wide, err := chromedp.Run(tab, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`))
	if err != nil {
		t.Fatal(err)
	}
	testbrowser.Screenshot(t, tab, "console-phone")
	if wide {
		t.Fatal("the run's page scrolls sideways on a 390-pixel-wide screen")
	}
	if over, err := chromedp.Run(tab, chromedp.Evaluate[[]string](tooWideJS)); err != nil || len(over) > 0 {
		t.Errorf("elements wider than a 390-pixel screen: %q (%v)", over, err)
	}
	noBrokenWords(t, tab, "a run on a phone")
}

// stepRowJS is the visible text of a step's row on a run's page.
const stepRowJS = `(document.querySelector('tr[data-step=%q]') || {innerText: ""}).innerText`

// TestConsoleRunAsAStory: a run's page leads with its steps, a row each
// with its duration, a bar on the run's time axis, and the reason for a
// skip or a hold for quiet hours on the row itself; a waiting run offers "Send signal", prefilled
// with the event it waits for, and the signal sent from the page resumes
// the run (read back through the API).
func TestConsoleRunAsAStory(t *testing.T) {
	t.Parallel() // a browser and a service of its own: beside the others
	f := newConsoleFixture(t)
	tab := testbrowser.New(t)
	logPageErrors(t, tab)
	if err := chromedp.Do(tab, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatal(err)
	}
	signInWith(t, tab, f.h.URL(), f.key)
	waitText(t, tab, "the runs list", f.bobRun)
	if err := chromedp.Do(tab, chromedp.Navigate(f.h.URL()+"/console/runs/"+f.bobRun)); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "bob's run", "Run "+f.bobRun, "load-user")
	if _, err := chromedp.Run(tab, chromedp.Poll[bool](fmt.Sprintf(stepRowJS, "mail")+`.includes("skipped: no_address")`,
		chromedp.WithPollingTimeout(browserWait))); err != nil {
		row, _ := chromedp.Run(tab, chromedp.Evaluate[string](fmt.Sprintf(stepRowJS, "mail")))
		t.Fatalf("the skip's reason is not on the mail step's row: %q", row)
	}
	for _, step := range []string{"load-user", "mail", "pause"} {
		row, err := chromedp.Run(tab, chromedp.Evaluate[string](fmt.Sprintf(stepRowJS, step)))
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`\d+(\.\d+)? (ms|s|min|h)`).MatchString(row) {
			t.Errorf("the %s step's row shows no duration: %q", step, row)
		}
		bars, err := chromedp.Run(tab, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll('tr[data-step=%q] svg.bar rect.fill').length`, step)))
		if err != nil || bars != 1 {
			t.Errorf("the %s step's row has %d bars (%v)", step, bars, err)
		}
	}
	if row, _ := chromedp.Run(tab, chromedp.Evaluate[string](fmt.Sprintf(stepRowJS, "pause"))); !strings.Contains(row, "sleeping until") {
		t.Errorf("the pause step's row does not say until when it sleeps: %q", row)
	}
	testbrowser.Screenshot(t, tab, "console-run-story")

	// A send held for the subscriber's quiet hours says so on its row,
	// until when in the subscriber's own zone.
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().In(paris)
	if r := f.h.Do("PUT", "/v1/subscribers/cy", f.key, map[string]any{"timezone": "Europe/Paris",
		"contacts": map[string]any{"email": []string{"cy@example.com"}}}); r.Status != http.StatusCreated {
		t.Fatalf("subscriber cy: %d %s", r.Status, r.Body)
	}
	end := now.Add(time.Hour).Format("15:04")
	if r := f.h.Do("PATCH", "/v1/subscribers/cy/preferences", f.key, map[string]any{"quietHours": map[string]any{
		"start": now.Add(-time.Hour).Format("15:04"), "end": end}}); r.Status != http.StatusOK {
		t.Fatalf("quiet hours: %d %s", r.Status, r.Body)
	}
	held := f.trigger(t, "welcome", "cy")
	f.h.WaitRun(f.key, held, "sleeping")
	if err := chromedp.Do(tab, chromedp.Navigate(f.h.URL()+"/console/runs/"+held)); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "cy's held send", "Run "+held, "mail")
	want := "held for quiet hours until " + end + " Europe/Paris"
	if _, err := chromedp.Run(tab, chromedp.Poll[bool](fmt.Sprintf(stepRowJS, "mail")+fmt.Sprintf(`.includes(%q)`, want),
		chromedp.WithPollingTimeout(browserWait))); err != nil {
		row, _ := chromedp.Run(tab, chromedp.Evaluate[string](fmt.Sprintf(stepRowJS, "mail")))
		t.Fatalf("the held send's row says %q, want %q on it", row, want)
	}
	testbrowser.Screenshot(t, tab, "console-run-held")

	waiting := f.trigger(t, "approval", "ada")
	f.h.WaitRun(f.key, waiting, "waiting")
	if err := chromedp.Do(tab, chromedp.Navigate(f.h.URL()+"/console/runs/"+waiting)); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "the waiting run", "Run "+waiting, "approve", "Send signal")
	if err := chromedp.Do(tab, chromedp.Click(`//button[text()="Send signal"]`), chromedp.WaitVisible(chromedp.CSS(`#signalEvent`))); err != nil {
		t.Fatal(err)
	}
	if ev, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.getElementById("signalEvent").value`)); err != nil || ev != "approved" {
		t.Fatalf("the signal's event is prefilled with %q (%v), want the event the run waits for", ev, err)
	}
	if err := chromedp.Do(tab, chromedp.SetValue(chromedp.CSS(`#signalPayload`), `{"by": "Grace"}`),
		chromedp.Click(`//button[text()="Send"]`), chromedp.Click(`//button[text()="Yes, send"]`)); err != nil {
		t.Fatal(err)
	}
	f.h.WaitRun(f.key, waiting, "completed")
	waitText(t, tab, "the resumed run", "record", "completed", "Grace")
	testbrowser.Screenshot(t, tab, "console-run-signalled")
}

// TestConsoleRunPageCatchesUpOnceLive: a run's page shows what the run did
// between the page's reads and the start of its live tail (which carries
// only what comes after): the page's tail request is held until the run,
// signalled meanwhile, completed, and the page must show it completed.
func TestConsoleRunPageCatchesUpOnceLive(t *testing.T) {
	t.Parallel() // a browser and a service of its own: beside the others
	f := newConsoleFixture(t)
	tab := testbrowser.New(t)
	logPageErrors(t, tab)
	signInWith(t, tab, f.h.URL(), f.key)
	waitText(t, tab, "the runs list", f.bobRun)
	waiting := f.trigger(t, "approval", "ada")
	f.h.WaitRun(f.key, waiting, "waiting")

	paused := make(chan fetch.RequestID, 64)
	if err := chromedp.Listen(tab, func(ev any) {
		if e, ok := ev.(*fetch.EventRequestPaused); ok {
			paused <- e.RequestID
		}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(tab, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*/v1/tail"}}}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(tab, chromedp.Navigate(f.h.URL()+"/console/runs/"+waiting)); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "the waiting run", "Run "+waiting, "approve", "Send signal")
	var held fetch.RequestID
	select {
	case held = <-paused:
	case <-time.After(browserWait):
		t.Fatal("the run's page opened no live tail")
	}
	if r := f.h.Do("POST", "/v1/events/"+waiting+"/signal", f.key, map[string]any{"event": "approved",
		"payload": map[string]any{"by": "Grace"}}); r.Status != http.StatusAccepted && r.Status != http.StatusOK {
		t.Fatalf("signal: %d %s", r.Status, r.Body)
	}
	f.h.WaitRun(f.key, waiting, "completed")
	if _, err := chromedp.Call(tab, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: held}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(tab, fetch.Disable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "the run completed before its page's tail was live", "record", "completed", "Grace")
}

// TestConsoleListsPeopleSearch: the deliveries, filtered by subscriber
// from the page's form, show only that subscriber's, newest first, each
// with its workflow, channel and address; the runs list shows each run's
// start and duration.
func TestConsoleListsPeopleSearch(t *testing.T) {
	t.Parallel() // a browser and a service of its own: beside the others
	f := newConsoleFixture(t)
	later := f.trigger(t, "welcome", "ada")
	f.h.WaitRun(f.key, later, "sleeping")
	tab := testbrowser.New(t)
	logPageErrors(t, tab)
	if err := chromedp.Do(tab, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatal(err)
	}
	signInWith(t, tab, f.h.URL(), f.key)
	waitText(t, tab, "the runs list", f.bobRun, "Duration", "so far")
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`nav a[href="/console/deliveries"]`)),
		chromedp.WaitVisible(chromedp.CSS(`form.filters input[name="subscriberId"]`)),
		chromedp.SendKeys(chromedp.CSS(`form.filters input[name="subscriberId"]`), "ada"),
		chromedp.Click(chromedp.CSS(`form.filters button[type="submit"]`))); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "ada's deliveries", "ada@example.com", "welcome", "email-smtp")
	rows, err := chromedp.Run(tab, chromedp.Evaluate[[]string](`[...document.querySelectorAll(".table tbody tr")].map((tr) =>
		tr.querySelector("time").dateTime + " " + tr.querySelector('td[data-label="Subscriber"]').innerText)`))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || !strings.HasSuffix(rows[0], " ada") || !strings.HasSuffix(rows[1], " ada") || rows[0] < rows[1] {
		t.Fatalf("ada's deliveries, newest first: %q", rows)
	}
	if q, err := chromedp.Run(tab, chromedp.Evaluate[string](`location.search`)); err != nil || q != "?subscriberId=ada" {
		t.Errorf("the filter is not in the page's address: %q (%v)", q, err)
	}
	noBrokenWords(t, tab, "the deliveries")
	testbrowser.Screenshot(t, tab, "console-deliveries-filtered")
}

// TestConsoleOverview: signed in, the console opens on the overview; its
// totals are GET /v1/stats's, for the last hour and the last day; each
// chart has a title and bars; the failing workflow links to its failed
// runs; on a phone nothing is wider than the screen.
func TestConsoleOverview(t *testing.T) {
	t.Parallel() // a browser and a service of its own: beside the others
	f := newConsoleFixture(t)
	broken := f.trigger(t, "broken", "ada")
	f.h.WaitRun(f.key, broken, "failed")
	tab := testbrowser.New(t)
	logPageErrors(t, tab)
	if err := chromedp.Do(tab, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(f.h.URL()+"/console/"),
		chromedp.WaitVisible(chromedp.CSS(`input[name="apiKey"]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name="apiKey"]`), f.key),
		chromedp.Click(chromedp.CSS(`form.signin button[type="submit"]`))); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "the overview", "Overview", "Runs per minute", "Workflows failing most", "broken")
	for _, window := range []string{"1h", "24h"} {
		if window != "1h" {
			if err := chromedp.Do(tab, chromedp.Click(`//button[text()="Last 24 hours"]`)); err != nil {
				t.Fatal(err)
			}
			waitText(t, tab, "the day's overview", "Runs per 15 minutes")
		}
		var s statsAnswer
		f.h.Do("GET", "/v1/stats?window="+window, f.key, nil).JSON(t, &s)
		shown, err := chromedp.Run(tab, chromedp.Evaluate[map[string]string](`Object.fromEntries([...document.querySelectorAll("[data-figure]")].map((e) => [e.dataset.figure, e.textContent]))`))
		if err != nil {
			t.Fatal(err)
		}
		sum := func(outcome string) int {
			n := 0
			for _, k := range s.Deliveries {
				n += k[outcome]
			}
			return n
		}
		for name, want := range map[string]int{"runs.started": s.Runs.Started, "runs.completed": s.Runs.Completed, "runs.failed": s.Runs.Failed,
			"runs.cancelled": s.Runs.Cancelled, "deliveries.sent": sum("sent"), "deliveries.skipped": sum("skipped")} {
			if shown[name] != fmt.Sprint(want) {
				t.Errorf("%s: the overview shows %s %q, the API says %d", window, name, shown[name], want)
			}
		}
		if s.Runs.Started != 3 {
			t.Errorf("%s: the API counts %d runs started, want 3", window, s.Runs.Started)
		}
		bars, err := chromedp.Run(tab, chromedp.Evaluate[int](`[...document.querySelectorAll("svg.chart rect.bar")].filter((r) => r.getBBox().height > 0).length`))
		if err != nil || bars < 3 {
			t.Errorf("%s: the charts have %d bars (%v)", window, bars, err)
		}
		titled, err := chromedp.Run(tab, chromedp.Evaluate[bool](`[...document.querySelectorAll("svg.chart")].every((c) => c.querySelector(":scope > title").textContent.length > 0) && document.querySelectorAll("svg.chart").length === 2`))
		if err != nil || !titled {
			t.Errorf("%s: a chart without a title (%v)", window, err)
		}
	}
	testbrowser.Screenshot(t, tab, "console-overview")
	if err := chromedp.Do(tab, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	if over, err := chromedp.Run(tab, chromedp.Evaluate[[]string](tooWideJS)); err != nil || len(over) > 0 {
		t.Errorf("elements wider than a 390-pixel screen: %q (%v)", over, err)
	}
	noBrokenWords(t, tab, "the overview on a phone")
	testbrowser.Screenshot(t, tab, "console-overview-phone")
	if err := chromedp.Do(tab, chromedp.EmulateViewport(1280, 800), chromedp.Click(chromedp.CSS(`a[href="/console/runs?status=failed&workflowId=broken"]`))); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "the failing workflow's runs", broken)
}

// TestConsoleTriggersFromAWorkflowPage: a workflow's page draws a form
// from its payload schema (a string, an integer, an enum, a boolean and a
// nested object); filled in and confirmed, it starts a run whose trigger
// carries that payload, read back through the API.
func TestConsoleTriggersFromAWorkflowPage(t *testing.T) {
	t.Parallel() // a browser and a service of its own: beside the others
	f := newConsoleFixture(t)
	tab := testbrowser.New(t)
	logPageErrors(t, tab)
	if err := chromedp.Do(tab, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatal(err)
	}
	signInWith(t, tab, f.h.URL(), f.key)
	waitText(t, tab, "the overview", "Overview")
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`nav a[href="/console/workflows"]`)),
		chromedp.Click(chromedp.CSS(`a[href="/console/workflows/invite"]`))); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "the invite workflow's page", "Workflow invite", "Trigger", "team.id", "Who is invited")
	if err := chromedp.Do(tab,
		chromedp.SendKeys(chromedp.CSS(`#toValue`), "ada"),
		chromedp.SendKeys(chromedp.CSS(`#pl-name`), "Grace"),
		chromedp.SendKeys(chromedp.CSS(`#pl-seats`), "3"),
		chromedp.SetValue(chromedp.CSS(`#pl-plan`), "1"),
		chromedp.Click(chromedp.CSS(`#pl-urgent`)),
		chromedp.SendKeys(chromedp.CSS(`#pl-team-id`), "t1")); err != nil {
		t.Fatal(err)
	}
	testbrowser.Screenshot(t, tab, "console-workflow-trigger")
	if err := chromedp.Do(tab, chromedp.Click(`//button[text()="Trigger"]`), chromedp.Click(`//button[text()="Yes, trigger"]`)); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "the trigger's answer", "Triggered:")
	var runs struct{ Data []struct{ RunID string } }
	f.h.Do("GET", "/v1/runs?workflowId=invite", f.key, nil).JSON(t, &runs)
	if len(runs.Data) != 1 {
		t.Fatalf("runs of invite: %+v", runs)
	}
	f.h.WaitRun(f.key, runs.Data[0].RunID, "completed")
	var evs struct {
		Data []struct {
			Type string
			Data struct{ Payload map[string]any }
		}
	}
	f.h.Do("GET", "/v1/runs/"+runs.Data[0].RunID+"/events", f.key, nil).JSON(t, &evs)
	if len(evs.Data) == 0 || evs.Data[0].Type != "TriggerAccepted" {
		t.Fatalf("the run's events: %+v", evs)
	}
	got, _ := json.Marshal(evs.Data[0].Data.Payload)
	if want := `{"name":"Grace","plan":"pro","seats":3,"team":{"id":"t1"},"urgent":true}`; string(got) != want {
		t.Errorf("the trigger's payload: %s, want %s", got, want)
	}
	waitText(t, tab, "the run linked", runs.Data[0].RunID[:8])
}

// TestConsoleEditsPreferencesInAGrid: on a subscriber's page, a
// workflow's email toggled off in the preferences grid and a time zone
// set, then saved and confirmed, are read back through the API (the
// subscriber's contacts kept).
func TestConsoleEditsPreferencesInAGrid(t *testing.T) {
	t.Parallel() // a browser and a service of its own: beside the others
	f := newConsoleFixture(t)
	tab := testbrowser.New(t)
	logPageErrors(t, tab)
	if err := chromedp.Do(tab, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatal(err)
	}
	signInWith(t, tab, f.h.URL(), f.key)
	waitText(t, tab, "the overview", "Overview")
	if err := chromedp.Do(tab, chromedp.Navigate(f.h.URL()+"/console/subscribers/ada")); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "ada's page", "Subscriber ada", "Preferences", "All workflows", "Save preferences")
	box := `input[data-workflow="welcome"][data-kind="email"]`
	if on, err := chromedp.Run(tab, chromedp.Evaluate[bool](`document.querySelector('`+box+`').checked`)); err != nil || !on {
		t.Fatalf("welcome's email is not shown on (%v)", err)
	}
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(box)), chromedp.SendKeys(chromedp.CSS(`#prefTimezone`), "Europe/Paris")); err != nil {
		t.Fatal(err)
	}
	testbrowser.Screenshot(t, tab, "console-preferences")
	if err := chromedp.Do(tab, chromedp.Click(`//button[text()="Save preferences"]`), chromedp.Click(`//button[text()="Yes, save"]`)); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "the preferences saved", func() error {
		var p struct {
			Workflows map[string]struct{ Channels map[string]bool }
		}
		f.h.Do("GET", "/v1/subscribers/ada/preferences", f.key, nil).JSON(t, &p)
		if on, set := p.Workflows["welcome"].Channels["email"]; !set || on {
			return fmt.Errorf("welcome's email: %v set %v", on, set)
		}
		var sub struct {
			Timezone string
			Contacts map[string][]string
		}
		f.h.Do("GET", "/v1/subscribers/ada", f.key, nil).JSON(t, &sub)
		if sub.Timezone != "Europe/Paris" || len(sub.Contacts["email"]) != 1 {
			return fmt.Errorf("ada: %+v", sub)
		}
		return nil
	})
	waitText(t, tab, "the page again", "Subscriber ada", "Europe/Paris")
}

// TestConsoleResendsAWebhookMessage: on the webhooks page, a message's
// Resend, confirmed, sends it again: the receiver gets the same
// webhook-id twice, and the new attempt is listed on the page, first,
// and read back through the API (newest first with order=desc).
func TestConsoleResendsAWebhookMessage(t *testing.T) {
	t.Parallel() // a browser and a service of its own: beside the others
	f := newConsoleFixture(t)
	var mu sync.Mutex
	var ids []string
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ids = append(ids, r.Header.Get("webhook-id"))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(recv.Close)
	var hook struct{ WebhookID string }
	if r := f.h.Do("POST", "/v1/webhooks", f.key, map[string]any{"url": recv.URL, "events": []string{"delivery.sent"}}); r.Status != http.StatusCreated {
		t.Fatalf("webhook: %d %s", r.Status, r.Body)
	} else {
		r.JSON(t, &hook)
	}
	attempts := func() []map[string]any {
		var l struct{ Data []map[string]any }
		f.h.Do("GET", "/v1/webhooks/"+hook.WebhookID+"/attempts", f.key, nil).JSON(t, &l)
		return l.Data
	}
	f.h.WaitRun(f.key, f.trigger(t, "welcome", "ada"), "sleeping")
	testwait.Until(t, "the message's first attempt", func() error {
		if n := len(attempts()); n != 1 {
			return fmt.Errorf("%d attempts", n)
		}
		return nil
	})
	tab := testbrowser.New(t)
	logPageErrors(t, tab)
	if err := chromedp.Do(tab, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatal(err)
	}
	signInWith(t, tab, f.h.URL(), f.key)
	waitText(t, tab, "the overview", "Overview")
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`nav a[href="/console/webhooks"]`))); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "the webhooks page", recv.URL, "delivery.sent", "succeeded", "Resend")
	if err := chromedp.Do(tab, chromedp.Click(`//button[text()="Resend"]`), chromedp.Click(`//button[text()="Yes, resend"]`)); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "the second attempt", func() error {
		as := attempts()
		if len(as) != 2 || as[1]["attempt"] != float64(2) || as[1]["eventId"] != as[0]["eventId"] {
			return fmt.Errorf("attempts: %v", as)
		}
		return nil
	})
	if _, err := chromedp.Run(tab, chromedp.Poll[bool](`document.querySelectorAll("td[data-label=Attempt]").length === 2`,
		chromedp.WithPollingTimeout(browserWait))); err != nil {
		text, _ := chromedp.Run(tab, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("the new attempt is not listed on the page: %v\n%s", err, text)
	}
	if first, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.querySelector("td[data-label=Attempt]").textContent`)); err != nil || first != "2" {
		t.Errorf("the first attempt listed is %q (%v), want the newest, 2", first, err)
	}
	var desc struct{ Data []map[string]any }
	f.h.Do("GET", "/v1/webhooks/"+hook.WebhookID+"/attempts?order=desc", f.key, nil).JSON(t, &desc)
	if len(desc.Data) != 2 || desc.Data[0]["attempt"] != float64(2) || desc.Data[1]["attempt"] != float64(1) {
		t.Errorf("order=desc: %v, want attempt 2 then 1", desc.Data)
	}
	if r := f.h.Do("GET", "/v1/webhooks/"+hook.WebhookID+"/attempts?order=sideways", f.key, nil); r.Status != http.StatusUnprocessableEntity ||
		!strings.Contains(string(r.Body), "order") {
		t.Errorf("order=sideways: %d %s, want 422 naming order", r.Status, r.Body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ids) != 2 || ids[0] != ids[1] {
		t.Errorf("the receiver got webhook-ids %q, want the same one twice", ids)
	}
	testbrowser.Screenshot(t, tab, "console-webhooks-resent")
}
