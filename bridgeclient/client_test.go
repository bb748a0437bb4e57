package bridgeclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/bridgeclient"
	"github.com/heraldhq/herald/internal/testworkflow"
)

// answering starts a server that answers every request with status and body.
func answering(t *testing.T, status int, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// execute has c execute workflow "wf" against a Bridge answering status
// and body, and fails the test when the call itself fails.
func execute(t *testing.T, c *bridgeclient.Client, status int, body string) bridgeclient.Outcome {
	t.Helper()
	o, err := c.Execute(context.Background(), answering(t, status, body), testKey, wire.ExecuteRequest{WorkflowID: "wf"})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// safeMessage matches every Outcome.Message of a failed call: fixed
// sentences naming the status at most, or an invalid step by its id (the
// step's name, which the run records anyway), its type and its field.
var safeMessage = regexp.MustCompile(`^(bridge answered \d{3}: [a-z -]+|invalid answer from the bridge \(status \d+\)|bridge unreachable: no answer|bridge unreachable: the answer \(status \d+\) was cut off|` +
	`invalid step from the bridge: (a )?([a-zA-Z]+ )?step( "[^"]*")?: [a-zA-Z./]+ must [^"]*("[^"]*"[^"]*)*)$`)

func TestClientOutcome(t *testing.T) {
	const (
		completed = bridgeclient.OutcomeCompleted
		step      = bridgeclient.OutcomeStep
		retry     = bridgeclient.OutcomeRetryable
		terminal  = bridgeclient.OutcomeTerminal
	)
	tests := []struct {
		name    string
		status  int
		body    string
		kind    bridgeclient.OutcomeKind
		code    string
		stepID  string
		message string
	}{
		{"completed", 200, `{"status":"completed"}`, completed, "", "", ""},
		{"run step", 200, `{"status":"step","step":{"stepId":"a","type":"run","output":{"n":1}}}`, step, "", "", ""},
		{"run step without output", 200, `{"status":"step","step":{"stepId":"a","type":"run"}}`, step, "", "", ""},
		{"send step", 200, `{"status":"step","step":{"stepId":"s","type":"send","channel":"email","to":null,"content":{"body":"hi"}}}`, step, "", "", ""},
		{"digest with a string window", 200, `{"status":"step","step":{"stepId":"g","type":"digest","window":"10m","key":null}}`, step, "", "", ""},
		{"wait with a day timeout", 200, `{"status":"step","step":{"stepId":"w","type":"waitForEvent","event":"approved","timeout":"1d"}}`, step, "", "", ""},
		{"delay until", 200, `{"status":"step","step":{"stepId":"d","type":"delay","until":"2025-01-01T00:00:00Z"}}`, step, "", "", ""},
		{"send without content", 200, `{"status":"step","step":{"stepId":"s","type":"send","channel":"email"}}`, terminal, "invalid_step", "s", "content must be a JSON object"},
		{"send with a null content", 200, `{"status":"step","step":{"stepId":"s","type":"send","channel":"sms","content":null}}`, terminal, "invalid_step", "s", "content must be a JSON object"},
		{"send with a string content", 200, `{"status":"step","step":{"stepId":"s","type":"send","channel":"sms","content":"hi"}}`, terminal, "invalid_step", "s", "content must be a JSON object"},
		{"send with an array content", 200, `{"status":"step","step":{"stepId":"s","type":"send","channel":"sms","content":[1]}}`, terminal, "invalid_step", "s", "content must be a JSON object"},
		{"delay with seconds and until", 200, `{"status":"step","step":{"stepId":"d","type":"delay","seconds":1,"until":"2025-01-01T00:00:00Z"}}`, terminal, "invalid_step", "d", "exactly one"},
		{"delay until a local time", 200, `{"status":"step","step":{"stepId":"d","type":"delay","until":{"localTime":"09:00"}}}`, step, "", "", ""},
		{"delay until a bad local time", 200, `{"status":"step","step":{"stepId":"d","type":"delay","until":{"localTime":"25:00"}}}`, terminal, "invalid_step", "d", "until.localTime must be"},
		{"delay with seconds and a local time", 200, `{"status":"step","step":{"stepId":"d","type":"delay","seconds":1,"until":{"localTime":"09:00"}}}`, terminal, "invalid_step", "d", "exactly one"},
		{"digest on a cron", 200, `{"status":"step","step":{"stepId":"g","type":"digest","cron":"0 9 * * 1-5","key":null}}`, step, "", "", ""},
		{"digest with a window and a cron", 200, `{"status":"step","step":{"stepId":"g","type":"digest","window":60,"cron":"@daily"}}`, terminal, "invalid_step", "g", "not both"},
		{"digest without window", 200, `{"status":"step","step":{"stepId":"g","type":"digest"}}`, terminal, "invalid_step", "g", "window must be over 0"},
		{"wait with a bad timeout", 200, `{"status":"step","step":{"stepId":"w","type":"waitForEvent","event":"x","timeout":"soon"}}`, terminal, "invalid_step", "w", "timeout must be"},
		{"step of unknown type", 200, `{"status":"step","step":{"stepId":"x","type":"teleport"}}`, terminal, "invalid_step", "x", "type must be one of"},
		{"step without id", 200, `{"status":"step","step":{"type":"delay","seconds":1}}`, terminal, "invalid_step", "", "stepId must be"},
		{"step status without step", 200, `{"status":"step"}`, retry, "bridge_invalid_answer", "", "without a step"},
		{"unknown status", 200, `{"status":"paused"}`, retry, "bridge_invalid_answer", "", "paused"},
		{"unparseable 200", 200, `<html>hello</html>`, retry, "bridge_invalid_answer", "", "invalid answer"},
		{"500 from a step", 500, `{"error":{"message":"boom","stepId":"a"}}`, retry, "step_failed", "a", "boom"},
		{"500 from the workflow", 500, `{"error":{"code":"workflow_failed","message":"bad payload"}}`, retry, "bridge_error", "", "bad payload"},
		{"500 without body", 500, ``, retry, "bridge_error", "", "bridge answered 500: internal server error"},
		{"502", 502, `bad gateway`, retry, "bridge_error", "", "502"},
		{"503", 503, ``, retry, "bridge_error", "", "503"},
		{"401", 401, `{"error":{"code":"unauthorized","message":"bridge: no valid signature"}}`, terminal, "bridge_unauthorized", "", "no valid signature"},
		{"404", 404, ``, terminal, "workflow_not_found", "", "404"},
		{"422 nondeterministic", 422, `{"error":{"code":"nondeterministic","message":"step b moved"}}`, terminal, "nondeterministic", "", "step b moved"},
		{"422 duplicate step id", 422, `{"error":{"code":"duplicate_step_id","message":"a twice"}}`, terminal, "duplicate_step_id", "", "a twice"},
		{"422 without a code", 422, `nope`, terminal, "bridge_rejected", "", "422"},
		{"422 with a malformed code", 422, `{"error":{"code":"Not A Code","message":"x"}}`, terminal, "bridge_rejected", "", "x"},
		{"400", 400, `{"error":{"code":"invalid_json","message":"bad"}}`, terminal, "bridge_bad_request", "", "bad"},
		{"403", 403, ``, terminal, "bridge_rejected", "", "403: forbidden"},
		{"413", 413, ``, terminal, "bridge_rejected", "", "413"},
		{"429", 429, ``, retry, "bridge_error", "", "429"},
		{"409 replayed", 409, `{"error":{"code":"replayed","message":"bridge: replayed request"}}`, retry, "bridge_error", "", "replayed"},
		{"409", 409, ``, terminal, "bridge_rejected", "", "409"},
		{"408", 408, ``, retry, "bridge_error", "", "408"},
		{"302 without location", 302, ``, terminal, "bridge_rejected", "", "302"},
	}
	var c bridgeclient.Client
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := execute(t, &c, tt.status, tt.body)
			if o.Kind != tt.kind || o.Code != tt.code || o.StepID != tt.stepID || o.HTTPStatus != tt.status || !strings.Contains(o.Detail, tt.message) {
				t.Fatalf("got %+v\nwant kind %v code %q stepId %q status %d detail containing %q", o, tt.kind, tt.code, tt.stepID, tt.status, tt.message)
			}
			// The tenant's message is a fixed sentence with the status:
			// nothing of the answer's body, but the message of a Bridge
			// error body of a 500, or of a 422 nondeterministic or
			// duplicate_step_id (TestClientShowsTheBridgesMessage).
			shown := tt.status == 500 || o.Code == "nondeterministic" || o.Code == "duplicate_step_id"
			thrown := shown && o.Message != "" && strings.Contains(tt.body, `"message":"`+o.Message+`"`)
			if o.Code != "" && !safeMessage.MatchString(o.Message) && !thrown {
				t.Fatalf("message %q is not one of the fixed sentences", o.Message)
			}
			if (o.Kind == bridgeclient.OutcomeStep) != (o.Step != nil) {
				t.Fatalf("Step = %+v for kind %v", o.Step, o.Kind)
			}
		})
	}
}

