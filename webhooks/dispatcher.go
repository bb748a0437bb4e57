package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/egress"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
	"github.com/heraldhq/herald/secrets"
	"github.com/heraldhq/herald/standardwebhooks"
)

// Consumer names, shared by every herald process.
const (
	// sourceConsumer prefixes the source consumers' names: one per
	// aggregate followed (…-run, …-delivery, …-inbox).
	sourceConsumer = "herald-webhooks-source"
	sendConsumer   = "herald-webhooks"
)

const (
	// sendTimeout: a 2xx answer within it is delivered.
	sendTimeout = 10 * time.Second
	// defaultAckWait is how soon the events and messages a lost process
	// held are taken again; a send under way reports progress every third
	// of it, so a send is not taken twice.
	defaultAckWait = 15 * time.Second
	// perEndpoint bounds one process's sends in flight to one endpoint.
	perEndpoint = 4
	// busyDelay is how long a message for an endpoint at its limit waits
	// in the stream before it is taken again (plus up to as much jitter).
	busyDelay = 500 * time.Millisecond
	// maxInFlight bounds the messages one process holds unacknowledged.
	maxInFlight = 1024
	// sourceWorkers turn events into messages side by side.
	sourceWorkers = 4
	// maxAnswer is how much of an answer is read (and thrown away) so the
	// connection can be reused.
	maxAnswer = 64 << 10
)

// Renderer returns the data of a webhook message: the resource ref names,
// as the API shows it (JSON). It fails with projections.ErrNotFound when
// the resource is gone (an erased subscriber's inbox message).
type Renderer func(tenant string, ref Ref) (json.RawMessage, error)

// Config configures a Dispatcher. Required unless said otherwise.
type Config struct {
	Log    *eventlog.Log
	Store  *projections.Store
	Keys   *secrets.Keyring
	Render Renderer
	// RetryBase is the delay before the first retry. Zero: 5s.
	RetryBase time.Duration
	// Egress is the outbound policy: a refused destination fails the
	// message terminally. Zero: private egress refused.
	Egress egress.Policy
	// Logger receives the dispatcher's logs. Zero: slog.Default().
	Logger *slog.Logger
	// AckWait is how soon the work a lost process held (an event being
	// turned into messages, a message being sent) is taken by another.
	// Zero: 15s.
	AckWait time.Duration
	// Attempted is called with the outcome of every attempt
	// (events.WebhookSucceeded or events.WebhookFailed): a metrics hook.
	// Zero: none.
	Attempted func(outcome string)
	// Restarted hears of each consumption of the sender started anew
	// after it failed or stalled (see eventlog.Consume). Zero: none.
	Restarted func(consumer, reason string)
}

// Dispatcher turns events into webhook messages and sends them. Create it
// with New; Run it once.
type Dispatcher struct {
	cfg    Config
	client *http.Client
	log    *slog.Logger

	// sends counts the sends under way; Add only under mu while not
	// stopped, so that Run's Wait sees every one.
	sends sync.WaitGroup

	mu       sync.Mutex
	inFlight map[string]int // tenant\x00webhookId → sends under way here
	stopped  bool           // Run is stopping: no new send starts
}

// New returns a Dispatcher.
func New(cfg Config) *Dispatcher {
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.AckWait <= 0 {
		cfg.AckWait = defaultAckWait
	}
	if cfg.Attempted == nil {
		cfg.Attempted = func(string) {}
	}
	t := cfg.Egress.Transport()
	t.MaxIdleConnsPerHost = perEndpoint
	t.ResponseHeaderTimeout = sendTimeout
	return &Dispatcher{cfg: cfg, log: cfg.Logger, inFlight: map[string]int{},
		client: &http.Client{Transport: t, Timeout: sendTimeout, CheckRedirect: egress.NoRedirect}}
}

