package httpapi_test

import (
	"context"
	"fmt"
	"maps"
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
	"github.com/heraldhq/herald/internal/testwait"
)

// inboxJS reaches into the component's shadow DOM.
const inboxJS = `document.querySelector("herald-inbox").shadowRoot`

// browserWait only guards against a hang: each wait is on a condition in
// the page, which a loaded machine makes slower, never false. A broken
// component fails the wait (after browserWait) naming what it waited for.
const browserWait = 2 * time.Minute

// waitInPage polls a JavaScript predicate in the tab until it holds.
func waitInPage(t *testing.T, tab context.Context, what, predicate string) {
	t.Helper()
	if _, err := chromedp.Run(tab, chromedp.Poll[bool](predicate, chromedp.WithPollingTimeout(browserWait))); err != nil {
		state, _ := chromedp.Run(tab, chromedp.Evaluate[string](`(() => { try { return `+inboxJS+`.getElementById("panel").innerText + " | badge " + `+
			inboxJS+`.getElementById("badge").textContent } catch (e) { return String(e) } })()`))
		t.Fatalf("%s: %v (component: %q)", what, err, state)
	}
}

// badgeJS is a predicate: the badge shows want unread, or is hidden ("").
func badgeJS(want string) string {
	if want == "" {
		return inboxJS + `.getElementById("badge").hidden`
	}
	return `!` + inboxJS + `.getElementById("badge").hidden && ` + inboxJS + `.getElementById("badge").textContent === "` + want + `"`
}

// probeJS wraps EventSource and fetch in the page so that a test can wait
// on what the component has handled: window.probe.streamCounts counts the
// stream's counts events and lastStreamID is the last one's id (what the
// browser sends as Last-Event-ID); countsAnswers counts the answers of GET
// /v1/inbox/counts. The probe's listener is the first of its event, and
// its fetch hook is settled just before the component's own continuation
// (microtasks run before the next evaluation), so once a count moves, the
// component has handled the event or answer.
const probeJS = `(() => {
  window.probe = { streamCounts: 0, lastStreamID: "", countsAnswers: 0 };
  const Source = window.EventSource;
  window.EventSource = class extends Source {
    constructor(...args) {
      super(...args);
      this.addEventListener("counts", (e) => { probe.streamCounts++; probe.lastStreamID = e.lastEventId; });
    }
  };
  const fetch = window.fetch;
  window.fetch = async (...args) => {
    const res = await fetch(...args);
    if (String(args[0]).includes("/v1/inbox/counts")) {
      const json = res.json.bind(res);
      res.json = () => json().finally(() => { probe.countsAnswers++; });
    }
    return res;
  };
})()`

// openProbedInbox opens the demo page of base, installs probeJS and then
// shows the inbox of token, as a person pasting it would.
func openProbedInbox(t *testing.T, tab context.Context, base, token string) {
	t.Helper()
	if err := chromedp.Do(tab, chromedp.Navigate(base+"/inbox/demo?open")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(tab, chromedp.Evaluate[any](probeJS+`;
document.getElementById("token").value = "`+token+`";
document.getElementById("form").requestSubmit();`)); err != nil {
		t.Fatal(err)
	}
}

// TestInboxComponentInBrowser: the <herald-inbox> component in a real
// headless Chromium, on the demo page, against the service: the badge
// shows the unread count; a message sent through a trigger appears
// without a reload; clicking it marks it read and the badge drops; "Mark
// all read" clears it. A screenshot is left for a person to look at.
func TestInboxComponentInBrowser(t *testing.T) {
	t.Parallel() // a browser and a service of its own: beside the others
	f := newInboxFixture(t, testherald.Options{}, "ada")
	f.send("ada", "Your export is ready")
	f.send("ada", "Bob commented on your post")
	tok := f.token("ada")
	tab := testbrowser.New(t)
	if err := chromedp.Do(tab, chromedp.Navigate(f.h.URL()+"/inbox/demo?open&token="+tok)); err != nil {
		t.Fatal(err)
	}
	waitFor := func(what, predicate string) {
		t.Helper()
		waitInPage(t, tab, what, predicate)
	}
	badge := badgeJS
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
	t.Parallel() // a browser and a service of its own: beside the others
	f := newInboxFixture(t, testherald.Options{}, "ada")
	f.send("ada", "Before the drop")
	tok := f.token("ada")
	rp := f.reverseProxy()
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
	openProbedInbox(t, tab, proxy.URL, tok)
	waitFor := func(what, predicate string) {
		t.Helper()
		waitInPage(t, tab, what, predicate)
	}
	streamRequests := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(lastIDs)
	}
	items := inboxJS + `.querySelectorAll("li.item")`
	waitFor("the first message is listed", items+`.length === 1`)
	// The stream's first counts event has been handled: the browser holds
	// its id, to send as Last-Event-ID when it reconnects.
	waitFor("the stream's first counts event", `probe.lastStreamID !== ""`)

	mu.Lock()
	gate = make(chan struct{})
	mu.Unlock()
	proxy.CloseClientConnections()
	f.send("ada", "Sent while the stream was down")
	// The browser's reconnection is held at the gate: until it is let
	// through, the component must not show the message.
	testwait.For(t, "the component to reconnect its stream", func() bool { return streamRequests() >= 2 })
	if n, _ := chromedp.Run(tab, chromedp.Evaluate[int](items+`.length`)); n != 1 {
		t.Fatalf("%d messages shown while the stream was held off", n)
	}
	mu.Lock()
	close(gate)
	gate = nil
	mu.Unlock()
	waitFor("the missed message appears without a reload", items+`.length === 2 && `+items+`[0].innerText.includes("Sent while the stream was down")`)
	waitFor("the badge counts it", badgeJS("2"))
	mu.Lock()
	defer mu.Unlock()
	if len(lastIDs) < 2 || lastIDs[0] != "" || lastIDs[len(lastIDs)-1] == "" {
		t.Fatalf("Last-Event-ID of the stream requests: %q", lastIDs)
	}
}