func TestClientClipsMessages(t *testing.T) {
	var c bridgeclient.Client
	long := strings.Repeat("é", 2000)
	o := execute(t, &c, 500, `{"error":{"message":"`+long+`","stepId":"a"}}`)
	if len(o.Detail) > 1024+len("…") || !utf8.ValidString(o.Detail) || !strings.HasPrefix(long, strings.TrimSuffix(o.Detail, "…")) {
		t.Fatalf("detail of %d bytes: %q", len(o.Detail), o.Detail)
	}
}

func TestOutcomeKindString(t *testing.T) {
	for k, want := range map[bridgeclient.OutcomeKind]string{
		bridgeclient.OutcomeCompleted: "completed", bridgeclient.OutcomeStep: "step",
		bridgeclient.OutcomeRetryable: "retryable", bridgeclient.OutcomeTerminal: "terminal", 0: "OutcomeKind(0)",
	} {
		if k.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(k), k.String(), want)
		}
	}
}

func TestClientParsesStep(t *testing.T) {
	var c bridgeclient.Client
	url := answering(t, 200, `{"status":"step","step":{"stepId":"w","type":"waitForEvent","event":"approved","timeout":"1d12h"}}`)
	o, err := c.Execute(context.Background(), url, testKey, wire.ExecuteRequest{WorkflowID: "wf"})
	if err != nil || o.Step == nil {
		t.Fatalf("%+v, %v", o, err)
	}
	if got := o.Step.Timeout.Duration(); got != 36*time.Hour || o.Step.Event != "approved" {
		t.Fatalf("timeout %v event %q, want 36h approved", got, o.Step.Event)
	}

	url = answering(t, 200, `{"status":"step","step":{"stepId":"r","type":"run"}}`)
	if o, _ = c.Execute(context.Background(), url, testKey, wire.ExecuteRequest{WorkflowID: "wf"}); string(o.Step.Output) != "null" {
		t.Fatalf("omitted run output = %q, want null", o.Step.Output)
	}
}

