package delivery_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"mime/quotedprintable"
	"net/http"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	gosmtp "github.com/emersion/go-smtp"

	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testherald"
	"github.com/heraldhq/herald/internal/testlog"
	"github.com/heraldhq/herald/internal/testsmtp"
)

// fixture is a whole herald service with one tenant, an email channel
// pointing at a loopback mail server and a subscriber "ada" with two
// email addresses.
type fixture struct {
	t            testing.TB
	h            *testherald.Herald
	dataDir      string
	tenant, key  string
	mail         *testsmtp.Server
	logs         *testlog.Buffer
	responses    []testherald.Response
	responsesMu  sync.Mutex
	channelExtra map[string]any
}

const (
	fromEmail = "noreply@herald.test"
	fromName  = "Herald Notifications"
	adaFirst  = "ada@example.com"
)

// newFixture starts the service and configures the channel; extra is
// merged into the channel config (username, password, ...).
func newFixture(t testing.TB, m *testsmtp.Server, secure bool, extra map[string]any) *fixture {
	t.Helper()
	return newFixtureLevel(t, m, secure, extra, slog.LevelDebug)
}

// newFixtureLevel is newFixture with the service logging at level.
func newFixtureLevel(t testing.TB, m *testsmtp.Server, secure bool, extra map[string]any, level slog.Level) *fixture {
	t.Helper()
	return newFixtureEnv(t, m, secure, extra, level, nil)
}

// newFixtureEnv is newFixtureLevel with HERALD_* variables for the service.
func newFixtureEnv(t testing.TB, m *testsmtp.Server, secure bool, extra map[string]any, level slog.Level, env map[string]string) *fixture {
	t.Helper()
	logs := &testlog.Buffer{}
	dir := t.TempDir()
	h := testherald.Start(t, testherald.Options{
		DataDir:     dir,
		Env:         env,
		Logger:      slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: level})),
		ProviderTLS: &tls.Config{RootCAs: m.Roots},
	})
	tenant, key := h.Tenant("Acme")
	f := &fixture{t: t, h: h, dataDir: dir, tenant: tenant, key: key, mail: m, logs: logs, channelExtra: extra}
	f.configureChannel(m.Port, secure, 201)
	f.tenantCall("PUT", "/v1/subscribers/ada", map[string]any{
		"contacts": map[string]any{"email": []string{adaFirst, "ada.second@example.com"}, "sms": []string{"+15550100"}},
	}, 201)
	return f
}

func (f *fixture) configureChannel(port int, secure bool, status int) {
	f.t.Helper()
	config := map[string]any{"host": "127.0.0.1", "port": port, "secure": secure,
		"fromEmail": fromEmail, "fromName": fromName}
	for k, v := range f.channelExtra {
		config[k] = v
	}
	f.tenantCall("POST", "/v1/channels", map[string]any{"channelKey": "email-smtp", "config": config}, status)
}

// tenantCall calls the tenant API and checks the status.
func (f *fixture) tenantCall(method, path string, body any, status int) testherald.Response {
	f.t.Helper()
	r := f.h.Do(method, path, f.key, body)
	f.keep(r)
	if r.Status != status {
		f.t.Fatalf("%s %s: %d %s, want %d", method, path, r.Status, r.Body, status)
	}
	return r
}

func (f *fixture) keep(r testherald.Response) {
	f.responsesMu.Lock()
	f.responses = append(f.responses, r)
	f.responsesMu.Unlock()
}

// internal calls POST /v1/deliver with the given headers (a missing
// value is not sent). It is safe to call from many goroutines.
func (f *fixture) internal(token, tenant string, body any) testherald.Response {
	var data []byte
	switch b := body.(type) {
	case string:
		data = []byte(b)
	default:
		var err error
		if data, err = json.Marshal(b); err != nil {
			panic(err)
		}
	}
	req, err := http.NewRequest("POST", f.h.URL()+"/v1/deliver", bytes.NewReader(data))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("x-herald-internal-token", token)
	}
	if tenant != "" {
		req.Header.Set("x-herald-tenant-id", tenant)
	}
	resp, err := f.h.Client.Do(req)
	if err != nil {
		return testherald.Response{Status: -1, Body: []byte(err.Error())}
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	r := testherald.Response{Status: resp.StatusCode, Header: resp.Header, Body: out}
	f.keep(r)
	return r
}

// deliver sends a well-formed request for the tenant.
func (f *fixture) deliver(body any) testherald.Response {
	return f.internal(f.h.InternalToken(), f.tenant, body)
}

