package delivery_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/delivery"
)

func validRequest() delivery.Request {
	return delivery.Request{IdempotencyKey: "run_1:email", RunID: "run_1", StepID: "email", SubscriberID: "ada",
		Channel: "email", Content: json.RawMessage(`{"subject":"Hi","body":"Hello"}`)}
}

// answering starts a stand-in API whose POST /v1/deliver answers status
// and body, and records the last request.
func answering(t *testing.T, status int, body string) (url string, last func() (http.Header, map[string]any)) {
	t.Helper()
	var (
		mu     sync.Mutex
		header http.Header
		got    map[string]any
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		_ = json.NewDecoder(r.Body).Decode(&m)
		mu.Lock()
		header, got = r.Header.Clone(), m
		mu.Unlock()
		if r.Method != http.MethodPost || r.URL.Path != "/v1/deliver" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() (http.Header, map[string]any) {
		mu.Lock()
		defer mu.Unlock()
		return header, got
	}
}

func TestClientSendsTheRequestAndReadsTheResult(t *testing.T) {
	url, last := answering(t, http.StatusOK, `{"attemptId":"att_1","status":"sent","providerMessageId":"m@x"}`)
	res, err := delivery.NewClient(url, "tok", 0).Deliver(context.Background(), "ten_1", validRequest())
	if err != nil || res != (delivery.Result{AttemptID: "att_1", Status: delivery.StatusSent, ProviderMessageID: "m@x"}) {
		t.Fatalf("Deliver = %+v, %v", res, err)
	}
	h, body := last()
	if h.Get("x-herald-internal-token") != "tok" || h.Get("x-herald-tenant-id") != "ten_1" {
		t.Fatalf("headers %v", h)
	}
	want := map[string]any{"idempotencyKey": "run_1:email", "runId": "run_1", "stepId": "email", "subscriberId": "ada",
		"channel": "email", "content": map[string]any{"subject": "Hi", "body": "Hello"}}
	if fmt.Sprint(body) != fmt.Sprint(want) {
		t.Fatalf("body %v, want %v", body, want)
	}
}

// Every answer of the API is classified: a sentinel's code as that
// sentinel, another code terminal only on 422, no code as delivery_failed.
func TestClientClassifiesAnswers(t *testing.T) {
	cases := []struct {
		status   int
		body     string
		code     string
		terminal bool
		kind     error
	}{
		{422, `{"error":{"code":"no_address","message":"no email address"}}`, apierr.CodeNoAddress, true, delivery.ErrNoAddress},
		{502, `{"error":{"code":"provider_unavailable","message":"451"}}`, apierr.CodeProviderUnavailable, false, delivery.ErrProviderUnavailable},
		{409, `{"error":{"code":"delivery_in_progress","message":"later"}}`, apierr.CodeDeliveryInProgress, false, delivery.ErrInProgress},
		{422, `{"error":{"code":"invalid_id","message":"too long"}}`, "invalid_id", true, nil},
		{500, `{"error":{"code":"internal","message":"internal error"}}`, "internal", false, nil},
		{401, `{"error":{"code":"unauthorized","message":"no"}}`, "unauthorized", false, nil},
		{503, `not json`, apierr.CodeDeliveryFailed, false, nil},
		{200, `{"attemptId":`, apierr.CodeDeliveryInvalidAnswer, false, nil},
	}
	for _, c := range cases {
		url, _ := answering(t, c.status, c.body)
		_, err := delivery.NewClient(url, "tok", 1).Deliver(context.Background(), "ten_1", validRequest())
		f := delivery.Classify(err)
		if err == nil || f.Code != c.code || f.Terminal != c.terminal {
			t.Errorf("%d %s: %v classified %+v, want %s terminal=%v", c.status, c.body, err, f, c.code, c.terminal)
		}
		if c.kind != nil && !errors.Is(err, c.kind) {
			t.Errorf("%d %s: %v does not wrap %v", c.status, c.body, err, c.kind)
		}
	}
}

func TestClientUnreachableAndCanceled(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	_, err = delivery.NewClient(url, "tok", 1).Deliver(context.Background(), "ten_1", validRequest())
	if f := delivery.Classify(err); f.Code != apierr.CodeDeliveryUnreachable || f.Terminal {
		t.Fatalf("unreachable: %v classified %+v", err, f)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := delivery.NewClient(url, "tok", 1).Deliver(ctx, "ten_1", validRequest()); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled: %v", err)
	}
}

// A Client keeps an idle connection per expected concurrent call: a
// second wave of as many calls opens no connection.
func TestClientKeepsConnsForItsConcurrency(t *testing.T) {
	const conns = 8
	var (
		opened  atomic.Int32
		arrived sync.WaitGroup
		release atomic.Pointer[chan struct{}]
	)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wait := *release.Load()
		arrived.Done()
		<-wait
		_, _ = w.Write([]byte(`{"attemptId":"a","status":"sent"}`))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	c := delivery.NewClient(srv.URL, "tok", conns)
	wave := func() {
		// Every call of the wave is in flight at once, so each needs a
		// connection of its own.
		arrived.Add(conns)
		wait := make(chan struct{})
		release.Store(&wait)
		var done sync.WaitGroup
		for range conns {
			done.Go(func() {
				if _, err := c.Deliver(context.Background(), "ten_1", validRequest()); err != nil {
					t.Error(err)
				}
			})
		}
		arrived.Wait()
		close(wait)
		done.Wait()
	}
	wave()
	if n := opened.Load(); n != conns {
		t.Fatalf("first wave opened %d connections, want %d", n, conns)
	}
	wave()
	if n := opened.Load(); n != conns {
		t.Fatalf("second wave opened %d more connections", n-conns)
	}
}