func TestClientRequest(t *testing.T) {
	type seen struct {
		method, contentType, body string
		verified                  error
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.Header.Get("Content-Type"), string(body),
			wire.Verify(body, r.Header.Get(wire.HeaderTimestamp), r.Header.Get(wire.HeaderSignature), time.Now(), 0, "whsec_x")}
		_, _ = io.WriteString(w, `{"status":"completed"}`)
	}))
	defer srv.Close()

	var c bridgeclient.Client
	tests := []struct {
		name string
		req  wire.ExecuteRequest
		want string
	}{
		{"cron run", wire.ExecuteRequest{WorkflowID: "daily", RunID: "run_1"},
			`{"action":"execute","workflowId":"daily","runId":"run_1","payload":{},"subscriber":null,"steps":[]}`},
		{"with history", wire.ExecuteRequest{
			WorkflowID: "welcome", RunID: "run_2",
			Payload:    json.RawMessage(`{"plan":"<pro>"}`),
			Subscriber: &wire.Subscriber{SubscriberID: "u1", Contacts: map[string][]string{"email": {"a@x.io"}}, Locale: "en"},
			Steps: []wire.CompletedStep{
				{StepID: "fetch", Type: wire.StepRun, Output: json.RawMessage(`{"name":"Ada"}`)},
				{StepID: "pause", Type: wire.StepDelay},
			},
		}, `{"action":"execute","workflowId":"welcome","runId":"run_2","payload":{"plan":"<pro>"},` +
			`"subscriber":{"subscriberId":"u1","contacts":{"email":["a@x.io"]},"locale":"en"},` +
			`"steps":[{"stepId":"fetch","type":"run","output":{"name":"Ada"}},{"stepId":"pause","type":"delay","output":null}]}`},
	}
	for _, tt := range tests {
		o, err := c.Execute(context.Background(), srv.URL, "whsec_x", tt.req)
		if err != nil || o.Kind != bridgeclient.OutcomeCompleted {
			t.Fatalf("%s: %+v, %v", tt.name, o, err)
		}
		s := <-got
		if s.method != http.MethodPost || s.contentType != "application/json" || s.verified != nil || s.body != tt.want {
			t.Errorf("%s: bridge saw %+v\nwant body %s", tt.name, s, tt.want)
		}
	}
}