// sendStep is the body of a send step with key runID:stepID.
func sendStep(runID, stepID string) map[string]any {
	return map[string]any{
		"idempotencyKey": runID + ":" + stepID, "runId": runID, "stepId": stepID,
		"subscriberId": "ada", "channel": "email",
		"content": map[string]any{"subject": "Welcome, Ada ✓", "body": "Hello Ada,\nyour account is ready."},
	}
}

type sendResult struct {
	AttemptID         string `json:"attemptId"`
	Status            string `json:"status"`
	ProviderMessageID string `json:"providerMessageId"`
}

func (f *fixture) mustSend(body any) sendResult {
	f.t.Helper()
	r := f.deliver(body)
	if r.Status != http.StatusOK {
		f.t.Fatalf("deliver: %d %s", r.Status, r.Body)
	}
	var res sendResult
	r.JSON(f.t, &res)
	var all map[string]any
	r.JSON(f.t, &all)
	if len(all) != 3 || res.Status != "sent" || !strings.HasPrefix(res.AttemptID, "att_") || res.ProviderMessageID == "" {
		f.t.Fatalf("SendResult = %s", r.Body)
	}
	return res
}

func expectError(t *testing.T, r testherald.Response, status int, code string) {
	t.Helper()
	if r.Status != status || r.ErrorCode() != code {
		t.Fatalf("got %d %s, want %d %s", r.Status, r.Body, status, code)
	}
}

type deliveryRow struct {
	AttemptID         string  `json:"attemptId"`
	IdempotencyKey    string  `json:"idempotencyKey"`
	RunID             string  `json:"runId"`
	StepID            string  `json:"stepId"`
	ChannelKey        string  `json:"channelKey"`
	Kind              string  `json:"kind"`
	Address           string  `json:"address"`
	Status            string  `json:"status"`
	ProviderMessageID *string `json:"providerMessageId"`
	Error             *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Reason    string `json:"reason"`
	CreatedAt string `json:"createdAt"`
}

// deliveries lists GET /v1/deliveries?runId=.
func (f *fixture) deliveries(runID string) []deliveryRow {
	f.t.Helper()
	r := f.tenantCall("GET", "/v1/deliveries?runId="+runID, nil, 200)
	var l struct {
		Data       []deliveryRow `json:"data"`
		NextCursor *string       `json:"nextCursor"`
	}
	r.JSON(f.t, &l)
	return l.Data
}

// parsed is a received message read back.
type parsed struct {
	header mail.Header
	body   string
}

func parseMail(t *testing.T, rcv testsmtp.Message) parsed {
	t.Helper()
	m, err := mail.ReadMessage(bytes.NewReader(rcv.Data))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(quotedprintable.NewReader(m.Body))
	if err != nil {
		t.Fatal(err)
	}
	return parsed{header: m.Header, body: string(body)}
}