// Run consumes events and webhook messages until ctx ends, then stops
// taking work; sends under way are cut short and their messages given back
// to the stream unrecorded.
func (d *Dispatcher) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	taken := make(chan jetstream.Msg, sourceWorkers)
	// The sender's consumption outlives a cluster electing its leaders
	// and the loss of a node (eventlog.Consume): the dispatcher must not
	// stop the process. A connection closed for good is the service's to
	// report.
	snd, err := eventlog.Consume(ctx, d.cfg.Log.JetStream(), eventlog.Durable{
		Stream: eventlog.WorkStream,
		Config: jetstream.ConsumerConfig{
			Durable:       sendConsumer,
			FilterSubject: workPrefix + ">",
			AckPolicy:     jetstream.AckExplicitPolicy,
			AckWait:       d.cfg.AckWait,
			MaxDeliver:    -1,
			MaxAckPending: maxInFlight,
		},
		Handler:   func(m jetstream.Msg) { d.take(ctx, m) },
		Options:   []jetstream.PullConsumeOpt{jetstream.PullMaxMessages(256), jetstream.PullHeartbeat(2 * time.Second)},
		Logger:    d.log,
		Restarted: d.cfg.Restarted,
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("webhooks: consumer %s: %w", sendConsumer, err)
	}
	// Events taken but not handled when ctx ends are given back at once,
	// not after AckWait.
	srcCtx, stopSources := context.WithCancel(ctx)
	defer stopSources()
	f := &follower{d: d, taken: taken, followed: map[string][]jetstream.ConsumeContext{}}
	wg.Add(1)
	go func() {
		defer wg.Done()
		f.run(srcCtx)
	}()
	for range sourceWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case m := <-taken:
					d.fanOut(ctx, m)
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	<-ctx.Done()
	stopSources()
	snd.Stop()
	d.mu.Lock()
	d.stopped = true
	d.mu.Unlock()
	d.sends.Wait()
	wg.Wait()
	for {
		select {
		case m := <-taken:
			_ = m.Nak()
		default:
			return nil
		}
	}
}

// fanOut turns one event into the webhook messages of the tenant's
// endpoints, then acknowledges it. A failure leaves it to be delivered
// again.
func (d *Dispatcher) fanOut(ctx context.Context, m jetstream.Msg) {
	if err := d.publishFor(ctx, m); err != nil {
		if ctx.Err() != nil {
			_ = m.Nak()
			return
		}
		d.log.Warn("webhooks: event not turned into messages; retried", "subject", m.Subject(), "err", err)
		_ = m.NakWithDelay(time.Second)
		return
	}
	_ = m.Ack()
}

func (d *Dispatcher) publishFor(ctx context.Context, m jetstream.Msg) error {
	hookTypes := sourceTypes[m.Headers().Get(eventlog.HeaderType)]
	if len(hookTypes) == 0 {
		return nil
	}
	meta, err := m.Metadata()
	if err != nil {
		return err
	}
	seq := meta.Sequence.Stream
	if err := d.cfg.Store.WaitFor(ctx, seq); err != nil {
		return err
	}
	hooks, _, err := d.cfg.Store.Webhooks(m.Headers().Get(eventlog.HeaderTenant), projections.Page{Limit: 1000})
	if err != nil {
		return err
	}
	hooks = slices.DeleteFunc(hooks, func(w projections.Webhook) bool {
		return !w.Enabled || w.Seq >= seq || !slices.ContainsFunc(hookTypes, w.Subscribed)
	})
	if len(hooks) == 0 {
		return nil
	}
	// The consumer delivers headers only: the few events some endpoint
	// wants are read whole.
	ev, ok, err := d.cfg.Log.EventAt(ctx, seq)
	if err != nil {
		if errors.Is(err, events.ErrBadEvent) {
			d.log.Error("webhooks: an event that does not decode is skipped", "seq", seq, "err", err)
			return nil
		}
		return err
	}
	if !ok {
		return nil // erased since
	}
	rs, err := refs(ev)
	if err != nil {
		d.log.Error("webhooks: an event that does not decode is skipped", "seq", ev.Seq, "type", ev.Type, "err", err)
		return nil
	}
	var out []eventlog.WorkMsg
	for _, w := range hooks {
		for _, r := range rs {
			if !w.Subscribed(r.Type) {
				continue
			}
			wm := message{Tenant: ev.TenantID, WebhookID: w.WebhookID, ID: messageID(w.WebhookID, ev.ID, r.MessageID),
				Ref: r, Seq: ev.Seq, At: ev.At}
			data, err := json.Marshal(wm)
			if err != nil {
				return err
			}
			out = append(out, eventlog.WorkMsg{Subject: workSubject(ev.TenantID, w.WebhookID), Data: data, MsgID: wm.ID})
		}
	}
	if len(out) == 0 {
		return nil
	}
	return d.cfg.Log.EnqueueBatch(ctx, out)
}

