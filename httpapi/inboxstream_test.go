package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testherald"
)

// sseEvent is one event (or comment) read from a stream.
type sseEvent struct {
	ID, Event, Data string
	Comment         bool
	At              time.Time
}

// sseClient reads one event stream (GET /v1/inbox/stream, GET /v1/tail) into Events until the stream
// ends (Events is then closed).
type sseClient struct {
	Events chan sseEvent
	Status int
	cancel context.CancelFunc
}

// openStream opens the stream with the token as ?token= (as EventSource
// does) and lastID as Last-Event-ID when set.
func (f *inboxFixture) openStream(token, lastID string) *sseClient {
	f.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", f.h.URL()+"/v1/inbox/stream?token="+token, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	return dialSSE(f.t, req, cancel)
}

// dialSSE sends req, the request of an event stream made with the
// context cancel ends, and reads its answer's events.
func dialSSE(t testing.TB, req *http.Request, cancel context.CancelFunc) *sseClient {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	c := &sseClient{Events: make(chan sseEvent, 256), Status: res.StatusCode, cancel: cancel}
	t.Cleanup(c.Close)
	if res.StatusCode != http.StatusOK {
		res.Body.Close()
		close(c.Events)
		return c
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	go func() {
		defer close(c.Events)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.Event != "" || ev.Comment {
					ev.At = time.Now()
					c.Events <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, ":"):
				ev.Comment = true
			case strings.HasPrefix(line, "id: "):
				ev.ID = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev.Event = line[7:]
			case strings.HasPrefix(line, "data: "):
				ev.Data = line[6:]
			}
		}
	}()
	return c
}

// Close ends the client's request.
func (c *sseClient) Close() { c.cancel() }

// next returns the next event that is not a comment, failing the test
// after timeout.
func (c *sseClient) next(t testing.TB, timeout time.Duration) sseEvent {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case ev, ok := <-c.Events:
			if !ok {
				t.Fatal("the stream ended")
			}
			if !ev.Comment {
				return ev
			}
		case <-deadline:
			t.Fatalf("no event in %v", timeout)
		}
	}
}

// expect returns the next event, failing unless it is named name.
func (c *sseClient) expect(t testing.TB, name string) sseEvent {
	t.Helper()
	ev := c.next(t, 20*time.Second)
	if ev.Event != name {
		t.Fatalf("event %q (%s), want %q", ev.Event, ev.Data, name)
	}
	if _, err := strconv.ParseUint(ev.ID, 10, 64); err != nil {
		t.Fatalf("event %q has id %q", ev.Event, ev.ID)
	}
	return ev
}

func (c *sseClient) expectCounts(t testing.TB, unread, unseen int) sseEvent {
	t.Helper()
	ev := c.expect(t, "counts")
	var got inboxCounts
	if err := json.Unmarshal([]byte(ev.Data), &got); err != nil || got.Unread != unread || got.Unseen != unseen {
		t.Fatalf("counts %s, want unread %d unseen %d", ev.Data, unread, unseen)
	}
	return ev
}

func (c *sseClient) expectMessage(t testing.TB, body string) (inboxMessage, sseEvent) {
	t.Helper()
	ev := c.expect(t, "message")
	var m inboxMessage
	if err := json.Unmarshal([]byte(ev.Data), &m); err != nil || m.Body != body {
		t.Fatalf("message %s, want body %q", ev.Data, body)
	}
	return m, ev
}