func TestDeliverOverPlainSTARTTLSAndImplicitTLS(t *testing.T) {
	const user, pass = "herald-relay", "relay-Pa55-word"
	for _, tc := range []struct {
		name    string
		sec     testsmtp.Security
		auth    bool
		wantTLS bool
	}{
		{"plain", testsmtp.Plain, false, false},
		{"plain with AUTH", testsmtp.Plain, true, false},
		{"STARTTLS", testsmtp.StartTLS, false, true},
		{"STARTTLS with AUTH", testsmtp.StartTLS, true, true},
		{"implicit TLS", testsmtp.ImplicitTLS, false, true},
		{"implicit TLS with AUTH", testsmtp.ImplicitTLS, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := testsmtp.Options{Security: tc.sec}
			extra := map[string]any{}
			if tc.auth {
				opts.User, opts.Password = user, pass
				extra["username"], extra["password"] = user, pass
			}
			m := testsmtp.Start(t, opts)
			f := newFixture(t, m, tc.sec == testsmtp.ImplicitTLS, extra)
			before := time.Now().Add(-time.Second)
			res := f.mustSend(sendStep("run_1", "welcome"))

			got := m.Messages()
			if len(got) != 1 {
				t.Fatalf("server received %d messages, want 1", len(got))
			}
			rcv := got[0]
			if rcv.From != fromEmail || len(rcv.To) != 1 || rcv.To[0] != adaFirst {
				t.Errorf("envelope %s -> %v, want %s -> [%s]", rcv.From, rcv.To, fromEmail, adaFirst)
			}
			if rcv.TLS != tc.wantTLS {
				t.Errorf("over TLS = %v, want %v", rcv.TLS, tc.wantTLS)
			}
			if wantUser := map[bool]string{true: user}[tc.auth]; rcv.User != wantUser {
				t.Errorf("authenticated as %q, want %q", rcv.User, wantUser)
			}

			p := parseMail(t, rcv)
			if from, err := mail.ParseAddress(p.header.Get("From")); err != nil || from.Name != fromName || from.Address != fromEmail {
				t.Errorf("From = %q, want %q <%s>", p.header.Get("From"), fromName, fromEmail)
			}
			if to := p.header.Get("To"); to != "<"+adaFirst+">" {
				t.Errorf("To = %q", to)
			}
			if subject, err := new(mime.WordDecoder).DecodeHeader(p.header.Get("Subject")); err != nil || subject != "Welcome, Ada ✓" {
				t.Errorf("Subject = %q decodes to %q (%v)", p.header.Get("Subject"), subject, err)
			}
			if mid := p.header.Get("Message-ID"); mid != "<"+res.ProviderMessageID+">" || !strings.HasSuffix(res.ProviderMessageID, ".herald@herald.test") {
				t.Errorf("Message-ID = %q, providerMessageId = %q", mid, res.ProviderMessageID)
			}
			if date, err := p.header.Date(); err != nil || date.Before(before) || date.After(time.Now().Add(time.Second)) {
				t.Errorf("Date = %q (%v)", p.header.Get("Date"), err)
			}
			if ct := p.header.Get("Content-Type"); ct != "text/plain; charset=utf-8" || p.header.Get("MIME-Version") != "1.0" {
				t.Errorf("Content-Type = %q, MIME-Version = %q", ct, p.header.Get("MIME-Version"))
			}
			if p.body != "Hello Ada,\r\nyour account is ready.\r\n" {
				t.Errorf("body = %q", p.body)
			}

			rows := f.deliveries("run_1")
			if len(rows) != 1 {
				t.Fatalf("deliveries = %+v", rows)
			}
			row := rows[0]
			if row.AttemptID != res.AttemptID || row.IdempotencyKey != "run_1:welcome" || row.RunID != "run_1" ||
				row.StepID != "welcome" || row.ChannelKey != "email-smtp" || row.Kind != "email" ||
				row.Address != adaFirst || row.Status != "sent" || row.ProviderMessageID == nil ||
				*row.ProviderMessageID != res.ProviderMessageID || row.Error != nil {
				t.Errorf("delivery row = %+v", row)
			}
			if _, err := time.Parse("2006-01-02T15:04:05.000Z", row.CreatedAt); err != nil {
				t.Errorf("createdAt = %q", row.CreatedAt)
			}
		})
	}
}

func TestDeliverHTMLBodyAndToOverride(t *testing.T) {
	m := testsmtp.Start(t, testsmtp.Options{})
	f := newFixture(t, m, false, nil)
	f.tenantCall("PUT", "/v1/subscribers/bob", map[string]any{"contacts": map[string]any{"email": []string{"bob@example.com"}}}, 201)
	body := sendStep("run_2", "notify")
	body["to"] = "bob"
	body["content"] = map[string]any{"subject": "Hi", "body": "<p>Hello <b>Bob</b></p>"}
	f.mustSend(body)
	got := m.Messages()
	if len(got) != 1 || got[0].To[0] != "bob@example.com" {
		t.Fatalf("received %+v", got)
	}
	if ct := parseMail(t, got[0]).header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type = %q", ct)
	}
	// "to": null is the run's own subscriber.
	body = sendStep("run_2", "again")
	body["to"] = nil
	f.mustSend(body)
	if got := m.Messages(); len(got) != 2 || got[1].To[0] != adaFirst {
		t.Fatalf("received %+v", got)
	}
}

func TestDeliverRepeatReturnsFirstResult(t *testing.T) {
	m := testsmtp.Start(t, testsmtp.Options{})
	f := newFixture(t, m, false, nil)
	first := f.mustSend(sendStep("run_1", "s"))
	second := f.mustSend(sendStep("run_1", "s"))
	if first != second {
		t.Fatalf("repeat answered %+v, first %+v", second, first)
	}
	// Even with different content, and after the channel went away.
	f.tenantCall("DELETE", "/v1/channels/email-smtp", nil, 204)
	other := sendStep("run_1", "s")
	other["content"] = map[string]any{"subject": "changed", "body": "changed"}
	if third := f.mustSend(other); third != first {
		t.Fatalf("repeat answered %+v, first %+v", third, first)
	}
	if n := m.Accepted(); n != 1 {
		t.Fatalf("server received %d messages, want 1", n)
	}
	if rows := f.deliveries("run_1"); len(rows) != 1 {
		t.Fatalf("deliveries = %+v, want one attempt", rows)
	}
	// Another step of the same run is another delivery.
	expectError(t, f.deliver(sendStep("run_1", "t")), 422, "no_channel")
}

