package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/devmail"
)

// Workflows the Bridge serves.
const (
	wfSend    = "bench_send"     // one send step; the subject is the payload's tag
	wfRunSend = "bench_run_send" // a run step returning a record, then the send of wfSend
	wfDelay   = "bench_delay"    // a delay, then a run step that notes the time
)

// benchRecord is what the run step of wfRunSend returns: a record of about
// 200 bytes of JSON, as a workflow loads an order or a user before it
// sends.
type benchRecord struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Email     string   `json:"email"`
	Plan      string   `json:"plan"`
	Locale    string   `json:"locale"`
	Orders    []string `json:"orders"`
	Total     float64  `json:"total"`
	UpdatedAt string   `json:"updatedAt"`
}

func loadRecord(subscriberID string) benchRecord {
	return benchRecord{ID: subscriberID, Name: "Bench User " + subscriberID, Email: subscriberID + "@bench.herald.test",
		Plan: "pro", Locale: "en-GB", Orders: []string{"ord_0001", "ord_0002", "ord_0003"}, Total: 1234.5,
		UpdatedAt: "2026-11-24T02:00:00.000Z"}
}

// world is what outlives the herald serve processes: the SMTP sink and the
// Bridge, both in this process on loopback.
type world struct {
	cfg    Config
	sink   *devmail.Server
	stop   context.CancelFunc
	bridge *httptest.Server
	// handler is the Bridge handler of the current tenant (its signing
	// secret changes with every sync mode).
	handler atomic.Pointer[http.Handler]
	// collector receives every message the sink accepts.
	collector atomic.Pointer[collector]
	// timers records the delay runs' intended and actual resumes.
	timers atomic.Pointer[timerLog]
	// bridgeCalls counts the requests the Bridge received.
	bridgeCalls atomic.Int64

	client *http.Client
}

func newWorld(cfg Config) (*world, error) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError}))
	sink, err := devmail.NewServer(devmail.Config{SMTPAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		MaxMessages: 100, Logger: quiet})
	if err != nil {
		return nil, err
	}
	if err := sink.Listen(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	go sink.Run(ctx)
	w := &world{cfg: cfg, sink: sink, stop: cancel}
	sink.Inbox().OnMessage(func(m devmail.Message) {
		at := time.Now()
		if c := w.collector.Load(); c != nil {
			c.add(m, at)
		}
	})
	nf := http.NotFoundHandler()
	w.handler.Store(&nf)
	w.bridge = httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.bridgeCalls.Add(1)
		(*w.handler.Load()).ServeHTTP(rw, r)
	}))
	w.bridge.Config.ErrorLog = slog.NewLogLogger(quiet.Handler(), slog.LevelError)
	w.bridge.Start()
	w.client = &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{
		MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute,
		DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
	}}
	return w, nil
}

func (w *world) close() {
	w.bridge.Close()
	w.stop()
	w.client.CloseIdleConnections()
}

