package delivery_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gosmtp "github.com/emersion/go-smtp"

	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/delivery/provider"
	"github.com/heraldhq/herald/delivery/smtp"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testnet"
	"github.com/heraldhq/herald/internal/testsmtp"
)

// twoEmailChannels gives the fixture's tenant a second email channel,
// email-ses at priority 1 behind email-smtp at priority 0 (pointed at
// smtpPort), and returns a Service whose email-ses provider is an SMTP
// provider sending to second: a stand-in whose every message a test can
// read back, for what these tests check is delivery's failover, which only
// sees provider.Provider (TestFailoverToTheSESProvider uses the real one).
// Replies are awaited for at most 1s.
func twoEmailChannels(t *testing.T, f *fixture, smtpPort int, second *testsmtp.Server) *delivery.Service {
	t.Helper()
	f.configureChannel(smtpPort, false, 201)
	f.tenantCall("POST", "/v1/channels", map[string]any{"channelKey": "email-ses", "priority": 1, "config": map[string]any{
		"region": "eu-west-1", "accessKeyId": "AKIAEXAMPLE", "secretAccessKey": "ses-secret", "fromEmail": fromEmail,
	}}, 201)
	sender := smtp.NewSender(smtp.Options{CommandTimeout: time.Second, DialTimeout: time.Second})
	t.Cleanup(func() { sender.Close() })
	standIn := func(_ map[string]any, deps provider.Deps) (provider.Provider, error) {
		return sender.New(map[string]any{"host": "127.0.0.1", "port": float64(second.Port),
			"fromEmail": fromEmail}, deps)
	}
	return newDirectService(t, f, f.dataDir, func(c *delivery.Config) {
		c.Providers = map[string]provider.New{smtp.ChannelKey: sender.New, "email-ses": standIn}
	})
}

// TestFailoverOnRefusedConnection: the first email channel refuses
// connections, so nothing was sent: the message goes through the second at
// once, and the ledger holds one row per channel tried.
func TestFailoverOnRefusedConnection(t *testing.T) {
	second := testsmtp.Start(t, testsmtp.Options{})
	f := newFixture(t, testsmtp.Start(t, testsmtp.Options{}), false, nil)
	svc := twoEmailChannels(t, f, testnet.FreePort(t), second)

	res, err := svc.Deliver(context.Background(), f.tenant, request("run_fo:s"))
	if err != nil || res.Status != delivery.StatusSent {
		t.Fatalf("Deliver = %+v, %v", res, err)
	}
	if got := second.Messages(); len(got) != 1 || got[0].To[0] != adaFirst {
		t.Fatalf("the second channel received %+v", got)
	}
	rows := f.deliveries("run_fo")
	if len(rows) != 2 {
		t.Fatalf("deliveries = %+v, want one row per channel tried", rows)
	}
	if r := rows[0]; r.ChannelKey != "email-smtp" || r.Status != "failed" || r.Error == nil ||
		r.Error.Code != "provider_unavailable" || r.IdempotencyKey != "run_fo:s" {
		t.Errorf("first row %+v", r)
	}
	if r := rows[1]; r.ChannelKey != "email-ses" || r.Status != "sent" || r.AttemptID != res.AttemptID {
		t.Errorf("second row %+v", r)
	}
	// A repeat answers the first result and sends nothing.
	if again, err := svc.Deliver(context.Background(), f.tenant, request("run_fo:s")); err != nil || again != res {
		t.Fatalf("repeat = %+v, %v; want %+v", again, err, res)
	}
	if second.Accepted() != 1 || len(f.deliveries("run_fo")) != 2 {
		t.Fatal("the repeat sent again")
	}
}