func TestClientFailures(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()

	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer slow.Close()
	defer close(release)

	req := wire.ExecuteRequest{WorkflowID: "wf"}
	t.Run("connection refused", func(t *testing.T) {
		o, err := (&bridgeclient.Client{}).Execute(context.Background(), closed.URL, testKey, req)
		if err != nil || o.Kind != bridgeclient.OutcomeRetryable || o.Code != "bridge_unreachable" || o.HTTPStatus != 0 || o.Message == "" {
			t.Fatalf("%+v, %v", o, err)
		}
	})
	t.Run("client timeout", func(t *testing.T) {
		o, err := (&bridgeclient.Client{Timeout: 50 * time.Millisecond}).Execute(context.Background(), slow.URL, testKey, req)
		if err != nil || o.Kind != bridgeclient.OutcomeRetryable || o.Code != "bridge_unreachable" {
			t.Fatalf("%+v, %v", o, err)
		}
	})
	t.Run("caller's context ends", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := (&bridgeclient.Client{}).Execute(ctx, slow.URL, testKey, req)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want context.DeadlineExceeded", err)
		}
	})
	t.Run("invalid url", func(t *testing.T) {
		if _, err := (&bridgeclient.Client{}).Execute(context.Background(), "http://a b", testKey, req); err == nil {
			t.Fatal("no error for an invalid url")
		}
	})
	t.Run("invalid payload", func(t *testing.T) {
		bad := wire.ExecuteRequest{WorkflowID: "wf", Payload: json.RawMessage(`{`)}
		if _, err := (&bridgeclient.Client{}).Execute(context.Background(), slow.URL, testKey, bad); err == nil {
			t.Fatal("no error for a payload that is not JSON")
		}
	})
}