// registry returns the Bridge's workflows.
func (w *world) registry() *bridge.Registry {
	send := bridge.MustWorkflow(wfSend, func(ctx *bridge.Context, p struct {
		Tag string `json:"tag"`
	}) error {
		_, err := bridge.Send(ctx, "mail", "email", func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Subject: p.Tag, Body: "Hello " + ctx.Subscriber.SubscriberID + ", this is Herald's benchmark."}, nil
		})
		return err
	})
	runSend := bridge.MustWorkflow(wfRunSend, func(ctx *bridge.Context, p struct {
		Tag string `json:"tag"`
	}) error {
		rec, err := bridge.Run(ctx, "load", func(context.Context) (benchRecord, error) {
			return loadRecord(ctx.Subscriber.SubscriberID), nil
		})
		if err != nil {
			return err
		}
		_, err = bridge.Send(ctx, "mail", "email", func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Subject: p.Tag, Body: fmt.Sprintf("Hello %s, your %d orders come to %.2f. This is Herald's benchmark.",
				rec.Name, len(rec.Orders), rec.Total)}, nil
		})
		return err
	})
	delay := bridge.MustWorkflow(wfDelay, func(ctx *bridge.Context, p struct {
		DelayMs  int64 `json:"delayMs"`
		SpreadMs int64 `json:"spreadMs"`
	}) error {
		// The until instant is read from the clock only when the step is
		// first described (a recorded delay step is never re-evaluated),
		// so the Bridge knows the exact instant the run's RunSleeping
		// records and can measure the resume against it.
		delay := time.Duration(p.DelayMs) * time.Millisecond
		if p.SpreadMs > 0 {
			h := fnv.New32a()
			h.Write([]byte(ctx.Subscriber.SubscriberID))
			delay += time.Duration(int64(h.Sum32())%p.SpreadMs) * time.Millisecond
		}
		until := time.Now().Add(delay)
		if err := bridge.DelayUntil(ctx, "wait", until); err != nil {
			if tl := w.timers.Load(); tl != nil && errors.Is(err, bridge.ErrSuspended) {
				tl.slept(ctx.RunID, until)
			}
			return err
		}
		_, err := bridge.Run(ctx, "after", func(context.Context) (bool, error) {
			if tl := w.timers.Load(); tl != nil {
				tl.resumed(ctx.RunID, time.Now())
			}
			return true, nil
		})
		return err
	})
	return bridge.NewRegistry().MustRegister(send, runSend, delay)
}

// tenant is the benchmark's tenant on one herald serve data directory.
type tenant struct {
	w    *world
	base string // API base URL
	key  string
}

// setUpTenant creates a tenant on a fresh service, its email channel
// pointing at the sink and its Bridge pointing at this process.
func (w *world) setUpTenant(ctx context.Context, base, adminToken string) (*tenant, error) {
	admin := &tenant{w: w, base: base, key: adminToken}
	var tn struct{ APIKey string }
	if err := admin.call(ctx, "POST", "/v1/admin/tenants", map[string]string{"name": "Bench"}, &tn, http.StatusCreated); err != nil {
		return nil, err
	}
	t := &tenant{w: w, base: base, key: tn.APIKey}
	host, port, _ := net.SplitHostPort(w.sink.SMTPAddr())
	p, _ := strconv.Atoi(port)
	if err := t.call(ctx, "POST", "/v1/channels", map[string]any{"channelKey": "email-smtp",
		"config": map[string]any{"host": host, "port": p, "fromEmail": "bench@herald.test"}}, nil, http.StatusCreated); err != nil {
		return nil, err
	}
	if err := t.registerBridge(ctx); err != nil {
		return nil, err
	}
	return t, nil
}

// rebind points the tenant at a restarted service (same data directory).
func (t *tenant) rebind(base string) *tenant {
	return &tenant{w: t.w, base: base, key: t.key}
}

func (t *tenant) registerBridge(ctx context.Context) error {
	var b struct{ SigningSecret string }
	if err := t.call(ctx, "PUT", "/v1/bridge", map[string]string{"webhookUrl": t.w.bridge.URL}, &b, http.StatusOK); err != nil {
		return err
	}
	h := bridge.Serve(t.w.registry(), bridge.Options{SigningKey: b.SigningSecret})
	t.w.handler.Store(&h)
	return nil
}

// httpError is an unexpected answer.
type httpError struct {
	method, path string
	status       int
	body         string
}

func (e *httpError) Error() string {
	return fmt.Sprintf("%s %s: %d %s", e.method, e.path, e.status, e.body)
}