// TestUnknownOutcomeRetriesTheSameChannel: the first channel's server
// takes the message but answers nothing within the timeout after DATA:
// the message may be delivered, so delivery never fails over. The send
// fails (transient), and every retry of the key goes to the first channel
// only, even a retry that fails there in a way that proves nothing was
// sent. The second channel never sees the message.
func TestUnknownOutcomeRetriesTheSameChannel(t *testing.T) {
	first := testsmtp.Start(t, testsmtp.Options{
		OnData: func(n int, _ *gosmtp.Conn) error {
			if n == 1 { // no answer within the client's 1s: the message is lost
				time.Sleep(1500 * time.Millisecond)
				return testsmtp.Reply(451, gosmtp.EnhancedCode{4, 3, 0}, "too late")
			}
			return nil
		},
		OnMail: func(n int, _ *gosmtp.Conn) error {
			if n == 2 { // the first retry is refused before DATA
				return testsmtp.Reply(421, gosmtp.EnhancedCode{4, 3, 2}, "busy")
			}
			return nil
		},
	})
	second := testsmtp.Start(t, testsmtp.Options{})
	f := newFixture(t, testsmtp.Start(t, testsmtp.Options{}), false, nil)
	svc := twoEmailChannels(t, f, first.Port, second)
	ctx := context.Background()

	_, err := svc.Deliver(ctx, f.tenant, request("run_uo:s"))
	if !errors.Is(err, delivery.ErrProviderUnavailable) || delivery.Classify(err).Terminal {
		t.Fatalf("after a timeout following DATA: %v, want a transient failure", err)
	}
	if !strings.Contains(err.Error(), "email-smtp: smtp DATA") {
		t.Errorf("the failure does not name the channel and the step: %v", err)
	}
	_, err = svc.Deliver(ctx, f.tenant, request("run_uo:s"))
	if !errors.Is(err, delivery.ErrProviderUnavailable) || !strings.Contains(err.Error(), "421") {
		t.Fatalf("the pinned retry refused at MAIL: %v", err)
	}
	res, err := svc.Deliver(ctx, f.tenant, request("run_uo:s"))
	if err != nil || res.Status != delivery.StatusSent {
		t.Fatalf("third try = %+v, %v", res, err)
	}
	if n := second.Accepted(); n != 0 {
		t.Fatalf("the second channel received %d messages: the send failed over after an unknown outcome", n)
	}
	if n := first.Accepted(); n != 1 {
		t.Fatalf("the first channel kept %d messages, want 1", n)
	}
	rows := f.deliveries("run_uo")
	if len(rows) != 3 {
		t.Fatalf("deliveries = %+v", rows)
	}
	for i, want := range []string{"failed", "failed", "sent"} {
		if rows[i].ChannelKey != "email-smtp" || rows[i].Status != want {
			t.Errorf("row %d = %+v, want email-smtp %s", i, rows[i], want)
		}
	}
	// The ledger pins the key to the channel of the unknown outcome.
	evs, err := f.h.Log().History(ctx, eventlog.Subject(f.tenant, eventlog.AggDelivery, "run_uo:s"), 0)
	if err != nil {
		t.Fatal(err)
	}
	var pins []string
	for _, ev := range evs {
		if ev.Type == events.DeliveryFailed {
			var d events.DeliveryFailedData
			if err := ev.Decode(&d); err != nil {
				t.Fatal(err)
			}
			pins = append(pins, d.Pin)
		}
	}
	if strings.Join(pins, ",") != "email-smtp,email-smtp" {
		t.Fatalf("pins of the failures = %q", pins)
	}
}

// TestRejectionDoesNotFailOver: a 5xx to RCPT is the recipient refused
// for good: terminal at once, the second channel untried.
func TestRejectionDoesNotFailOver(t *testing.T) {
	first := testsmtp.Start(t, testsmtp.Options{OnRcpt: func(string) error {
		return testsmtp.Reply(550, gosmtp.EnhancedCode{5, 1, 1}, "no such user")
	}})
	second := testsmtp.Start(t, testsmtp.Options{})
	f := newFixture(t, testsmtp.Start(t, testsmtp.Options{}), false, nil)
	svc := twoEmailChannels(t, f, first.Port, second)
	_, err := svc.Deliver(context.Background(), f.tenant, request("run_rj:s"))
	if c := delivery.Classify(err); !errors.Is(err, delivery.ErrProviderRejected) || !c.Terminal {
		t.Fatalf("err = %v (%+v)", err, c)
	}
	if second.Accepted() != 0 {
		t.Fatal("a rejected recipient was sent through another channel")
	}
	if rows := f.deliveries("run_rj"); len(rows) != 1 || rows[0].ChannelKey != "email-smtp" || rows[0].Error.Code != "provider_rejected" {
		t.Fatalf("deliveries = %+v", rows)
	}
}

// TestEveryChannelFailed: both channels refuse before DATA: the send is
// transient, names both, and the next request tries them again in order.
func TestEveryChannelFailed(t *testing.T) {
	second := testsmtp.Start(t, testsmtp.Options{OnMail: func(n int, _ *gosmtp.Conn) error {
		if n == 1 {
			return testsmtp.Reply(451, gosmtp.EnhancedCode{4, 3, 0}, "later")
		}
		return nil
	}})
	f := newFixture(t, testsmtp.Start(t, testsmtp.Options{}), false, nil)
	svc := twoEmailChannels(t, f, testnet.FreePort(t), second)
	_, err := svc.Deliver(context.Background(), f.tenant, request("run_all:s"))
	if !errors.Is(err, delivery.ErrProviderUnavailable) || !strings.Contains(err.Error(), "email-smtp") ||
		!strings.Contains(err.Error(), "email-ses: smtp MAIL: 451") {
		t.Fatalf("err = %v", err)
	}
	res, err := svc.Deliver(context.Background(), f.tenant, request("run_all:s"))
	if err != nil || res.Status != "sent" {
		t.Fatalf("retry = %+v, %v", res, err)
	}
	rows := f.deliveries("run_all")
	var got []string
	for _, r := range rows {
		got = append(got, r.ChannelKey+" "+r.Status)
	}
	if strings.Join(got, ",") != "email-smtp failed,email-ses failed,email-smtp failed,email-ses sent" {
		t.Fatalf("rows %q", got)
	}
}