// TestClientDrivesBridge plays the engine: it calls a real Bridge over HTTP
// until the run completes, recording each step's output as the service would.
func TestClientDrivesBridge(t *testing.T) {
	calls := map[string]int{}
	reg := bridge.NewRegistry().MustRegister(testworkflow.Onboarding(calls))
	srv := httptest.NewServer(bridge.Serve(reg, bridge.Options{SigningKey: "whsec_new", SigningKeys: []string{"whsec_old"}}))
	defer srv.Close()

	c := &bridgeclient.Client{Timeout: 5 * time.Second}
	req := wire.ExecuteRequest{WorkflowID: "onboarding", RunID: "run_1", Subscriber: &wire.Subscriber{SubscriberID: "u1"}}
	var trail []string
	for range 10 {
		o, err := c.Execute(context.Background(), srv.URL, "whsec_old", req) // signed with the previous secret
		if err != nil {
			t.Fatal(err)
		}
		if o.Kind == bridgeclient.OutcomeCompleted {
			break
		}
		if o.Kind != bridgeclient.OutcomeStep {
			t.Fatalf("unexpected outcome %+v", o)
		}
		trail = append(trail, o.Step.StepID+":"+string(o.Step.Type))
		output := o.Step.Output
		switch o.Step.Type {
		case wire.StepSend:
			output = json.RawMessage(`{"attemptId":"att_1","status":"sent"}`)
		case wire.StepDelay:
			output = nil
		}
		req.Steps = append(req.Steps, wire.CompletedStep{StepID: o.Step.StepID, Type: o.Step.Type, Output: output})
	}
	if got, want := strings.Join(trail, " "), "fetch:run welcome:send pause:delay score:run"; got != want {
		t.Fatalf("steps %q, want %q", got, want)
	}
	if calls["fetch"] != 1 || calls["render"] != 1 || calls["score"] != 1 {
		t.Fatalf("tenant code ran %v, want each once", calls)
	}

	// A clock off by more than the tolerance is refused for good.
	skewed := &bridgeclient.Client{Now: func() time.Time { return time.Now().Add(-10 * time.Minute) }}
	o, err := skewed.Execute(context.Background(), srv.URL, "whsec_new", req)
	if err != nil || o.Kind != bridgeclient.OutcomeTerminal || o.Code != "bridge_unauthorized" {
		t.Fatalf("skewed clock: %+v, %v", o, err)
	}
}

func TestClientDiscoverAndHealth(t *testing.T) {
	reg := bridge.NewRegistry().MustRegister(
		bridge.MustWorkflow("welcome", noop),
		bridge.MustWorkflow("daily_digest", noop, bridge.WithSchedule("@daily")),
	)
	srv := httptest.NewServer(bridge.Serve(reg, bridge.Options{SigningKey: testKey}))
	defer srv.Close()
	ctx := context.Background()
	var c bridgeclient.Client

	wfs, err := c.Discover(ctx, srv.URL, testKey)
	if err != nil || len(wfs) != 2 || wfs[0].WorkflowID != "welcome" || wfs[0].Schedule != nil ||
		wfs[1].Schedule == nil || *wfs[1].Schedule != "@daily" {
		t.Fatalf("Discover = %+v, %v", wfs, err)
	}
	h, err := c.Health(ctx, srv.URL, testKey)
	if err != nil || h != (wire.HealthAnswer{Status: "ok", Workflows: 2}) {
		t.Fatalf("Health = %+v, %v", h, err)
	}

	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	tests := []struct {
		name, url, secret string
		want              error
		message           string
	}{
		{"wrong secret", srv.URL, "whsec_wrong", bridgeclient.ErrRejected, "401"},
		{"not a bridge", answering(t, 200, `{"hello":1}`), testKey, bridgeclient.ErrRejected, ""},
		{"server error", answering(t, 503, ``), testKey, bridgeclient.ErrRejected, "503"},
		{"unreachable", closed.URL, testKey, bridgeclient.ErrUnreachable, ""},
	}
	for _, tt := range tests {
		_, err := c.Discover(ctx, tt.url, tt.secret)
		if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.message) {
			t.Errorf("Discover %s: %v, want %v containing %q", tt.name, err, tt.want, tt.message)
		}
		if _, err := c.Health(ctx, tt.url, tt.secret); !errors.Is(err, tt.want) {
			t.Errorf("Health %s: %v, want %v", tt.name, err, tt.want)
		}
	}
}

// TestClientLeaksNoAnswer: an internal service reached as a Bridge answers
// with secrets; neither the outcome's message nor the sync error carries
// them (only the status does), while the detail for the operator does.
func TestClientLeaksNoAnswer(t *testing.T) {
	const secret = "db_password=hunter2"
	var c bridgeclient.Client
	c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, status := range []int{200, 400, 401, 422, 500} {
		url := answering(t, status, `{"error":{"code":"x","message":"`+secret+`","stepId":"`+secret+`"},"status":"`+secret+`"}`)
		o, err := c.Execute(context.Background(), url, testKey, wire.ExecuteRequest{WorkflowID: "wf"})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(o.Message, "hunter2") || !safeMessage.MatchString(o.Message) {
			t.Errorf("%d: message %q", status, o.Message)
		}
		if !strings.Contains(o.Detail, "hunter2") && status != 200 {
			t.Errorf("%d: the detail lost the answer: %q", status, o.Detail)
		}
		if _, err := c.Discover(context.Background(), url, testKey); err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%d: Discover error %v", status, err)
		}
	}
	plain := answering(t, 200, `db_password=hunter2`)
	if _, err := c.Discover(context.Background(), plain, testKey); err == nil || strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "'d'") {
		t.Errorf("a non-JSON answer: %v", err)
	}
}