// take starts sending one message, or gives it back to the stream for a
// moment when its endpoint is at its limit in this process. It never
// blocks: it runs on the consumer's delivery goroutine.
func (d *Dispatcher) take(ctx context.Context, m jetstream.Msg) {
	var wm message
	if err := json.Unmarshal(m.Data(), &wm); err != nil || wm.Tenant == "" || wm.WebhookID == "" {
		d.log.Error("webhooks: a work message that does not decode is dropped", "subject", m.Subject(), "err", err)
		_ = m.Term()
		return
	}
	k := wm.Tenant + "\x00" + wm.WebhookID
	d.mu.Lock()
	if d.stopped {
		d.mu.Unlock()
		_ = m.Nak()
		return
	}
	busy := d.inFlight[k] >= perEndpoint
	if !busy {
		d.inFlight[k]++
		d.sends.Add(1)
	}
	d.mu.Unlock()
	if busy {
		_ = m.NakWithDelay(busyDelay + rand.N(busyDelay))
		return
	}
	go func() {
		defer d.sends.Done()
		defer func() {
			d.mu.Lock()
			if d.inFlight[k]--; d.inFlight[k] <= 0 {
				delete(d.inFlight, k)
			}
			d.mu.Unlock()
		}()
		stop := eventlog.KeepAlive(m, d.cfg.AckWait/3)
		defer stop()
		d.send(ctx, m, wm)
	}()
}