// TestInboxStreamLive: a message stored while a client listens reaches it
// within 100 ms of being stored (measured from the message's createdAt,
// the instant its event was appended, to the client's read), followed by
// the counts; marks send the counts.
func TestInboxStreamLive(t *testing.T) {
	f := newInboxFixture(t, testherald.Options{}, "ada")
	tok := f.token("ada")
	c := f.openStream(tok, "")
	c.expectCounts(t, 0, 0)
	var worst time.Duration
	for i := range 5 {
		body := "live " + strconv.Itoa(i)
		f.trigger("ada", body)
		m, ev := c.expectMessage(t, body)
		created, err := time.Parse(time.RFC3339Nano, m.CreatedAt)
		if err != nil {
			t.Fatal(err)
		}
		// createdAt has millisecond precision: the latency is at most
		// this plus one millisecond.
		latency := ev.At.Sub(created)
		worst = max(worst, latency)
		t.Logf("message %d: stored → received by the stream client in %v", i, latency.Round(100*time.Microsecond))
		c.expectCounts(t, i+1, i+1)
	}
	t.Logf("worst stored → received latency over 5 messages: %v", worst.Round(100*time.Microsecond))
	if worst > 100*time.Millisecond {
		t.Fatalf("a live message took %v to arrive, want at most 100ms", worst)
	}
	msgs := f.list(tok, "unread")
	f.mark(tok, msgs[0].MessageID, "read")
	c.expectCounts(t, 4, 4)
	f.mark(tok, msgs[1].MessageID, "seen")
	c.expectCounts(t, 4, 3)
	f.call("POST", "/v1/inbox/read-all", tok, nil, http.StatusOK)
	c.expectCounts(t, 0, 0)
}

// TestInboxStreamResume: a client that reconnects with Last-Event-ID is
// sent exactly the messages stored while it was away, in order, then the
// live ones; one that reconnects with the id of its last event, when
// nothing was missed, is sent no message again.
func TestInboxStreamResume(t *testing.T) {
	f := newInboxFixture(t, testherald.Options{}, "ada")
	tok := f.token("ada")
	c := f.openStream(tok, "")
	c.expectCounts(t, 0, 0)
	f.trigger("ada", "seen live")
	_, ev := c.expectMessage(t, "seen live")
	last := c.expectCounts(t, 1, 1).ID
	if last != ev.ID {
		t.Fatalf("counts id %s after message id %s", last, ev.ID)
	}
	c.Close()

	for _, b := range []string{"missed 1", "missed 2", "missed 3"} {
		f.send("ada", b)
	}
	r := f.openStream(tok, last)
	var ids []uint64
	for _, b := range []string{"missed 1", "missed 2", "missed 3"} {
		_, ev := r.expectMessage(t, b)
		id, _ := strconv.ParseUint(ev.ID, 10, 64)
		ids = append(ids, id)
	}
	prev, _ := strconv.ParseUint(last, 10, 64)
	for _, id := range ids {
		if id <= prev {
			t.Fatalf("ids %v not increasing after %s", ids, last)
		}
		prev = id
	}
	after := r.expectCounts(t, 4, 4).ID
	f.trigger("ada", "live again")
	r.expectMessage(t, "live again")
	after = r.expectCounts(t, 5, 5).ID
	r.Close()

	// Nothing missed: no message is sent again.
	again := f.openStream(tok, after)
	again.expectCounts(t, 5, 5)
	f.trigger("ada", "after the resume")
	again.expectMessage(t, "after the resume")

	// An id beyond the log's end (a log that was replaced) is forgotten:
	// the client still gets the live messages.
	future := f.openStream(tok, "999999999")
	future.expectCounts(t, 6, 6)
	f.trigger("ada", "for the future")
	future.expectMessage(t, "for the future")
	future.Close()
	again.Close()

	// A client with no Last-Event-ID gets only what comes after it.
	fresh := f.openStream(tok, "")
	fresh.expectCounts(t, 7, 7)
	f.trigger("ada", "newest")
	fresh.expectMessage(t, "newest")
}