// TestClientFollowsNoRedirect: a 3xx is a terminal refusal and its
// Location is never called, even with an http.Client that would follow it.
func TestClientFollowsNoRedirect(t *testing.T) {
	var targetCalls atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { targetCalls.Add(1) }))
	defer target.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/admin", http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	c := bridgeclient.Client{HTTP: &http.Client{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	o, err := c.Execute(context.Background(), redirector.URL, testKey, wire.ExecuteRequest{WorkflowID: "wf"})
	if err != nil || o.Kind != bridgeclient.OutcomeTerminal || o.Code != apierr.CodeBridgeRejected || o.HTTPStatus != 307 {
		t.Fatalf("Execute = %+v, %v", o, err)
	}
	if _, err := c.Discover(context.Background(), redirector.URL, testKey); !errors.Is(err, bridgeclient.ErrRejected) || !strings.Contains(err.Error(), "307") {
		t.Fatalf("Discover = %v", err)
	}
	if n := targetCalls.Load(); n != 0 {
		t.Fatalf("the Location target was called %d times", n)
	}
}

// refusal is what an egress policy's dialer fails with.
type refusal struct{}

func (refusal) Error() string       { return "egress: loopback address 127.0.0.1 refused" }
func (refusal) EgressRefused() bool { return true }

func TestClientEgressRefusedIsTerminal(t *testing.T) {
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return nil, &net.OpError{Op: "dial", Net: network, Err: refusal{}}
	}}}
	c := bridgeclient.Client{HTTP: hc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	o, err := c.Execute(context.Background(), "http://internal.example/", testKey, wire.ExecuteRequest{WorkflowID: "wf"})
	if err != nil || o.Kind != bridgeclient.OutcomeTerminal || o.Code != apierr.CodeEgressRefused || strings.Contains(o.Message, "127.0.0.1") {
		t.Fatalf("Execute = %+v, %v", o, err)
	}
	if _, err := c.Discover(context.Background(), "http://internal.example/", testKey); !errors.Is(err, bridgeclient.ErrUnreachable) || strings.Contains(err.Error(), "127.0.0.1") {
		t.Fatalf("Discover = %v", err)
	}
}

// TestClientNeverRepeatsASignature: calls with the same body in the same
// second reach a replay-checking Bridge as distinct requests, all answered.
func TestClientNeverRepeatsASignature(t *testing.T) {
	reg := bridge.NewRegistry().MustRegister(bridge.MustWorkflow("wf", noop))
	srv := httptest.NewServer(bridge.Serve(reg, bridge.Options{SigningKey: testKey}))
	defer srv.Close()
	frozen := time.Now()
	c := &bridgeclient.Client{Now: func() time.Time { return frozen }}
	for i := range 5 {
		if _, err := c.Health(context.Background(), srv.URL, testKey); err != nil {
			t.Fatalf("health %d: %v", i, err)
		}
		o, err := c.Execute(context.Background(), srv.URL, testKey, wire.ExecuteRequest{WorkflowID: "wf", RunID: "run_1"})
		if err != nil || o.Kind != bridgeclient.OutcomeCompleted {
			t.Fatalf("execute %d: %+v %v", i, o, err)
		}
	}
}

const testKey = "whsec_test"

func noop(*bridge.Context, any) error { return nil }

