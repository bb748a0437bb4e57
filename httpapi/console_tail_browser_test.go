package httpapi_test

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/heraldhq/herald/internal/testbrowser"
	"github.com/heraldhq/herald/internal/testherald"
)

// TestConsoleTailShowsABrokenStream: signed out, the console shows the
// sign-in form and no navigation; signed in, a live tail the server
// refuses (the tenant holds every tail it may) says the stream is broken
// and why, and turns live by itself once a tail is free.
func TestConsoleTailShowsABrokenStream(t *testing.T) {
	t.Parallel() // a browser and a service of its own: beside the others
	h := testherald.Start(t, testherald.Options{})
	_, key := h.Tenant("Acme")
	tab := testbrowser.New(t)
	logPageErrors(t, tab)
	if err := chromedp.Do(tab, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(h.URL()+"/console/tail"),
		chromedp.WaitVisible(chromedp.CSS(`input[name="apiKey"]`))); err != nil {
		t.Fatal(err)
	}
	hidden, err := chromedp.Run(tab, chromedp.Evaluate[bool](`getComputedStyle(document.getElementById("nav")).display === "none" &&
		document.getElementById("signout").offsetParent === null`))
	if err != nil || !hidden {
		t.Fatalf("signed out, the navigation shows (%v)", err)
	}
	testbrowser.Screenshot(t, tab, "console-signin")

	var tails []*sseClient
	for range 8 { // the tails a tenant may hold on one server
		tails = append(tails, openTail(t, h, key))
	}
	if err := chromedp.Do(tab, chromedp.SendKeys(chromedp.CSS(`input[name="apiKey"]`), key),
		chromedp.Click(chromedp.CSS(`form.signin button[type="submit"]`))); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "the broken stream", "Live tail", "Stream broken", "too_many_streams", "Trying again")
	testbrowser.Screenshot(t, tab, "console-tail-broken")

	tails[0].cancel()
	if _, err := chromedp.Run(tab, chromedp.Poll[bool](`document.querySelector(".stream").dataset.state === "live"`,
		chromedp.WithPollingTimeout(browserWait))); err != nil {
		text, _ := chromedp.Run(tab, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("the tail never turned live once a tail was free: %v; the page shows:\n%s", err, text)
	}
	waitText(t, tab, "the live stream", "● Live")
}
