package delivery_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/delivery/providers"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testsmtp"
	"github.com/heraldhq/herald/secrets"
)

// newDirectService builds a delivery.Service on the fixture's log and
// projections (with the real keyring), tuned by tune.
func newDirectService(t *testing.T, f *fixture, dataDir string, tune func(*delivery.Config)) *delivery.Service {
	t.Helper()
	kr, _, err := secrets.LoadKeyring(func(string) string { return "" }, dataDir, true)
	if err != nil {
		t.Fatal(err)
	}
	// The fixture's SMTP servers are on loopback, which egress refuses.
	cfg := delivery.Config{Log: f.h.Log(), Store: f.h.Store(), Keys: kr, Dial: (&net.Dialer{}).DialContext,
		Providers: providers.Registry()}
	if tune != nil {
		tune(&cfg)
	}
	svc, err := delivery.NewService(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	return svc
}

// claim appends a fresh in-flight attempt of key, as another process
// would, and returns the subject's sequence.
func claim(t *testing.T, f *fixture, key, attemptID string) uint64 {
	t.Helper()
	seq, err := f.h.Log().Append(context.Background(), eventlog.Record{
		Subject: eventlog.Subject(f.tenant, eventlog.AggDelivery, key), Type: events.DeliveryAttempted, Tenant: f.tenant,
		Data: events.DeliveryAttemptedData{DeliveryAttempt: events.DeliveryAttempt{
			AttemptID: attemptID, IdempotencyKey: key, RunID: "run_f", StepID: "s", SubscriberID: "ada"}},
		Expect: true, ExpectSeq: 0,
	})
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

func request(key string) delivery.Request {
	run, step, _ := strings.Cut(key, ":")
	return delivery.Request{IdempotencyKey: key, RunID: run, StepID: step, SubscriberID: "ada", Channel: "email",
		Content: json.RawMessage(`{"subject":"s","body":"b"}`)}
}

// TestInFlightAttempt: a request finding an attempt of its key in flight
// (claimed by another process) waits for its outcome and shares it; with
// no outcome within the wait it fails with ErrInProgress. It never sends.
func TestInFlightAttempt(t *testing.T) {
	m := testsmtp.Start(t, testsmtp.Options{})
	f := newFixture(t, m, false, nil)
	svc := newDirectService(t, f, f.dataDir, func(c *delivery.Config) { c.InFlightWait = 300 * time.Millisecond })
	ctx := context.Background()

	claim(t, f, "run_f:busy", "att_other")
	start := time.Now()
	_, err := svc.Deliver(ctx, f.tenant, request("run_f:busy"))
	if !errors.Is(err, delivery.ErrInProgress) || time.Since(start) < 300*time.Millisecond {
		t.Fatalf("err = %v after %v, want ErrInProgress after the wait", err, time.Since(start))
	}

	outcome := func(key string, seq uint64, typ string, data any) {
		time.Sleep(100 * time.Millisecond)
		_, err := f.h.Log().Append(ctx, eventlog.Record{Subject: eventlog.Subject(f.tenant, eventlog.AggDelivery, key),
			Type: typ, Tenant: f.tenant, Data: data, Expect: true, ExpectSeq: seq})
		if err != nil {
			t.Error(err)
		}
	}
	seq := claim(t, f, "run_f:sent", "att_sent")
	go outcome("run_f:sent", seq, events.DeliverySent, events.DeliverySentData{AttemptID: "att_sent", ProviderMessageID: "x@y"})
	res, err := svc.Deliver(ctx, f.tenant, request("run_f:sent"))
	if err != nil || res != (delivery.Result{AttemptID: "att_sent", Status: "sent", ProviderMessageID: "x@y"}) {
		t.Fatalf("Deliver = %+v, %v; want the other attempt's result", res, err)
	}

	seq = claim(t, f, "run_f:failed", "att_failed")
	go outcome("run_f:failed", seq, events.DeliveryFailed, events.DeliveryFailedData{AttemptID: "att_failed",
		Code: apierr.CodeProviderUnavailable, Message: "smtp: DATA: 451 busy", Transient: true})
	_, err = svc.Deliver(ctx, f.tenant, request("run_f:failed"))
	if !errors.Is(err, delivery.ErrProviderUnavailable) || !strings.Contains(err.Error(), "451 busy") {
		t.Fatalf("err = %v, want the other attempt's failure", err)
	}
	if n := m.Accepted(); n != 0 {
		t.Fatalf("%d messages sent while another attempt held the key", n)
	}
	// Once the other attempt failed, a new request attempts again.
	if res, err := svc.Deliver(ctx, f.tenant, request("run_f:failed")); err != nil || res.Status != "sent" {
		t.Fatalf("Deliver after a failure = %+v, %v", res, err)
	}
}

func TestServiceConfig(t *testing.T) {
	_, err := delivery.NewService(delivery.Config{})
	for _, want := range []string{"Log", "Store", "Keys"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NewService(zero) = %v, want it to name %s", err, want)
		}
	}
	_, err = delivery.NewService(delivery.Config{SendTimeout: time.Minute, Lease: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "Lease") {
		t.Errorf("a lease no longer than the send timeout passed: %v", err)
	}
}