// TestInboxComponentKeepsTheStreamsNewerCounts: an answer of GET
// /v1/inbox/counts that the component asked for before the stream
// brought newer counts must not replace them. The answer and the stream
// come over different connections, so on a loaded machine a stale answer
// may be handled last; the badge then showed it until the next change.
// Here a proxy holds the answer (computed at once, before a new message)
// until the stream's counts for that message are shown.
func TestInboxComponentKeepsTheStreamsNewerCounts(t *testing.T) {
	t.Parallel() // a browser and a service of its own: beside the others
	f := newInboxFixture(t, testherald.Options{}, "ada")
	f.send("ada", "First")
	f.send("ada", "Second")
	tok := f.token("ada")
	rp := f.reverseProxy()
	var (
		mu       sync.Mutex
		hold     bool
		computed = make(chan struct{}, 1) // a held answer was computed upstream
		release  = make(chan struct{})    // lets the held answer through
	)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		held := hold && r.URL.Path == "/v1/inbox/counts"
		mu.Unlock()
		if !held {
			rp.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		rp.ServeHTTP(rec, r)
		computed <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		maps.Copy(w.Header(), rec.Header())
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	}))
	t.Cleanup(proxy.Close)

	tab := testbrowser.New(t)
	openProbedInbox(t, tab, proxy.URL, tok)
	items := inboxJS + `.querySelectorAll("li.item")`
	waitInPage(t, tab, "both messages and the stream's counts", items+`.length === 2 && probe.streamCounts > 0 && `+badgeJS("2"))

	// Read one: the component asks for the counts (1 unread), and the
	// answer is held.
	mu.Lock()
	hold = true
	mu.Unlock()
	answers, err := chromedp.Run(tab, chromedp.Evaluate[int](`probe.countsAnswers`))
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(tab, chromedp.Click(chromedp.JSPath(items+`[0]`))); err != nil {
		t.Fatal(err)
	}
	select {
	case <-computed:
	case <-time.After(browserWait):
		t.Fatal("the component did not ask for its counts after a read")
	}
	mu.Lock()
	hold = false
	mu.Unlock()
	// A message comes: the stream's counts say 2 unread.
	f.send("ada", "Third")
	waitInPage(t, tab, "the new message and the stream's counts", items+`.length === 3 && `+badgeJS("2"))
	// The stale answer (1 unread) is let through and handled; the badge
	// keeps the stream's newer count.
	close(release)
	waitInPage(t, tab, "the held answer is handled", fmt.Sprintf(`probe.countsAnswers > %d`, answers))
	if badge, err := chromedp.Run(tab, chromedp.Evaluate[string](inboxJS+`.getElementById("badge").textContent`)); err != nil || badge != "2" {
		t.Fatalf("badge %q after a stale counts answer, want the stream's 2 (%v)", badge, err)
	}
	if c := f.counts(tok); c.Unread != 2 {
		t.Fatalf("the service counts %d unread", c.Unread)
	}
}

// reverseProxy is a proxy to the service, as a browser may meet one
// between it and Herald: it passes each event of a stream on at once.
func (f *inboxFixture) reverseProxy() *httputil.ReverseProxy {
	upstream, err := url.Parse(f.h.URL())
	if err != nil {
		f.t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(upstream)
	rp.FlushInterval = -1
	return rp
}