// A rejection names the Bridge's status in its message, for the discover
// of a sync and for the outcome of an execute (CONTRACT.md §5, §8).
func TestRejectionNamesTheStatus(t *testing.T) {
	ctx := context.Background()
	var c bridgeclient.Client
	for _, tt := range []struct {
		status int
		body   string
		want   string
	}{
		{401, `{"error":{"code":"unauthorized","message":"bridge: no valid signature"}}`, "bridge answered 401: signature mismatch or clock skew"},
		{403, ``, "bridge answered 403: forbidden"},
		{302, ``, "bridge answered 302: redirects are not followed"},
		{200, `[]`, "bridge answered 200: not a discover answer"},
		{200, `{"status":"ok"}`, "bridge answered 200: a discover answer without workflows"},
	} {
		_, err := c.Discover(ctx, answering(t, tt.status, tt.body), testKey)
		if !errors.Is(err, bridgeclient.ErrRejected) || err.Error() != tt.want {
			t.Errorf("discover answered %d: error %v, want %q", tt.status, err, tt.want)
		}
	}
	for _, tt := range []struct {
		status int
		body   string
		want   string
	}{
		{403, `{"error":{"message":"go away"}}`, "bridge answered 403: forbidden"},
		{422, `{"error":{"message":"no code"}}`, "bridge answered 422: unprocessable entity"},
		{307, ``, "bridge answered 307: redirects are not followed"},
	} {
		o, err := c.Execute(ctx, answering(t, tt.status, tt.body), testKey, wire.ExecuteRequest{WorkflowID: "wf"})
		if err != nil || o.Code != apierr.CodeBridgeRejected || o.Message != tt.want {
			t.Errorf("execute answered %d: %+v %v, want bridge_rejected %q", tt.status, o, err, tt.want)
		}
	}
}

// TestClientShowsTheBridgesMessage: the tenant sees the Bridge's own
// message of a 500 whose body is a Bridge error body, cleaned and bounded;
// any other answer shows only its status.
func TestClientShowsTheBridgesMessage(t *testing.T) {
	long := strings.Repeat("é", 600)
	fixed := "bridge answered 500: internal server error"
	tests := []struct {
		name   string
		status int
		body   string
		want   string
	}{
		{"message only", 500, `{"error":{"message":"boom"}}`, "boom"},
		{"with a step", 500, `{"error":{"code":"step_failed","message":"boom","stepId":"a"}}`, "boom"},
		{"control characters dropped", 500, `{"error":{"message":" line1\nline2\u0000\u001b[31m\u0085 "}}`, "line1line2[31m"},
		{"invalid UTF-8 replaced", 500, "{\"error\":{\"message\":\"a\xffb\"}}", "a\uFFFDb"},
		{"cut to the bound", 500, `{"error":{"message":"` + long + `"}}`, strings.Repeat("é", bridgeclient.MaxBridgeMessageChars-1) + "…"},
		{"at the bound", 500, `{"error":{"message":"` + long[:2*bridgeclient.MaxBridgeMessageChars] + `"}}`, long[:2*bridgeclient.MaxBridgeMessageChars]},
		{"an HTML page", 500, `<html><body>db_password=hunter2</body></html>`, fixed},
		{"another field", 500, `{"error":{"message":"boom"},"trace":"x"}`, fixed},
		{"another field in the error", 500, `{"error":{"message":"boom","stack":"x"}}`, fixed},
		{"a message that is not a string", 500, `{"error":{"message":42}}`, fixed},
		{"an empty message", 500, `{"error":{"message":" \n"}}`, fixed},
		{"no message", 500, `{"error":{"code":"internal"}}`, fixed},
		{"trailing data", 500, `{"error":{"message":"boom"}} {"x":1}`, fixed},
		{"an array", 500, `[{"error":{"message":"boom"}}]`, fixed},
		{"a 502 with a Bridge error body", 502, `{"error":{"message":"boom"}}`, "bridge answered 502: bad gateway"},
		{"a 503 HTML page", 503, `<h1>down</h1>`, "bridge answered 503: service unavailable"},
	}
	var c bridgeclient.Client
	c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := execute(t, &c, tt.status, tt.body)
			if o.Message != tt.want || o.Kind != bridgeclient.OutcomeRetryable {
				t.Fatalf("message %q (%v), want %q", o.Message, o.Kind, tt.want)
			}
			if n := utf8.RuneCountInString(o.Message); n > bridgeclient.MaxBridgeMessageChars || !utf8.ValidString(o.Message) {
				t.Fatalf("message of %d characters, valid UTF-8 %v", n, utf8.ValidString(o.Message))
			}
		})
	}
	// A 422 nondeterministic or duplicate_step_id shows the SDK's message
	// (the step's position and both sides); another 422 its status alone.
	for _, tt := range []struct{ body, code, want string }{
		{`{"error":{"code":"nondeterministic","message":"nondeterministic workflow: step 1 was \"a\" (run) in the history, the code asked for \"b\" (run)"}}`,
			"nondeterministic", `nondeterministic workflow: step 1 was "a" (run) in the history, the code asked for "b" (run)`},
		{`{"error":{"code":"duplicate_step_id","message":"bridge: duplicate step id: \"a\" is called twice"}}`,
			"duplicate_step_id", `bridge: duplicate step id: "a" is called twice`},
		{`{"error":{"code":"nondeterministic","message":"x","trace":"y"}}`, "nondeterministic", "bridge answered 422: unprocessable entity"},
		{`{"error":{"code":"other_code","message":"x"}}`, "other_code", "bridge answered 422: unprocessable entity"},
	} {
		if o := execute(t, &c, 422, tt.body); o.Message != tt.want || o.Code != tt.code || o.Kind != bridgeclient.OutcomeTerminal {
			t.Errorf("422 %s: %+v, want %s %q", tt.body, o, tt.code, tt.want)
		}
	}
	// A sync shows the status alone, whatever the body.
	if _, err := c.Discover(context.Background(), answering(t, 500, `{"error":{"message":"boom"}}`), testKey); err == nil || err.Error() != fixed {
		t.Fatalf("Discover: %v", err)
	}
}

