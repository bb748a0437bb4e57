package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/heraldhq/herald/internal/testbrowser"
	"github.com/heraldhq/herald/internal/testherald"
)

// inboxJS reaches into the component's shadow DOM.
const inboxJS = `document.querySelector("herald-inbox").shadowRoot`

// TestInboxComponentInBrowser: the <herald-inbox> component in a real
// headless Chromium, on the demo page, against the service: the badge
// shows the unread count; a message sent through a trigger appears
// without a reload; clicking it marks it read and the badge drops; "Mark
// all read" clears it. A screenshot is left for a person to look at.
func TestInboxComponentInBrowser(t *testing.T) {
	f := newInboxFixture(t, testherald.Options{}, "ada")
	f.send("ada", "Your export is ready")
	f.send("ada", "Bob commented on your post")
	tok := f.token("ada")
	tab := testbrowser.New(t)
	if err := chromedp.Do(tab, chromedp.Navigate(f.h.URL()+"/inbox/demo?open&token="+tok)); err != nil {
		t.Fatal(err)
	}
	// waitFor polls a JavaScript predicate until it holds.
	waitFor := func(what, predicate string) {
		t.Helper()
		if _, err := chromedp.Run(tab, chromedp.Poll[bool](predicate, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
			state, _ := chromedp.Run(tab, chromedp.Evaluate[string](inboxJS+`.getElementById("panel").innerText + " | badge " + `+inboxJS+`.getElementById("badge").textContent`))
			t.Fatalf("%s: %v (component: %q)", what, err, state)
		}
	}
	badge := func(want string) string {
		if want == "" {
			return inboxJS + `.getElementById("badge").hidden`
		}
		return `!` + inboxJS + `.getElementById("badge").hidden && ` + inboxJS + `.getElementById("badge").textContent === "` + want + `"`
	}
	items := inboxJS + `.querySelectorAll("li.item")`
	waitFor("the badge shows 2 unread", badge("2"))
	waitFor("the list shows both messages", items+`.length === 2`)

	// Live: a message sent now appears without a reload, at the top.
	f.trigger("ada", "Carol mentioned you")
	waitFor("the new message appears", items+`.length === 3 && `+items+`[0].innerText.includes("Carol mentioned you")`)
	waitFor("the badge shows 3 unread", badge("3"))

	// Clicking a message marks it read.
	if err := chromedp.Do(tab, chromedp.Click(chromedp.JSPath(items+`[0]`))); err != nil {
		t.Fatal(err)
	}
	waitFor("the clicked message is shown read", `!`+items+`[0].classList.contains("unread")`)
	waitFor("the badge drops to 2", badge("2"))
	if read := f.list(tok, "read"); len(read) != 1 || read[0].Body != "Carol mentioned you" {
		t.Fatalf("read messages %s", bodies(read))
	}
	testbrowser.Screenshot(t, tab, "inbox")

	// Mark all read.
	if err := chromedp.Do(tab, chromedp.Click(chromedp.JSPath(inboxJS+`.getElementById("mark-all")`))); err != nil {
		t.Fatal(err)
	}
	waitFor("the badge is cleared", badge(""))
	waitFor("every message is shown read", inboxJS+`.querySelectorAll("li.item.unread").length === 0`)
	f.expectCounts(tok, 0, 0)

	// Archive takes a message out of the list.
	if err := chromedp.Do(tab, chromedp.Click(chromedp.JSPath(items+`[2].querySelector(".archive")`))); err != nil {
		t.Fatal(err)
	}
	waitFor("the archived message leaves the list", items+`.length === 2`)
	if archived := f.list(tok, "archived"); len(archived) != 1 || archived[0].Body != "Your export is ready" {
		t.Fatalf("archived %s", bodies(archived))
	}
	// And the stream still delivers after all this.
	f.trigger("ada", "One more thing")
	waitFor("a later message appears", items+`.length === 3`)
	waitFor("its badge", badge("1"))
	f.call("GET", "/inbox.js", "", nil, http.StatusOK)
}

// TestInboxComponentResumesAfterADrop: the component's stream is cut (a
// proxy between the browser and Herald drops every connection) and held
// off while a message is sent; when the browser reconnects it presents
// the last event id and is sent the message it missed, without a reload.
func TestInboxComponentResumesAfterADrop(t *testing.T) {
	f := newInboxFixture(t, testherald.Options{}, "ada")
	f.send("ada", "Before the drop")
	tok := f.token("ada")
	upstream, err := url.Parse(f.h.URL())
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(upstream)
	rp.FlushInterval = -1
	var (
		mu      sync.Mutex
		gate    chan struct{} // while set, stream requests wait for it to close
		lastIDs []string      // Last-Event-ID of each stream request
	)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/inbox/stream" {
			mu.Lock()
			lastIDs = append(lastIDs, r.Header.Get("Last-Event-ID"))
			g := gate
			mu.Unlock()
			if g != nil {
				select {
				case <-g:
				case <-r.Context().Done():
					return
				}
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)

	tab := testbrowser.New(t)
	if err := chromedp.Do(tab, chromedp.Navigate(proxy.URL+"/inbox/demo?open&token="+tok)); err != nil {
		t.Fatal(err)
	}
	waitFor := func(what, predicate string) {
		t.Helper()
		if _, err := chromedp.Run(tab, chromedp.Poll[bool](predicate, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	items := inboxJS + `.querySelectorAll("li.item")`
	waitFor("the first message is listed", items+`.length === 1`)
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(lastIDs)
		mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the component opened no stream")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // its first counts event has come

	mu.Lock()
	gate = make(chan struct{})
	mu.Unlock()
	proxy.CloseClientConnections()
	f.send("ada", "Sent while the stream was down")
	time.Sleep(300 * time.Millisecond)
	if n, _ := chromedp.Run(tab, chromedp.Evaluate[int](items+`.length`)); n != 1 {
		t.Fatalf("%d messages shown while the stream was held off", n)
	}
	mu.Lock()
	close(gate)
	gate = nil
	mu.Unlock()
	waitFor("the missed message appears without a reload", items+`.length === 2 && `+items+`[0].innerText.includes("Sent while the stream was down")`)
	waitFor("the badge counts it", `!`+inboxJS+`.getElementById("badge").hidden && `+inboxJS+`.getElementById("badge").textContent === "2"`)
	mu.Lock()
	defer mu.Unlock()
	if len(lastIDs) < 2 || lastIDs[0] != "" || lastIDs[len(lastIDs)-1] == "" {
		t.Fatalf("Last-Event-ID of the stream requests: %q", lastIDs)
	}
}