func TestDeliverConcurrentRepeatsSendOnce(t *testing.T) {
	// Hold the first message long enough for every repeat to arrive while
	// it is in flight.
	m := testsmtp.Start(t, testsmtp.Options{OnData: func(int, *gosmtp.Conn) error {
		time.Sleep(300 * time.Millisecond)
		return nil
	}})
	f := newFixture(t, m, false, nil)
	const n = 20
	results := make([]testherald.Response, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			results[i] = f.deliver(sendStep("run_c", "send"))
		})
	}
	close(start)
	wg.Wait()
	var first sendResult
	for i, r := range results {
		if r.Status != http.StatusOK {
			t.Fatalf("request %d: %d %s", i, r.Status, r.Body)
		}
		var res sendResult
		r.JSON(t, &res)
		if i == 0 {
			first = res
		} else if res != first {
			t.Fatalf("request %d answered %+v, request 0 %+v", i, res, first)
		}
	}
	if got := m.Accepted(); got != 1 {
		t.Fatalf("server received %d messages, want exactly 1", got)
	}
	if rows := f.deliveries("run_c"); len(rows) != 1 || rows[0].Status != "sent" {
		t.Fatalf("deliveries = %+v", rows)
	}
}

func TestDeliverTransientThenSuccess(t *testing.T) {
	m := testsmtp.Start(t, testsmtp.Options{Security: testsmtp.StartTLS, OnData: func(n int, _ *gosmtp.Conn) error {
		if n == 1 {
			return testsmtp.Reply(451, gosmtp.EnhancedCode{4, 3, 0}, "Mailbox busy, try again later")
		}
		return nil
	}})
	f := newFixture(t, m, false, nil)
	r := f.deliver(sendStep("run_t", "s"))
	expectError(t, r, http.StatusBadGateway, "provider_unavailable")
	if !strings.Contains(string(r.Body), "451") {
		t.Errorf("the error does not quote the reply: %s", r.Body)
	}
	if m.Accepted() != 0 {
		t.Fatal("a refused message was kept")
	}
	res := f.mustSend(sendStep("run_t", "s"))
	if again := f.mustSend(sendStep("run_t", "s")); again != res {
		t.Fatalf("repeat answered %+v, want %+v", again, res)
	}
	got := m.Messages()
	if len(got) != 1 {
		t.Fatalf("server received %d messages, want 1", len(got))
	}
	rows := f.deliveries("run_t")
	if len(rows) != 2 {
		t.Fatalf("deliveries = %+v, want the failed attempt and the sent one", rows)
	}
	if rows[0].Status != "failed" || rows[0].Error == nil || rows[0].Error.Code != "provider_unavailable" ||
		!strings.Contains(rows[0].Error.Message, "451") || rows[0].ProviderMessageID != nil {
		t.Errorf("first attempt = %+v", rows[0])
	}
	if rows[1].Status != "sent" || rows[1].AttemptID != res.AttemptID || rows[1].Error != nil {
		t.Errorf("second attempt = %+v", rows[1])
	}
	// Both attempts carry the same Message-ID: a client can drop a copy.
	if mid := parseMail(t, got[0]).header.Get("Message-ID"); mid != "<"+res.ProviderMessageID+">" {
		t.Errorf("Message-ID = %q, want <%s>", mid, res.ProviderMessageID)
	}
}

