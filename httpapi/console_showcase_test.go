package httpapi_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/internal/testbrowser"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testsmtp"
	"github.com/heraldhq/herald/internal/testwait"
)

// updateShowcase rewrites the console's pictures under docs/console/:
// `go test -run TestConsoleShowcase ./httpapi -update` (or
// HERALD_UPDATE_SHOWCASE=1). Without it they go where every test's
// screenshots go, and the tree stays clean.
var updateShowcase = flag.Bool("update", false, "rewrite the console's showcase screenshots under docs/console/")

// rejectedNumber is a phone number the SMS stand-in refuses, as Twilio
// refuses an invalid one.
const rejectedNumber = "+15005550001"

// showcaseProviders answers as Twilio and Slack do, on loopback.
func showcaseProviders(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/Messages.json") && r.PostForm.Get("To") == rejectedNumber:
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"code":21211,"message":"The 'To' number is not a valid phone number.","status":400}`)
		case strings.HasSuffix(r.URL.Path, "/Messages.json"):
			w.WriteHeader(http.StatusCreated)
			_, _ = fmt.Fprintf(w, `{"sid":"SM%032x"}`, time.Now().UnixNano())
		case r.URL.Path == "/api/chat.postMessage":
			_, _ = fmt.Fprintf(w, `{"ok":true,"channel":"C0123","ts":"%d.000100"}`, time.Now().Unix())
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// showcaseWorkflows are a shop's: an order shipped (email, SMS, chat and
// in-app, completed), a failed payment's dunning (its SMS refused for
// some, its charge failed), a trial's reminder (a day's sleep: sleeping, or
// cancelled), an approval (waiting), an export still running (its step
// held until release closes) and a weekly digest (one run collecting,
// the others digested).
func showcaseWorkflows(release <-chan struct{}, started chan<- struct{}) *bridge.Registry {
	text := func(subject, body string) func(context.Context) (bridge.SendContent, error) {
		return func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Subject: subject, Body: body}, nil
		}
	}
	shipped := bridge.MustWorkflow("order_shipped_with_tracking_and_returns", func(ctx *bridge.Context, _ any) error {
		order, err := bridge.Run(ctx, "load-order", func(context.Context) (map[string]any, error) {
			return map[string]any{"orderId": "ord_48213", "carrier": "DHL Express", "items": 3, "eta": "2026-12-02"}, nil
		})
		if err != nil {
			return err
		}
		for _, s := range []struct {
			id   string
			kind bridge.Channel
		}{{"email-confirmation", "email"}, {"sms-tracking-link", "sms"}, {"notify-team-channel", "chat"}, {"inbox-card", "in_app"}} {
			subject := "Your order " + order["orderId"].(string) + " is on its way"
			if s.kind == "sms" || s.kind == "chat" { // their content has a body only
				subject = ""
			}
			if _, err := bridge.Send(ctx, s.id, s.kind, text(subject, "Tracking: https://track.example.com/"+order["orderId"].(string))); err != nil {
				return err
			}
		}
		return nil
	}, bridge.WithName("Order shipped — tracking link, estimated delivery window and returns policy"),
		bridge.WithDescription("Tells the customer their parcel left the warehouse, on every channel they use."))
	dunning := bridge.MustWorkflow("payment_failed_dunning_sequence", func(ctx *bridge.Context, _ any) error {
		if _, err := bridge.Send(ctx, "email-card-declined", "email", text("Your payment did not go through", "Update your card")); err != nil {
			return err
		}
		if _, err := bridge.Send(ctx, "sms-card-declined", "sms", text("", "Acme: your card was declined. Update it at acme.example/billing")); err != nil {
			return err
		}
		_, err := bridge.Run(ctx, "retry-charge", func(context.Context) (string, error) {
			return "", errors.New("card declined by the issuer: insufficient funds")
		})
		return err
	}, bridge.WithName("Payment failed: dunning sequence for declined and expired cards"))
	trial := bridge.MustWorkflow("trial_ending_reminder", func(ctx *bridge.Context, _ any) error {
		if _, err := bridge.Send(ctx, "email-trial-ends", "email", text("Your trial ends in 3 days", "Pick a plan")); err != nil {
			return err
		}
		return bridge.Delay(ctx, "wait-a-day", 24*time.Hour)
	}, bridge.WithName("Trial ending reminder, three days before the end of the free trial"))
	approval := bridge.MustWorkflow("refund_approval_request", func(ctx *bridge.Context, _ any) error {
		v, ok, err := bridge.WaitForEvent[map[string]any](ctx, "wait-for-approval", "refund.approved", 48*time.Hour)
		if err != nil || !ok {
			return err
		}
		_, err = bridge.Run(ctx, "issue-refund", func(context.Context) (any, error) { return v, nil })
		return err
	}, bridge.WithName("Refund approval request for orders above 500 EUR"))
	export := bridge.MustWorkflow("monthly_invoice_export", func(ctx *bridge.Context, _ any) error {
		_, err := bridge.Run(ctx, "render-invoices-pdf", func(c context.Context) (int, error) {
			select {
			case started <- struct{}{}:
			default:
			}
			select {
			case <-release:
			case <-c.Done():
			}
			return 0, errors.New("stopped")
		})
		return err
	}, bridge.WithName("Monthly invoice export"))
	digest := bridge.MustWorkflow("weekly_activity_digest", func(ctx *bridge.Context, _ any) error {
		d, err := bridge.Digest(ctx, "collect-activity", 6*time.Hour)
		if err != nil {
			return err
		}
		_, err = bridge.Send(ctx, "email-digest", "email", text(fmt.Sprintf("%d updates this week", len(d.Events)), "Your week"))
		return err
	}, bridge.WithName("Weekly activity digest of comments, mentions and assigned tasks"))
	return bridge.NewRegistry().MustRegister(shipped, dunning, trial, approval, export, digest)
}

// TestConsoleShowcase seeds a shop's tenant (long workflow names, runs of
// every status, fifty of them, deliveries of four kinds sent, skipped and
// failed) and takes the console's pictures at 1280×800 and 390×844: the
// overview, the runs, a run, the deliveries. It checks what they show:
// fifty runs listed, every status among them, each kind with its named
// icon, and no element wider than a phone's screen.
func TestConsoleShowcase(t *testing.T) {
	t.Parallel() // a browser and a service of its own: beside the others
	mail := testsmtp.StartCatcher(t, 0)
	prov := showcaseProviders(t)
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("Acme")
	do := func(method, path string, body any, want int) testherald.Response {
		t.Helper()
		r := h.Do(method, path, key, body)
		if r.Status != want {
			t.Fatalf("%s %s: %d %s", method, path, r.Status, r.Body)
		}
		return r
	}
	h.MailChannel(key, mail.Port)
	do("POST", "/v1/channels", map[string]any{"channelKey": "sms-twilio", "config": map[string]any{
		"accountSid": "AC0123456789abcdef0123456789abcdef", "authToken": "token", "from": "+14155550100", "apiBaseUrl": prov.URL}}, http.StatusCreated)
	do("POST", "/v1/channels", map[string]any{"channelKey": "chat-slack", "config": map[string]any{"botToken": "xoxb-test", "apiBaseUrl": prov.URL}}, http.StatusCreated)
	do("POST", "/v1/channels", map[string]any{"channelKey": "in-app", "config": map[string]any{}}, http.StatusCreated)
	release, started := make(chan struct{}), make(chan struct{}, 4)
	var once sync.Once
	h.Bridge(key, showcaseWorkflows(release, started))
	t.Cleanup(func() { once.Do(func() { close(release) }) }) // before the Bridge's server closes
	do("POST", "/v1/sync", nil, http.StatusOK)

	people := []string{"ada.lovelace", "grace.hopper", "katherine.johnson", "alan.turing", "margaret.hamilton",
		"edsger.dijkstra", "barbara.liskov", "donald.knuth", "radia.perlman", "ken.thompson"}
	for i, p := range people {
		contacts := map[string]any{"email": []string{p + "@example.com"}, "chat": []string{fmt.Sprintf("U0ACME%04d", i)}}
		switch {
		case i%5 == 3: // no phone: its SMS is skipped
		case i%5 == 4:
			contacts["sms"] = []string{rejectedNumber}
		default:
			contacts["sms"] = []string{fmt.Sprintf("+3361234%04d", i)}
		}
		do("PUT", "/v1/subscribers/"+p, map[string]any{"contacts": contacts, "timezone": "Europe/Paris"}, http.StatusCreated)
	}
	trigger := func(workflow, to string) string {
		t.Helper()
		var tr struct{ Runs []struct{ RunID string } }
		do("POST", "/v1/events", map[string]any{"workflowId": workflow, "to": map[string]any{"subscriberId": to},
			"payload": map[string]any{"source": "showcase"}}, http.StatusAccepted).JSON(t, &tr)
		if len(tr.Runs) != 1 {
			t.Fatalf("trigger %s: %d runs", workflow, len(tr.Runs))
		}
		return tr.Runs[0].RunID
	}
	type run struct{ id, workflow, want string }
	var runs []run
	add := func(workflow, to, want string) {
		runs = append(runs, run{trigger(workflow, to), workflow, want})
	}
	// 50 runs: 16 completed, 6 failed, 10 sleeping, 6 cancelled, 5
	// waiting, 2 running, 1 collecting a digest and 4 digested into it.
	for i := range 6 {
		add("payment_failed_dunning_sequence", people[(4+5*i)%len(people)], "failed")
	}
	for i := range 16 {
		add("trial_ending_reminder", people[i%len(people)], "sleeping")
	}
	for i := range 5 {
		add("refund_approval_request", people[i], "waiting")
	}
	add("monthly_invoice_export", "ada.lovelace", "running")
	add("monthly_invoice_export", "grace.hopper", "running")
	// The window's opener reaches its digest step before the others are
	// triggered: whichever run gets there first opens it.
	add("weekly_activity_digest", "katherine.johnson", "sleeping")
	h.WaitRun(key, runs[len(runs)-1].id, "sleeping")
	for range 4 {
		add("weekly_activity_digest", "katherine.johnson", "digested")
	}
	// The orders last, so the newest deliveries are of every kind.
	for i := range 16 {
		// An order to a number the provider refuses fails at its SMS.
		add("order_shipped_with_tracking_and_returns", people[i%len(people)], "completed|failed")
	}
	if len(runs) != 50 {
		t.Fatalf("%d runs seeded, want 50", len(runs))
	}
	for _, r := range runs {
		if r.want != "running" {
			h.WaitRun(key, r.id, strings.Split(r.want, "|")...)
		}
	}
	for range 2 {
		testwait.For(t, "an export's step to start", func() bool {
			select {
			case <-started:
				return true
			default:
				return false
			}
		})
	}
	cancelled := 0
	for i, r := range runs {
		if r.workflow == "trial_ending_reminder" && cancelled < 6 && i%2 == 0 {
			do("POST", "/v1/runs/"+r.id+"/cancel", map[string]any{}, http.StatusAccepted)
			h.WaitRun(key, r.id, "cancelled")
			runs[i].want = "cancelled"
			cancelled++
		}
	}
	// The run to picture: an order to ada, whose four sends went out.
	story := ""
	for _, r := range runs {
		if r.workflow == "order_shipped_with_tracking_and_returns" && story == "" {
			story = r.id
		}
	}

	tab := testbrowser.New(t)
	logPageErrors(t, tab)
	if _, err := chromedp.Call(tab, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Europe/Paris"}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(tab, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatal(err)
	}
	signInWith(t, tab, h.URL(), key)
	waitText(t, tab, "the runs after signing in", "Order shipped — tracking link")
	statuses := []string{"completed", "failed", "cancelled", "sleeping", "waiting", "running", "digested"}
	for _, size := range []struct {
		suffix string
		w, h   int64
	}{{"", 1280, 800}, {"-phone", 390, 844}} {
		if err := chromedp.Do(tab, chromedp.EmulateViewport(size.w, size.h)); err != nil {
			t.Fatal(err)
		}
		visit := func(path string, want ...string) {
			t.Helper()
			if err := chromedp.Do(tab, chromedp.Navigate(h.URL()+"/console"+path)); err != nil {
				t.Fatal(err)
			}
			waitText(t, tab, path, want...)
			if size.w == 390 {
				if over, err := chromedp.Run(tab, chromedp.Evaluate[[]string](tooWideJS)); err != nil || len(over) > 0 {
					t.Errorf("%s: elements wider than a 390-pixel screen: %q (%v)", path, over, err)
				}
				noBrokenWords(t, tab, path+" on a phone")
			}
		}
		visit("/", "Overview", "Deliveries")
		showcase(t, tab, "overview"+size.suffix)

		visit("/runs", "Order shipped — tracking link", "Weekly activity digest")
		n, err := chromedp.Run(tab, chromedp.Poll[int](`document.querySelectorAll("main tbody tr").length || null`, chromedp.WithPollingTimeout(browserWait)))
		if err != nil || n != 50 {
			t.Errorf("the runs page lists %d runs (%v), want 50", n, err)
		}
		shown, err := chromedp.Run(tab, chromedp.Evaluate[[]string](`[...new Set([...document.querySelectorAll("main tbody .status")].map((s) => s.textContent))]`))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range statuses {
			if !strings.Contains(strings.Join(shown, " "), s) {
				t.Errorf("no run shows the status %s on the runs page (it shows %q)", s, shown)
			}
		}
		showcase(t, tab, "runs"+size.suffix)

		visit("/runs/"+story, "email-confirmation", "sms-tracking-link", "notify-team-channel", "inbox-card")
		icons, err := chromedp.Run(tab, chromedp.Evaluate[[]string](`[...document.querySelectorAll("main .kind svg[role=img]")].map((s) => s.getAttribute("aria-label"))`))
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"email", "sms", "chat", "in_app"} {
			if !strings.Contains(" "+strings.Join(icons, " ")+" ", " "+k+" ") {
				t.Errorf("the run's steps show no icon named %s (they show %q)", k, icons)
			}
		}
		showcase(t, tab, "run"+size.suffix)

		visit("/deliveries", "sent", "email-smtp", "sms-twilio", "chat-slack")
		kinds, err := chromedp.Run(tab, chromedp.Evaluate[[]string](`[...new Set([...document.querySelectorAll("main td .kind")].map((k) => k.textContent + ":" + !!k.querySelector("svg.icon")))]`))
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"email", "sms", "chat", "in_app"} {
			if !strings.Contains(" "+strings.Join(kinds, " ")+" ", " "+k+":true ") {
				t.Errorf("the deliveries show no %s with its icon (they show %q)", k, kinds)
			}
		}
		showcase(t, tab, "deliveries"+size.suffix)
	}
	once.Do(func() { close(release) })
}

// showcase takes the screen as a person sees it (the viewport, not the
// whole page) and saves it as console-showcase-<name>.png beside every
// test's screenshots (HERALD_SCREENSHOTS, or screenshots/, which git
// ignores), or, with -update, as docs/console/<name>.png.
func showcase(t *testing.T, tab context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	dir, file := os.Getenv("HERALD_SCREENSHOTS"), "console-showcase-"+name+".png"
	switch {
	case *updateShowcase || os.Getenv("HERALD_UPDATE_SHOWCASE") != "":
		dir, file = filepath.Join("..", "docs", "console"), name+".png"
	case dir == "":
		dir = filepath.Join("..", "screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, file)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("showcase: %s", path)
}