// call sends a request with the tenant's key and decodes a JSON answer
// into out (when not nil); any status not in want is an *httpError.
func (t *tenant) call(ctx context.Context, method, path string, body, out any, want ...int) error {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+t.key)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := t.w.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	ok := false
	for _, s := range want {
		ok = ok || resp.StatusCode == s
	}
	if !ok {
		if len(data) > 300 {
			data = data[:300]
		}
		return &httpError{method, path, resp.StatusCode, string(data)}
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// collector counts the messages of one scenario: those whose subject
// starts with its tag.
type collector struct {
	tag    string
	prefix bool // match subjects starting with tag (else equal)

	mu     sync.Mutex
	count  int
	recips map[string]int
	// subjects counts the messages per subject; arrivals holds each
	// subject's first arrival.
	subjects map[string]int
	arrivals map[string]time.Time
	// distinctTarget, when positive, is the number of distinct recipients
	// whose reaching sets distinctAt and closes allThere.
	distinctTarget int
	distinctAt     time.Time
	allThere       chan struct{}
	// firstID, when not nil, holds each recipient's first Message-ID;
	// sameID and otherID count the later copies that carry it, or another.
	firstID         map[string]string
	sameID, otherID int
	first           time.Time
	last            time.Time
	others          int
	waiters         map[string]chan time.Time // exact subject → arrival
	threshold       int
	reached         chan struct{}
	// tenths holds when the distinct recipients reached each tenth of
	// threshold (a positive threshold of at least 10), in order.
	tenths []time.Time
}

func newCollector(tag string, prefix bool, threshold int) *collector {
	return &collector{tag: tag, prefix: prefix, recips: map[string]int{}, waiters: map[string]chan time.Time{},
		subjects: map[string]int{}, arrivals: map[string]time.Time{}, allThere: make(chan struct{}),
		threshold: threshold, reached: make(chan struct{})}
}

func (c *collector) add(m devmail.Message, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	match := m.Subject == c.tag || c.prefix && len(m.Subject) >= len(c.tag) && m.Subject[:len(c.tag)] == c.tag
	if !match {
		c.others++
		return
	}
	c.count++
	for _, to := range m.To {
		c.recips[to]++
		if c.firstID != nil {
			switch id, ok := c.firstID[to]; {
			case !ok:
				c.firstID[to] = m.MessageID
			case id == m.MessageID:
				c.sameID++
			default:
				c.otherID++
			}
		}
		if c.recips[to] == 1 && c.threshold >= 10 && len(c.tenths) < 10 &&
			len(c.recips) == (len(c.tenths)+1)*c.threshold/10 {
			c.tenths = append(c.tenths, at)
		}
		if c.recips[to] == 1 && len(c.recips) == c.distinctTarget {
			c.distinctAt = at
			close(c.allThere)
		}
	}
	if c.subjects[m.Subject]++; c.subjects[m.Subject] == 1 {
		c.arrivals[m.Subject] = at
	}
	if c.first.IsZero() {
		c.first = at
	}
	c.last = at
	if ch, ok := c.waiters[m.Subject]; ok {
		delete(c.waiters, m.Subject)
		ch <- at
	}
	if c.count == c.threshold {
		close(c.reached)
	}
}

// expect registers a waiter for the message with subject, before the
// trigger that sends it.
func (c *collector) expect(subject string) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.mu.Lock()
	c.waiters[subject] = ch
	c.mu.Unlock()
	return ch
}

// snapshot returns the count so far.
func (c *collector) snapshot() (count int, last time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count, c.last
}

// check returns how many recipients got more than one message, and how
// many distinct recipients got one.
func (c *collector) check() (duplicates, distinct int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.recips {
		if n > 1 {
			duplicates += n - 1
		}
	}
	return duplicates, len(c.recips)
}

// timerLog records, per delay run, the instant its delay ends and the
// instant the step after it ran (the first time).
type timerLog struct {
	mu      sync.Mutex
	until   map[string]time.Time
	resumes map[string]time.Time
	early   int
	target  int
	done    chan struct{}
}

func newTimerLog(target int) *timerLog {
	return &timerLog{until: map[string]time.Time{}, resumes: map[string]time.Time{}, target: target, done: make(chan struct{})}
}

func (l *timerLog) slept(runID string, until time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.until[runID] = until
}

func (l *timerLog) resumed(runID string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.resumes[runID]; ok {
		return
	}
	l.resumes[runID] = at
	if len(l.resumes) == l.target {
		close(l.done)
	}
}

func (l *timerLog) counts() (sleeping, resumed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.until), len(l.resumes)
}