func TestDeliverRejectedIsTerminal(t *testing.T) {
	m := testsmtp.Start(t, testsmtp.Options{OnRcpt: func(to string) error {
		return testsmtp.Reply(550, gosmtp.EnhancedCode{5, 1, 1}, "No such user here")
	}})
	f := newFixture(t, m, false, nil)
	r := f.deliver(sendStep("run_r", "s"))
	expectError(t, r, http.StatusUnprocessableEntity, "provider_rejected")
	if !strings.Contains(string(r.Body), "550") {
		t.Errorf("the error does not quote the reply: %s", r.Body)
	}
	rows := f.deliveries("run_r")
	if len(rows) != 1 || rows[0].Status != "failed" || rows[0].Error == nil || rows[0].Error.Code != "provider_rejected" {
		t.Fatalf("deliveries = %+v", rows)
	}
	if m.Accepted() != 0 {
		t.Fatal("the server kept a rejected message")
	}
	// The ledger holds the attempt and its failure as events.
	evs, err := f.h.Log().History(context.Background(), eventlog.Subject(f.tenant, eventlog.AggDelivery, "run_r:s"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].Type != events.DeliveryAttempted || evs[1].Type != events.DeliveryFailed {
		t.Fatalf("ledger events = %+v", evs)
	}
	var failed events.DeliveryFailedData
	if err := evs[1].Decode(&failed); err != nil || failed.Transient || failed.Code != "provider_rejected" {
		t.Fatalf("DeliveryFailed = %+v (%v)", failed, err)
	}
}

func TestDeliverNoChannelNoAddress(t *testing.T) {
	m := testsmtp.Start(t, testsmtp.Options{})
	f := newFixture(t, m, false, nil)
	f.tenantCall("PUT", "/v1/subscribers/textonly", map[string]any{"contacts": map[string]any{"sms": []string{"+15550199"}}}, 201)
	f.tenantCall("PUT", "/v1/subscribers/empty", map[string]any{"contacts": map[string]any{"email": []string{}}}, 201)

	// No address of the kind: skipped, recorded, and answered again on a
	// repeat of the key.
	skipped := map[string]string{}
	for _, subscriber := range []string{"nobody", "textonly", "empty"} {
		body := sendStep("run_n", subscriber)
		body["subscriberId"] = subscriber
		for range 2 {
			r := f.deliver(body)
			var res map[string]any
			r.JSON(t, &res)
			id, _ := res["attemptId"].(string)
			if r.Status != 200 || len(res) != 3 || res["status"] != "skipped" || res["reason"] != "no_address" ||
				!strings.HasPrefix(id, "att_") || (skipped[subscriber] != "" && skipped[subscriber] != id) {
				t.Fatalf("%s: %d %s", subscriber, r.Status, r.Body)
			}
			skipped[subscriber] = id
		}
	}
	// The "to" override must name a subscriber of the same tenant.
	body := sendStep("run_n", "to")
	body["to"] = "nobody"
	if r := f.deliver(body); r.Status != 200 || !strings.Contains(string(r.Body), `"reason":"no_address"`) {
		t.Fatalf("to an unknown subscriber: %d %s", r.Status, r.Body)
	}
	for _, channel := range []string{"sms", "push", "fax"} {
		body := sendStep("run_n", "ada-"+channel)
		body["channel"] = channel
		body["content"] = map[string]any{"title": "t", "body": "b"}
		if channel == "sms" {
			body["content"] = map[string]any{"body": "b"}
		}
		expectError(t, f.deliver(body), http.StatusUnprocessableEntity, "no_channel")
	}

	// A disabled channel is no channel.
	f.tenantCall("PATCH", "/v1/channels/email-smtp", map[string]any{"enabled": false}, 200)
	expectError(t, f.deliver(sendStep("run_n", "disabled")), http.StatusUnprocessableEntity, "no_channel")
	// A tenant without channels, and a tenant id nobody minted.
	otherTenant, _ := f.h.Tenant("Other")
	expectError(t, f.internal(f.h.InternalToken(), otherTenant, sendStep("run_n", "x")), http.StatusUnprocessableEntity, "no_channel")
	expectError(t, f.internal(f.h.InternalToken(), "ten_unknown", sendStep("run_n", "x")), http.StatusUnprocessableEntity, "no_channel")

	if m.Accepted() != 0 {
		t.Fatal("something was sent")
	}
	// One skipped row a skipped key; no_channel records nothing.
	rows := f.deliveries("")
	if len(rows) != 4 {
		t.Fatalf("deliveries = %+v, want the 4 skipped sends", rows)
	}
	for _, row := range rows {
		if row.Status != "skipped" || row.Reason != "no_address" || row.ChannelKey != "email-smtp" || row.Kind != "email" ||
			row.Address != "" || row.Error != nil || row.ProviderMessageID != nil {
			t.Errorf("skipped row %+v", row)
		}
	}
	// Re-enabled, the same key now sends: nothing was recorded for it.
	f.tenantCall("PATCH", "/v1/channels/email-smtp", map[string]any{"enabled": true}, 200)
	f.mustSend(sendStep("run_n", "disabled"))
}

func TestDeliverAuthenticationAndValidation(t *testing.T) {
	m := testsmtp.Start(t, testsmtp.Options{})
	f := newFixture(t, m, false, nil)
	tok := f.h.InternalToken()
	good := sendStep("run_v", "s")

	for _, tc := range []struct{ name, token, tenant string }{
		{"no token", "", f.tenant},
		{"wrong token", "hint_wrong", f.tenant},
		{"token with a suffix", tok + "x", f.tenant},
		{"a tenant API key", f.key, f.tenant},
		{"no tenant", tok, ""},
	} {
		r := f.internal(tc.token, tc.tenant, good)
		if r.Status != http.StatusUnauthorized || r.ErrorCode() != "unauthorized" {
			t.Errorf("%s: %d %s", tc.name, r.Status, r.Body)
		}
	}
	// The tenant API key is no internal token.
	if r := f.h.Do("POST", "/v1/deliver", f.key, good); r.Status != http.StatusUnauthorized {
		t.Errorf("with a bearer API key: %d %s", r.Status, r.Body)
	}

	fields := func(r testherald.Response) []string {
		var b struct {
			Error struct {
				Details []struct{ Field string } `json:"details"`
			} `json:"error"`
		}
		json.Unmarshal(r.Body, &b)
		var out []string
		for _, d := range b.Error.Details {
			out = append(out, d.Field)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		body   any
		status int
		code   string
		field  string
	}{
		{"unknown field", `{"idempotencyKey":"a:b","runId":"a","stepId":"b","subscriberId":"ada","channel":"email","content":{"subject":"s","body":"b"},"priority":1}`, 422, "validation_failed", "priority"},
		{"unknown content field", `{"idempotencyKey":"a:b","runId":"a","stepId":"b","subscriberId":"ada","channel":"email","content":{"subject":"s","body":"b","htm":"x"}}`, 422, "invalid_content", "content.htm"},
		{"content of another kind", `{"idempotencyKey":"a:b","runId":"a","stepId":"b","subscriberId":"ada","channel":"email","content":{"body":"b"}}`, 422, "invalid_content", "content.subject"},
		{"content not an object", `{"idempotencyKey":"a:b","runId":"a","stepId":"b","subscriberId":"ada","channel":"email","content":"hello"}`, 422, "validation_failed", "content"},
		{"case matters", `{"IdempotencyKey":"a:b","runId":"a","stepId":"b","subscriberId":"ada","channel":"email","content":{}}`, 422, "validation_failed", "IdempotencyKey"},
		{"no key", `{"runId":"a","stepId":"b","subscriberId":"ada","channel":"email","content":{}}`, 422, "validation_failed", "idempotencyKey"},
		{"no channel", `{"idempotencyKey":"a:b","runId":"a","stepId":"b","subscriberId":"ada","content":{}}`, 422, "validation_failed", "channel"},
		{"no subscriber", `{"idempotencyKey":"a:b","runId":"a","stepId":"b","channel":"email","content":{}}`, 422, "validation_failed", "subscriberId"},
		{"no content", `{"idempotencyKey":"a:b","runId":"a","stepId":"b","subscriberId":"ada","channel":"email"}`, 422, "validation_failed", "content"},
		{"wrong type", `{"idempotencyKey":7,"runId":"a","stepId":"b","subscriberId":"ada","channel":"email","content":{}}`, 422, "validation_failed", "idempotencyKey"},
		{"key too long", map[string]any{"idempotencyKey": strings.Repeat("k", 1025), "runId": "a", "stepId": "b", "subscriberId": "ada", "channel": "email", "content": map[string]any{}}, 422, "validation_failed", "idempotencyKey"},
		{"control characters", map[string]any{"idempotencyKey": "a:b", "runId": "a\x00", "stepId": "b", "subscriberId": "ada", "channel": "email", "content": map[string]any{}}, 422, "validation_failed", "runId"},
		{"malformed JSON", `{"idempotencyKey":`, 400, "invalid_json", ""},
		{"trailing data", `{} {}`, 400, "invalid_json", ""},
	} {
		r := f.deliver(tc.body)
		if r.Status != tc.status || r.ErrorCode() != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, r.Status, r.Body, tc.status, tc.code)
			continue
		}
		if tc.field != "" && !strings.Contains(strings.Join(fields(r), ","), tc.field) {
			t.Errorf("%s: details %v do not name %s", tc.name, fields(r), tc.field)
		}
	}
	if m.Accepted() != 0 {
		t.Fatal("a refused request sent a message")
	}

	// GET /v1/deliveries is a tenant call, scoped to the tenant.
	f.mustSend(good)
	if r := f.h.Do("GET", "/v1/deliveries", "", nil); r.Status != http.StatusUnauthorized {
		t.Errorf("list without a key: %d", r.Status)
	}
	_, otherKey := f.h.Tenant("Other")
	r := f.h.Do("GET", "/v1/deliveries", otherKey, nil)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"data":[]`) {
		t.Errorf("another tenant's list: %d %s", r.Status, r.Body)
	}
	if r := f.h.Do("GET", "/v1/deliveries?limit=0", f.key, nil); r.Status != 422 {
		t.Errorf("limit=0: %d", r.Status)
	}
}

func TestDeliveriesListPages(t *testing.T) {
	m := testsmtp.Start(t, testsmtp.Options{Discard: true})
	f := newFixture(t, m, false, nil)
	var want []string
	for i := range 5 {
		want = append(want, f.mustSend(sendStep("run_p", fmt.Sprintf("s%d", i))).AttemptID)
	}
	f.mustSend(sendStep("run_other", "s"))
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		path := "/v1/deliveries?runId=run_p&limit=2"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		var l struct {
			Data       []deliveryRow `json:"data"`
			NextCursor *string       `json:"nextCursor"`
		}
		f.tenantCall("GET", path, nil, 200).JSON(t, &l)
		for _, row := range l.Data {
			got = append(got, row.AttemptID)
		}
		if l.NextCursor == nil {
			break
		}
		cursor = *l.NextCursor
		if pages > 5 {
			t.Fatal("paging does not end")
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("run_p attempts %v, want %v (oldest first)", got, want)
	}
	if rows := f.deliveries(""); len(rows) != 6 {
		t.Fatalf("all deliveries: %d rows, want 6", len(rows))
	}
}

// TestDeliverTakesOverAStaleAttempt: a process that claimed a key and died
// before recording the outcome leaves an attempt in flight; once its lease
// ran out a new request attempts again.
func TestDeliverTakesOverAStaleAttempt(t *testing.T) {
	m := testsmtp.Start(t, testsmtp.Options{})
	f := newFixture(t, m, false, nil)
	f.strandAttempt("run_s", "att_crashed", "", time.Now().Add(-2*time.Minute))
	res := f.mustSend(sendStep("run_s", "s"))
	f.tookOver("run_s", "att_crashed", res)
}

// strandAttempt records an attempt of run's step "s" at at, as a process
// that claimed it and stopped before its outcome leaves it; process "" is
// one from before processes were recorded.
func (f *fixture) strandAttempt(run, attemptID, process string, at time.Time) {
	f.t.Helper()
	_, err := f.h.Log().Append(context.Background(), eventlog.Record{
		Subject: eventlog.Subject(f.tenant, eventlog.AggDelivery, run+":s"), Type: events.DeliveryAttempted,
		Tenant: f.tenant,
		Data: events.DeliveryAttemptedData{DeliveryAttempt: events.DeliveryAttempt{AttemptID: attemptID,
			IdempotencyKey: run + ":s", RunID: run, StepID: "s", SubscriberID: "ada", ChannelKey: "email-smtp",
			Kind: "email"}, Address: adaFirst, Process: process},
		At:     at,
		Expect: true, ExpectSeq: 0,
	})
	if err != nil {
		f.t.Fatal(err)
	}
}

// tookOver fails the test unless res, the send of run's step "s", took
// over the stranded attempt: the stranded row failed for its lease, the
// new one sent the one message the server received.
func (f *fixture) tookOver(run, stranded string, res sendResult) {
	f.t.Helper()
	if f.mail.Accepted() != 1 {
		f.t.Fatalf("server received %d messages", f.mail.Accepted())
	}
	rows := f.deliveries(run)
	if len(rows) != 2 || rows[0].AttemptID != stranded || rows[0].Status != "failed" ||
		rows[0].Error == nil || rows[0].Error.Code != "lease_expired" ||
		rows[1].AttemptID != res.AttemptID || rows[1].Status != "sent" {
		f.t.Fatalf("deliveries = %+v", rows)
	}
}

// TestDeliverTakesOverAnAttemptOfAnEarlierProcessAtOnce: with embedded
// NATS one process delivers; an attempt it finds in flight, claimed by an
// earlier process (killed mid-send, then restarted), is taken over at
// once, not after the lease. A recovery then takes AckWait, not a lease.
func TestDeliverTakesOverAnAttemptOfAnEarlierProcessAtOnce(t *testing.T) {
	m := testsmtp.Start(t, testsmtp.Options{})
	f := newFixture(t, m, false, nil)
	f.strandAttempt("run_k", "att_killed", "proc_before_the_restart", time.Time{})
	began := time.Now()
	res := f.mustSend(sendStep("run_k", "s"))
	if took := time.Since(began); took > 3*time.Second {
		t.Fatalf("the takeover waited %v", took)
	}
	f.tookOver("run_k", "att_killed", res)
}

// TestPasswordNeverLeaks drives deliveries that succeed, fail and are
// refused with a distinctive SMTP password (the failing server even echoes
// it in its reply), then looks for it in every response, every log line
// and every message of the event stream.
func TestPasswordNeverLeaks(t *testing.T) {
	const user, password = "relay-user", "Smtp-Pw-quartz-heron-5e1d0b"
	m := testsmtp.Start(t, testsmtp.Options{Security: testsmtp.StartTLS, User: user, Password: password, EchoSecret: true})
	f := newFixture(t, m, false, map[string]any{"username": user, "password": password})
	f.mustSend(sendStep("run_pw", "ok"))
	f.mustSend(sendStep("run_pw", "ok"))

	// Wrong password: the server's 535 reply quotes what it was given. An
	// authentication failure proves nothing was sent: the send would fail
	// over, and with no other channel it is retried later.
	wrong := "Wrong-Pw-falcon-ember-77c2aa"
	f.channelExtra["password"] = wrong
	f.configureChannel(m.Port, false, 201)
	r := f.deliver(sendStep("run_pw", "badauth"))
	expectError(t, r, http.StatusBadGateway, "provider_unavailable")
	if !strings.Contains(string(r.Body), "535") {
		t.Errorf("the AUTH failure is not reported: %s", r.Body)
	}
	// Unreachable server.
	f.channelExtra["password"] = password
	f.configureChannel(1, false, 201)
	expectError(t, f.deliver(sendStep("run_pw", "down")), http.StatusBadGateway, "provider_unavailable")
	f.tenantCall("GET", "/v1/deliveries?runId=run_pw", nil, 200)
	f.tenantCall("GET", "/v1/deliveries", nil, 200)
	f.tenantCall("GET", "/v1/channels", nil, 200)

	forms := func(s string) []string {
		b := []byte(s)
		return []string{s, base64.StdEncoding.EncodeToString(b), base64.RawStdEncoding.EncodeToString(b),
			base64.StdEncoding.EncodeToString([]byte("\x00" + user + "\x00" + s))}
	}
	leaks := func(where string, data []byte) {
		t.Helper()
		for _, s := range []string{password, wrong} {
			for _, form := range forms(s) {
				if bytes.Contains(data, []byte(form)) {
					t.Errorf("%s holds a password (form %q): %.300s", where, form, data)
				}
			}
		}
	}
	f.responsesMu.Lock()
	for _, r := range f.responses {
		leaks("a response", r.Body)
	}
	f.responsesMu.Unlock()

	ctx := context.Background()
	stream, err := f.h.Log().JetStream().Stream(ctx, eventlog.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	last, err := f.h.Log().LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var deliveryEvents int
	for seq := uint64(1); seq <= last; seq++ {
		msg, err := stream.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("event #%d: %v", seq, err)
		}
		raw := bytes.Clone(msg.Data)
		for k, vs := range msg.Header {
			raw = append(raw, k...)
			for _, v := range vs {
				raw = append(raw, v...)
			}
		}
		leaks(fmt.Sprintf("event #%d", seq), raw)
		if bytes.Contains(raw, []byte("Delivery")) {
			deliveryEvents++
		}
	}
	if deliveryEvents < 6 { // two sent, one rejected, one unavailable: claims and outcomes
		t.Fatalf("only %d delivery events in the stream: the scan saw nothing", deliveryEvents)
	}

	f.h.Stop()
	logged := f.logs.Bytes()
	if !bytes.Contains(logged, []byte("/v1/deliver")) || !bytes.Contains(logged, []byte("attempt failed")) {
		t.Fatalf("the captured log holds no delivery lines: %s", logged)
	}
	leaks("the log", logged)
}