// TestInboxStreamBounds: a subscriber holds at most 8 streams (the 9th is
// 429 too_many_streams); an idle stream writes a comment line every
// heartbeat; a shutdown ends open streams at once instead of waiting for
// them.
func TestInboxStreamBounds(t *testing.T) {
	f := newInboxFixture(t, testherald.Options{InboxHeartbeat: 100 * time.Millisecond}, "ada")
	tok := f.token("ada")
	var open []*sseClient
	for range 8 {
		c := f.openStream(tok, "")
		if c.Status != http.StatusOK {
			t.Fatalf("stream answered %d", c.Status)
		}
		c.expectCounts(t, 0, 0)
		open = append(open, c)
	}
	r := f.h.Do("GET", "/v1/inbox/stream", tok, nil)
	expectCode(t, r, http.StatusTooManyRequests, "too_many_streams")
	if r.Header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
	open[7].Close()
	time.Sleep(50 * time.Millisecond)
	c := f.openStream(tok, "")
	c.expectCounts(t, 0, 0)

	comments := 0
	deadline := time.After(550 * time.Millisecond)
wait:
	for {
		select {
		case ev := <-c.Events:
			if ev.Comment {
				comments++
			}
		case <-deadline:
			break wait
		}
	}
	if comments < 3 {
		t.Fatalf("%d comment lines in 550ms with a 100ms heartbeat", comments)
	}

	began := time.Now()
	f.h.Stop()
	took := time.Since(began)
	t.Logf("shutdown with 8 open streams took %v", took)
	if took > 3*time.Second {
		t.Fatalf("shutdown waited %v for the streams", took)
	}
	select {
	case _, ok := <-c.Events:
		for ok {
			_, ok = <-c.Events
		}
	case <-time.After(2 * time.Second):
		t.Fatal("a stream outlived the shutdown")
	}
}

// TestInboxStreamOutlivesServerTimeouts: a stream lasts longer than the
// server's read and write timeouts, and still delivers.
func TestInboxStreamOutlivesServerTimeouts(t *testing.T) {
	f := newInboxFixture(t, testherald.Options{InboxHeartbeat: 200 * time.Millisecond,
		Env: map[string]string{"HERALD_HTTP_READ_TIMEOUT": "400ms", "HERALD_HTTP_WRITE_TIMEOUT": "400ms"}}, "ada")
	c := f.openStream(f.token("ada"), "")
	c.expectCounts(t, 0, 0)
	time.Sleep(1200 * time.Millisecond)
	f.trigger("ada", "still here")
	c.expectMessage(t, "still here")
}

// TestInboxStreamsShareThePoolAmongTenants: the subscribers of one tenant
// hold at most half of a process's streams (here 10 of 20, with
// HERALD_MAX_CONNS=40); beyond it their streams are 429
// too_many_streams, while another tenant's subscriber still opens one.
func TestInboxStreamsShareThePoolAmongTenants(t *testing.T) {
	f := newInboxFixture(t, testherald.Options{Env: map[string]string{"HERALD_MAX_CONNS": "40"}}, "ada", "bob")
	ada, bob := f.token("ada"), f.token("bob")
	for i := range 10 {
		tok := ada
		if i >= 8 { // a subscriber holds 8 at most
			tok = bob
		}
		c := f.openStream(tok, "")
		if c.Status != http.StatusOK {
			t.Fatalf("stream %d of the tenant answered %d", i+1, c.Status)
		}
		c.expectCounts(t, 0, 0)
	}
	r := f.h.Do("GET", "/v1/inbox/stream", bob, nil)
	expectCode(t, r, http.StatusTooManyRequests, "too_many_streams")
	if r.Header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}

	_, key := f.h.Tenant("Other Co")
	f.call("PUT", "/v1/subscribers/cy", key, map[string]any{}, http.StatusCreated)
	var tok struct{ Token string }
	f.call("POST", "/v1/subscribers/cy/inbox-tokens", key, nil, http.StatusCreated).JSON(t, &tok)
	c := f.openStream(tok.Token, "")
	if c.Status != http.StatusOK {
		t.Fatalf("another tenant's stream answered %d", c.Status)
	}
	c.expectCounts(t, 0, 0)
}