// TestClientLogsNoURLSecrets: a call that fails at the network level is
// logged with its host, never with the URL's query or userinfo (Go's
// url.Error quotes the whole URL, a token in the query included).
func TestClientLogsNoURLSecrets(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := ln.Addr().String()
	ln.Close() // nothing listens: the connection is refused
	url := "http://alice:hunter2@" + host + "/bridge?token=SECRET"
	var logs bytes.Buffer
	c := bridgeclient.Client{Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	ctx := context.Background()
	o, err := c.Execute(ctx, url, testKey, wire.ExecuteRequest{WorkflowID: "wf", RunID: "run_1"})
	if err != nil || o.Code != apierr.CodeBridgeUnreachable {
		t.Fatalf("Execute: %+v, %v", o, err)
	}
	if _, err := c.Discover(ctx, url, testKey); !errors.Is(err, bridgeclient.ErrUnreachable) {
		t.Fatalf("Discover: %v", err)
	}
	if _, err := c.Health(ctx, url, testKey); !errors.Is(err, bridgeclient.ErrUnreachable) {
		t.Fatalf("Health: %v", err)
	}
	out := logs.String()
	if n := strings.Count(out, "bridge: call failed"); n != 3 {
		t.Fatalf("%d failed calls logged, want 3:\n%s", n, out)
	}
	for _, secret := range []string{"SECRET", "hunter2", "alice", "token="} {
		if strings.Contains(out, secret) || strings.Contains(o.Detail, secret) || strings.Contains(o.Message, secret) {
			t.Errorf("%q in the log or the outcome:\n%s\n%+v", secret, out, o)
		}
	}
	if !strings.Contains(out, host) || !strings.Contains(o.Detail, "http://"+host+"/bridge") {
		t.Errorf("the host %s is not in the log:\n%s\n%+v", host, out, o)
	}
	// A URL that does not parse is the caller's error, without the URL's secrets either.
	if _, err := c.Execute(ctx, "http://alice:hunter2@"+host+"/%zz?token=SECRET", testKey, wire.ExecuteRequest{WorkflowID: "wf"}); err == nil ||
		strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("invalid url: %v", err)
	}
}