// TestDeliverFailoverThroughTheAPI: POST /v1/deliver answers a send that
// failed over like any sent one.
func TestDeliverFailoverThroughTheAPI(t *testing.T) {
	m := testsmtp.Start(t, testsmtp.Options{})
	f := newFixture(t, m, false, nil)
	// email-smtp refusing connections and email-ses at a closed endpoint:
	// both fail as not sent, the answer is transient.
	f.configureChannel(testnet.FreePort(t), false, 201)
	f.tenantCall("POST", "/v1/channels", map[string]any{"channelKey": "email-ses", "priority": 1, "config": map[string]any{
		"region": "eu-west-1", "accessKeyId": "AKIAEXAMPLE", "secretAccessKey": "ses-secret", "fromEmail": fromEmail,
		"endpoint": "http://127.0.0.1:" + strconv.Itoa(testnet.FreePort(t)),
	}}, 201)
	expectError(t, f.deliver(sendStep("run_api", "s")), http.StatusBadGateway, "provider_unavailable")
	rows := f.deliveries("run_api")
	if len(rows) != 2 || rows[0].ChannelKey != "email-smtp" || rows[1].ChannelKey != "email-ses" {
		t.Fatalf("deliveries = %+v", rows)
	}
}

// TestPinnedChannelRemoved: after an unknown outcome the key is pinned to
// its channel; once the tenant disables that channel, the send goes on
// through the others (the tenant chose that over a send that cannot end).
func TestPinnedChannelRemoved(t *testing.T) {
	first := testsmtp.Start(t, testsmtp.Options{OnData: func(n int, _ *gosmtp.Conn) error {
		time.Sleep(1500 * time.Millisecond)
		return testsmtp.Reply(451, gosmtp.EnhancedCode{4, 3, 0}, "too late")
	}})
	second := testsmtp.Start(t, testsmtp.Options{})
	f := newFixture(t, testsmtp.Start(t, testsmtp.Options{}), false, nil)
	svc := twoEmailChannels(t, f, first.Port, second)
	ctx := context.Background()
	if _, err := svc.Deliver(ctx, f.tenant, request("run_pr:s")); !errors.Is(err, delivery.ErrProviderUnavailable) {
		t.Fatalf("first try: %v", err)
	}
	if second.Accepted() != 0 {
		t.Fatal("failed over after an unknown outcome")
	}
	f.tenantCall("PATCH", "/v1/channels/email-smtp", map[string]any{"enabled": false}, 200)
	res, err := svc.Deliver(ctx, f.tenant, request("run_pr:s"))
	if err != nil || res.Status != "sent" || second.Accepted() != 1 {
		t.Fatalf("after the pinned channel was disabled: %+v, %v (second got %d)", res, err, second.Accepted())
	}
}

// TestFailoverToTheSESProvider: the registered SES provider is the second
// email channel: email-smtp refuses connections, the message goes through
// SES (a loopback server speaking the SES v2 API), two ledger rows.
func TestFailoverToTheSESProvider(t *testing.T) {
	var calls atomic.Int32
	ses := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v2/email/outbound-emails" ||
			!strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"MessageId":"0102-ses-message"}`)
	}))
	t.Cleanup(ses.Close)
	f := newFixture(t, testsmtp.Start(t, testsmtp.Options{}), false, nil)
	f.configureChannel(testnet.FreePort(t), false, 201)
	f.tenantCall("POST", "/v1/channels", map[string]any{"channelKey": "email-ses", "priority": 1, "config": map[string]any{
		"region": "eu-west-1", "accessKeyId": "AKIAEXAMPLE", "secretAccessKey": "ses-secret", "fromEmail": fromEmail,
		"endpoint": ses.URL,
	}}, 201)
	res := f.mustSend(sendStep("run_ses", "s"))
	if res.Status != "sent" || res.ProviderMessageID != "0102-ses-message" || calls.Load() != 1 {
		t.Fatalf("result %+v after %d SES calls", res, calls.Load())
	}
	rows := f.deliveries("run_ses")
	if len(rows) != 2 || rows[0].ChannelKey != "email-smtp" || rows[0].Status != "failed" ||
		rows[1].ChannelKey != "email-ses" || rows[1].Status != "sent" {
		t.Fatalf("deliveries = %+v", rows)
	}
}