// send makes one attempt of wm and settles m: acknowledged once the
// attempt is recorded (and its retry scheduled), given back when ctx ended
// or the log failed.
func (d *Dispatcher) send(ctx context.Context, m jetstream.Msg, wm message) {
	if err := d.cfg.Store.WaitFor(ctx, wm.Seq); err != nil {
		_ = m.Nak()
		return
	}
	w, err := d.cfg.Store.Webhook(wm.Tenant, wm.WebhookID)
	if errors.Is(err, projections.ErrNotFound) || (err == nil && !w.Enabled) {
		_ = m.Ack() // deleted or disabled: its messages are dropped
		return
	}
	if err != nil {
		d.retryLater(m, err)
		return
	}
	data, err := d.cfg.Render(wm.Tenant, wm.Ref)
	if errors.Is(err, projections.ErrNotFound) {
		d.log.Info("webhooks: the message's resource is gone; dropped", "tenant", wm.Tenant, "webhook", wm.WebhookID,
			"message", wm.ID, "type", wm.Ref.Type)
		_ = m.Ack()
		return
	}
	if err != nil {
		d.retryLater(m, err)
		return
	}
	body, err := json.Marshal(struct {
		Type      string          `json:"type"`
		Timestamp string          `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}{wm.Ref.Type, wm.At.UTC().Format("2006-01-02T15:04:05.000Z07:00"), data})
	if err != nil {
		d.retryLater(m, err)
		return
	}
	now := time.Now()
	sig, err := d.signature(wm.Tenant, w, wm.ID, now, body)
	if err != nil {
		d.retryLater(m, err)
		return
	}
	status, sendErr := d.post(ctx, w.URL, wm.ID, now, sig, body)
	if ctx.Err() != nil {
		_ = m.Nak() // cut short by a shutdown: sent again by whoever takes it
		return
	}
	n := wm.Attempts + 1
	ok := sendErr == nil && status >= 200 && status < 300
	terminal := errors.Is(sendErr, egress.ErrRefused)
	delay := backoff(d.cfg.RetryBase, n)
	final := ok || terminal || time.Now().Add(delay).After(wm.At.Add(retryWindow))
	outcome := events.WebhookSucceeded
	if !ok {
		outcome = events.WebhookFailed
		d.log.Info("webhooks: attempt failed", "tenant", wm.Tenant, "webhook", wm.WebhookID, "message", wm.ID,
			"attempt", n, "status", status, "err", egress.LogText(sendErr), "final", final)
	}
	if _, err := d.cfg.Log.Append(ctx, eventlog.Record{
		Subject: eventlog.Subject(wm.Tenant, eventlog.AggWebhookAttempts, wm.WebhookID),
		Type:    events.WebhookAttempted, Tenant: wm.Tenant,
		Data: events.WebhookAttemptedData{WebhookID: wm.WebhookID, MessageID: wm.ID, Type: wm.Ref.Type,
			Status: outcome, HTTPStatus: status, Attempt: n, Final: final, EventAt: wm.At, EventSeq: wm.Seq},
	}); err != nil {
		d.retryLater(m, err)
		return
	}
	d.cfg.Attempted(outcome)
	if !final {
		wm.Attempts = n
		next, _ := json.Marshal(wm)
		if err := d.cfg.Log.Schedule(ctx, schedSubject(wm.Tenant, wm.ID), m.Subject(), time.Now().Add(delay), next); err != nil {
			d.retryLater(m, err)
			return
		}
	}
	_ = m.Ack()
}

// retryLater gives m back to the stream after a failure of the service's
// own (the log, the projections, a secret that does not open).
func (d *Dispatcher) retryLater(m jetstream.Msg, err error) {
	d.log.Warn("webhooks: message not settled; retried", "subject", m.Subject(), "err", err)
	_ = m.NakWithDelay(time.Second)
}

// signature returns the webhook-signature value: the signature with the
// endpoint's secret, and with the secret a rotation replaced while it
// still signs.
func (d *Dispatcher) signature(tenant string, w projections.Webhook, id string, at time.Time, body []byte) (string, error) {
	sealed := []string{w.SealedSecret}
	if w.PreviousSealed != "" && at.Before(w.PreviousUntil) {
		sealed = append(sealed, w.PreviousSealed)
	}
	sigs := make([]string, 0, len(sealed))
	for _, s := range sealed {
		plain, err := d.cfg.Keys.Open(s, events.WebhookSecretAAD(tenant, w.WebhookID))
		if err != nil {
			return "", fmt.Errorf("webhooks: opening the secret of %s: %w", w.WebhookID, err)
		}
		secret, err := standardwebhooks.ParseSecret(string(plain))
		if err != nil {
			return "", err
		}
		sigs = append(sigs, secret.Sign(id, at, body))
	}
	return strings.Join(sigs, " "), nil
}

// post sends one attempt and returns the answer's status (0: none).
func (d *Dispatcher) post(ctx context.Context, url, id string, at time.Time, sig string, body []byte) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Herald-Webhooks/1")
	req.Header.Set(standardwebhooks.HeaderID, id)
	req.Header.Set(standardwebhooks.HeaderTimestamp, fmt.Sprint(at.Unix()))
	req.Header.Set(standardwebhooks.HeaderSignature, sig)
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return resp.StatusCode, err
	}
	return resp.StatusCode, nil
}
