package bridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/internal/testworkflow"
)

const testKey = "whsec_test"

var testNow = time.Unix(1700000000, 0)

func clock() time.Time { return testNow }

func serve(wfs ...*bridge.Workflow) http.Handler {
	return bridge.Serve(bridge.NewRegistry().MustRegister(wfs...), bridge.Options{SigningKey: testKey, Now: clock})
}

// post sends body to h, signed with key at the instant at.
func post(h http.Handler, body, key string, at time.Time) (int, string) {
	req := httptest.NewRequest(http.MethodPost, "/herald", strings.NewReader(body))
	req.Header.Set(wire.HeaderTimestamp, strconv.FormatInt(at.Unix(), 10))
	req.Header.Set(wire.HeaderSignature, wire.Sign(key, at.Unix(), []byte(body)))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, strings.TrimSpace(rec.Body.String())
}

// execute asks h to execute workflowID with payload and the history steps.
func execute(t *testing.T, h http.Handler, workflowID, payload string, steps ...wire.CompletedStep) (int, string) {
	t.Helper()
	body, err := json.Marshal(wire.Request{Action: wire.ActionExecute, ExecuteRequest: &wire.ExecuteRequest{
		WorkflowID: workflowID,
		RunID:      "run_1",
		Payload:    json.RawMessage(payload),
		Subscriber: &bridge.Subscriber{SubscriberID: "u1", Contacts: map[string][]string{"email": {"u1@example.com"}}},
		Steps:      steps,
	}})
	if err != nil {
		t.Fatal(err)
	}
	return post(h, string(body), testKey, testNow)
}

func done(id string, typ wire.StepType, output string) wire.CompletedStep {
	return wire.CompletedStep{StepID: id, Type: typ, Output: json.RawMessage(output)}
}

// errorOf decodes an error body.
func errorOf(t *testing.T, body string) wire.ErrorInfo {
	t.Helper()
	var e wire.ErrorBody
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("not an error body: %s", body)
	}
	return e.Error
}

func TestExecuteReplay(t *testing.T) {
	fetched := done("fetch", wire.StepRun, `{"name":"Grace","plan":"free"}`)
	sent := done("welcome", wire.StepSend, `{"attemptId":"att_1","status":"sent"}`)
	paused := done("pause", wire.StepDelay, `null`)
	scored := done("score", wire.StepRun, `42`)

	tests := []struct {
		name  string
		steps []wire.CompletedStep
		want  string
		calls map[string]int
	}{
		{"first step runs", nil,
			`{"status":"step","step":{"stepId":"fetch","type":"run","output":{"name":"Ada","plan":"pro"}}}`,
			map[string]int{"fetch": 1}},
		{"recorded output is replayed, send described", []wire.CompletedStep{fetched},
			`{"status":"step","step":{"stepId":"welcome","type":"send","channel":"email","to":null,"content":{"subject":"Hi Grace","body":"<p>Welcome & enjoy</p>"}}}`,
			map[string]int{"render": 1}},
		{"delay described", []wire.CompletedStep{fetched, sent},
			`{"status":"step","step":{"stepId":"pause","type":"delay","seconds":90}}`,
			map[string]int{}},
		{"only the first uncompleted step executes", []wire.CompletedStep{fetched, sent, paused},
			`{"status":"step","step":{"stepId":"score","type":"run","output":42}}`,
			map[string]int{"score": 1}},
		{"completed", []wire.CompletedStep{fetched, sent, paused, scored},
			`{"status":"completed"}`,
			map[string]int{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := map[string]int{}
			status, body := execute(t, serve(testworkflow.Onboarding(calls)), "onboarding", `{}`, tt.steps...)
			if status != http.StatusOK || body != tt.want {
				t.Fatalf("got %d %s\nwant 200 %s", status, body, tt.want)
			}
			for k, n := range calls {
				if n != tt.calls[k] {
					t.Errorf("%s ran %d times, want %d", k, n, tt.calls[k])
				}
			}
		})
	}
}

func TestExecuteDescribesSteps(t *testing.T) {
	until := time.Date(2025, 1, 2, 3, 4, 5, 0, time.FixedZone("CET", 3600))
	tests := []struct {
		name string
		fn   func(*bridge.Context, any) error
		want string
	}{
		{"send to another subscriber", func(ctx *bridge.Context, _ any) error {
			_, err := bridge.Send(ctx, "s", "email", func(context.Context) (bridge.SendContent, error) {
				return bridge.SendContent{Subject: "S", Body: "B"}, nil
			}, bridge.To("u2"))
			return err
		}, `{"stepId":"s","type":"send","channel":"email","to":"u2","content":{"subject":"S","body":"B"}}`},
		{"send without subject", func(ctx *bridge.Context, _ any) error {
			_, err := bridge.Send(ctx, "s", "sms", func(context.Context) (bridge.SendContent, error) {
				return bridge.SendContent{Body: "B"}, nil
			})
			return err
		}, `{"stepId":"s","type":"send","channel":"sms","to":null,"content":{"body":"B"}}`},
		{"notify: the content's type names the channel", func(ctx *bridge.Context, _ any) error {
			_, err := bridge.Notify(ctx, "p", func(context.Context) (bridge.PushContent, error) {
				return bridge.PushContent{Title: "T", Body: "<b>", Data: map[string]string{"k": "v"}}, nil
			})
			return err
		}, `{"stepId":"p","type":"send","channel":"push","to":null,"content":{"title":"T","body":"<b>","data":{"k":"v"}}}`},
		{"notify in-app with an action", func(ctx *bridge.Context, _ any) error {
			_, err := bridge.Notify(ctx, "i", func(context.Context) (bridge.InAppContent, error) {
				return bridge.InAppContent{Body: "B", PrimaryAction: &bridge.InAppAction{Label: "Open", URL: "https://x.test/1"}}, nil
			}, bridge.To("u2"))
			return err
		}, `{"stepId":"i","type":"send","channel":"in_app","to":"u2","content":{"body":"B","primaryAction":{"label":"Open","url":"https://x.test/1"}}}`},
		{"notify a webhook", func(ctx *bridge.Context, _ any) error {
			_, err := bridge.Notify(ctx, "w", func(context.Context) (bridge.WebhookContent, error) {
				return bridge.WebhookContent{Data: json.RawMessage(`{"order":7}`)}, nil
			})
			return err
		}, `{"stepId":"w","type":"send","channel":"webhook","to":null,"content":{"data":{"order":7}}}`},
		{"notify an email with html and text", func(ctx *bridge.Context, _ any) error {
			if _, err := bridge.Notify(ctx, "e", func(context.Context) (bridge.EmailContent, error) {
				return bridge.EmailContent{Subject: "S", HTML: "<p>h</p>", Text: "t", ReplyTo: "r@x.test"}, nil
			}); err != nil {
				return err
			}
			return nil
		}, `{"stepId":"e","type":"send","channel":"email","to":null,"content":{"subject":"S","html":"<p>h</p>","text":"t","replyTo":"r@x.test"}}`},
		{"delay in seconds", func(ctx *bridge.Context, _ any) error {
			return bridge.Delay(ctx, "d", 1500*time.Millisecond)
		}, `{"stepId":"d","type":"delay","seconds":1.5}`},
		{"delay until, in UTC", func(ctx *bridge.Context, _ any) error {
			return bridge.DelayUntil(ctx, "d", until)
		}, `{"stepId":"d","type":"delay","until":"2025-01-02T02:04:05Z"}`},
		{"delay until a local time", func(ctx *bridge.Context, _ any) error {
			return bridge.DelayUntilLocal(ctx, "d", "09:00")
		}, `{"stepId":"d","type":"delay","until":{"localTime":"09:00"}}`},
		{"digest on a schedule", func(ctx *bridge.Context, _ any) error {
			_, err := bridge.Digest(ctx, "g", 0, bridge.DigestCron("0 9 * * 1-5"), bridge.DigestKey("k"))
			return err
		}, `{"stepId":"g","type":"digest","cron":"0 9 * * 1-5","key":"k"}`},
		{"wait with timeout", func(ctx *bridge.Context, _ any) error {
			_, _, err := bridge.WaitForEvent[any](ctx, "w", "approved", time.Hour)
			return err
		}, `{"stepId":"w","type":"waitForEvent","event":"approved","timeout":3600}`},
		{"wait forever", func(ctx *bridge.Context, _ any) error {
			_, _, err := bridge.WaitForEvent[any](ctx, "w", "approved", 0)
			return err
		}, `{"stepId":"w","type":"waitForEvent","event":"approved","timeout":null}`},
		{"digest with key", func(ctx *bridge.Context, _ any) error {
			_, err := bridge.Digest(ctx, "g", 10*time.Minute, bridge.DigestKey("comments"))
			return err
		}, `{"stepId":"g","type":"digest","window":600,"key":"comments"}`},
		{"digest without key", func(ctx *bridge.Context, _ any) error {
			_, err := bridge.Digest(ctx, "g", time.Minute)
			return err
		}, `{"stepId":"g","type":"digest","window":60,"key":null}`},
		{"throttle with key", func(ctx *bridge.Context, _ any) error {
			_, err := bridge.Throttle(ctx, "t", 3, time.Hour, bridge.ThrottleKey("order-7"))
			return err
		}, `{"stepId":"t","type":"throttle","limit":3,"window":3600,"key":"order-7"}`},
		{"throttle without key", func(ctx *bridge.Context, _ any) error {
			_, err := bridge.Throttle(ctx, "t", 1, 1500*time.Millisecond, bridge.ThrottleKey(""))
			return err
		}, `{"stepId":"t","type":"throttle","limit":1,"window":1.5,"key":null}`},
		{"run returning nothing", func(ctx *bridge.Context, _ any) error {
			_, err := bridge.Run(ctx, "r", func(context.Context) (*testworkflow.Profile, error) { return nil, nil })
			return err
		}, `{"stepId":"r","type":"run","output":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := execute(t, serve(bridge.MustWorkflow("wf", tt.fn)), "wf", `{}`)
			want := `{"status":"step","step":` + tt.want + `}`
			if status != http.StatusOK || body != want {
				t.Fatalf("got %d %s\nwant 200 %s", status, body, want)
			}
		})
	}
}

func TestExecuteReplaysStepOutputs(t *testing.T) {
	// The workflow reports what each step returned through the subject of
	// its final send.
	var got string
	wf := bridge.MustWorkflow("wf", func(ctx *bridge.Context, _ any) error {
		res, err := bridge.Send(ctx, "s", "email", func(context.Context) (bridge.SendContent, error) {
			t.Error("render called on replay")
			return bridge.SendContent{}, nil
		})
		if err != nil {
			return err
		}
		ev, _, err := bridge.WaitForEvent[json.RawMessage](ctx, "w", "approved", time.Hour)
		if err != nil {
			return err
		}
		_, signalled, err := bridge.WaitForEvent[json.RawMessage](ctx, "w2", "approved", time.Hour)
		if err != nil {
			return err
		}
		dg, err := bridge.Digest(ctx, "g", time.Minute)
		if err != nil {
			return err
		}
		if err := bridge.Delay(ctx, "d", time.Second); err != nil {
			return err
		}
		th, err := bridge.Throttle(ctx, "t", 3, time.Hour)
		if err != nil {
			return err
		}
		got = strings.Join([]string{res.AttemptID, res.Status, res.ProviderMessageID, string(ev),
			strconv.FormatBool(!signalled), strconv.Itoa(dg.Count), dg.Events[1].RunID,
			dg.Events[1].Payload["n"].(string), dg.Events[1].At.Format(time.RFC3339),
			strconv.FormatBool(th.Throttled), strconv.Itoa(th.Count)}, " ")
		return nil
	})
	status, body := execute(t, serve(wf), "wf", `{}`,
		done("s", wire.StepSend, `{"attemptId":"att_1","status":"sent","providerMessageId":"<m1@x>"}`),
		done("w", wire.StepWaitForEvent, `{"by":"boss"}`),
		done("w2", wire.StepWaitForEvent, `null`),
		done("g", wire.StepDigest, `{"count":2,"events":[{"payload":{"n":"1"},"runId":"run_1","at":"2025-01-01T00:00:00Z"},{"payload":{"n":"2"},"runId":"run_2","at":"2025-01-01T00:00:05Z"}]}`),
		wire.CompletedStep{StepID: "d", Type: wire.StepDelay}, // output null
		done("t", wire.StepThrottle, `{"throttled":true,"count":4}`),
	)
	if status != http.StatusOK || body != `{"status":"completed"}` {
		t.Fatalf("got %d %s", status, body)
	}
	want := `att_1 sent <m1@x> {"by":"boss"} true 2 run_2 2 2025-01-01T00:00:05Z true 4`
	if got != want {
		t.Fatalf("steps returned %q\nwant %q", got, want)
	}
}

func TestExecuteContext(t *testing.T) {
	var got []string
	wf := bridge.MustWorkflow("wf", func(ctx *bridge.Context, p struct {
		OrderID int64 `json:"orderId"`
	}) error {
		sub := "<none>"
		if ctx.Subscriber != nil {
			sub = ctx.Subscriber.SubscriberID + " " + ctx.Subscriber.Contacts["email"][0]
		}
		got = append(got, ctx.WorkflowID+" "+ctx.RunID+" "+strconv.FormatInt(p.OrderID, 10)+" "+sub)
		return nil
	})
	h := serve(wf)
	if status, body := execute(t, h, "wf", `{"orderId":9007199254740993}`); status != http.StatusOK {
		t.Fatalf("got %d %s", status, body)
	}
	// A cron run: no subscriber, no payload.
	if status, body := post(h, `{"action":"execute","workflowId":"wf","runId":"run_2","subscriber":null,"steps":[]}`, testKey, testNow); status != http.StatusOK {
		t.Fatalf("got %d %s", status, body)
	}
	want := []string{"wf run_1 9007199254740993 u1 u1@example.com", "wf run_2 0 <none>"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("workflow saw %q, want %q", got, want)
	}
}

func TestExecuteFailures(t *testing.T) {
	boom := errors.New("boom")
	runA := func(ctx *bridge.Context, _ any) error {
		_, err := bridge.Run(ctx, "a", func(context.Context) (int, error) { return 1, nil })
		return err
	}
	tests := []struct {
		name   string
		fn     func(*bridge.Context, any) error
		steps  []wire.CompletedStep
		status int
		code   string
		stepID string
		msg    string
	}{
		{name: "callback error", fn: func(ctx *bridge.Context, _ any) error {
			_, err := bridge.Run(ctx, "a", func(context.Context) (int, error) { return 0, boom })
			return err
		}, status: 500, code: "step_failed", stepID: "a", msg: "boom"},
		{name: "callback panic", fn: func(ctx *bridge.Context, _ any) error {
			_, err := bridge.Run(ctx, "a", func(context.Context) (int, error) { panic("kaput") })
			return err
		}, status: 500, code: "step_failed", stepID: "a", msg: "panic: kaput"},
		{name: "render error", fn: func(ctx *bridge.Context, _ any) error {
			_, err := bridge.Send(ctx, "s", "email", func(context.Context) (bridge.SendContent, error) { return bridge.SendContent{}, boom })
			return err
		}, status: 500, code: "step_failed", stepID: "s", msg: "boom"},
		{name: "output not JSON", fn: func(ctx *bridge.Context, _ any) error {
			_, err := bridge.Run(ctx, "a", func(context.Context) (func(), error) { return func() {}, nil })
			return err
		}, status: 500, code: "step_failed", stepID: "a", msg: "output does not encode as JSON"},
		{name: "workflow error outside steps", fn: func(*bridge.Context, any) error { return boom },
			status: 500, code: "workflow_failed", msg: "boom"},
		{name: "workflow panic outside steps", fn: func(*bridge.Context, any) error { panic("oops") },
			status: 500, code: "workflow_failed", msg: "workflow panicked: oops"},
		{name: "invalid step arguments", fn: func(ctx *bridge.Context, _ any) error { return bridge.Delay(ctx, "d", -time.Second) },
			status: 500, code: "invalid_step", stepID: "d", msg: "negative delay"},
		{name: "a local time that is not HH:MM", fn: func(ctx *bridge.Context, _ any) error { return bridge.DelayUntilLocal(ctx, "d", "9am") },
			status: 500, code: "invalid_step", stepID: "d", msg: `local time "9am" is not HH:MM`},
		{name: "a cron digest with a window", fn: func(ctx *bridge.Context, _ any) error {
			_, err := bridge.Digest(ctx, "g", time.Minute, bridge.DigestCron("@daily"))
			return err
		}, status: 500, code: "invalid_step", stepID: "g", msg: "a cron digest takes no window"},
		{name: "send on no channel", fn: func(ctx *bridge.Context, _ any) error {
			_, err := bridge.Send(ctx, "s", "", func(context.Context) (bridge.SendContent, error) { return bridge.SendContent{}, nil })
			return err
		}, status: 500, code: "invalid_step", stepID: "s", msg: "empty channel"},
		{name: "send without render", fn: func(ctx *bridge.Context, _ any) error {
			_, err := bridge.Send(ctx, "s", "email", nil)
			return err
		}, status: 500, code: "invalid_step", stepID: "s", msg: "nil render"},
		{name: "send to nobody", fn: func(ctx *bridge.Context, _ any) error {
			_, err := bridge.Send(ctx, "s", "email", func(context.Context) (bridge.SendContent, error) { return bridge.SendContent{}, nil }, bridge.To(""))
			return err
		}, status: 500, code: "invalid_step", stepID: "s", msg: "empty recipient"},
		{name: "run without callback", fn: func(ctx *bridge.Context, _ any) error {
			_, err := bridge.Run[int](ctx, "a", nil)
			return err
		}, status: 500, code: "invalid_step", stepID: "a", msg: "nil callback"},
		{name: "wait for no event", fn: func(ctx *bridge.Context, _ any) error {
			_, _, err := bridge.WaitForEvent[any](ctx, "w", "", 0)
			return err
		}, status: 500, code: "invalid_step", stepID: "w", msg: "empty event"},
		{name: "wait with negative timeout", fn: func(ctx *bridge.Context, _ any) error {
			_, _, err := bridge.WaitForEvent[any](ctx, "w", "approved", -time.Second)
			return err
		}, status: 500, code: "invalid_step", stepID: "w", msg: "negative timeout"},
		{name: "digest without window", fn: func(ctx *bridge.Context, _ any) error {
			_, err := bridge.Digest(ctx, "g", 0)
			return err
		}, status: 500, code: "invalid_step", stepID: "g", msg: "window must be positive"},
		{name: "throttle with limit 0", fn: func(ctx *bridge.Context, _ any) error {
			_, err := bridge.Throttle(ctx, "t", 0, time.Hour)
			return err
		}, status: 500, code: "invalid_step", stepID: "t", msg: "limit must be at least 1"},
		{name: "throttle without window", fn: func(ctx *bridge.Context, _ any) error {
			_, err := bridge.Throttle(ctx, "t", 3, 0)
			return err
		}, status: 500, code: "invalid_step", stepID: "t", msg: "window must be positive"},
		{name: "throttle window over 31 days", fn: func(ctx *bridge.Context, _ any) error {
			_, err := bridge.Throttle(ctx, "t", 3, 32*24*time.Hour)
			return err
		}, status: 500, code: "invalid_step", stepID: "t", msg: "at most 31 days"},
		{name: "delay until the zero time", fn: func(ctx *bridge.Context, _ any) error { return bridge.DelayUntil(ctx, "d", time.Time{}) },
			status: 500, code: "invalid_step", stepID: "d", msg: "zero time"},
		{name: "empty step id", fn: func(ctx *bridge.Context, _ any) error { return bridge.Delay(ctx, "", time.Second) },
			status: 500, code: "invalid_step", msg: "empty step id"},
		{name: "step inside a step", fn: func(ctx *bridge.Context, _ any) error {
			_, err := bridge.Run(ctx, "outer", func(context.Context) (int, error) {
				_ = bridge.Delay(ctx, "inner", time.Second) // error ignored: still refused
				return 1, nil
			})
			return err
		}, status: 500, code: "invalid_step", stepID: "inner", msg: "inside another step"},
		{name: "duplicate step id", fn: func(ctx *bridge.Context, _ any) error {
			if err := runA(ctx, nil); err != nil {
				return err
			}
			return runA(ctx, nil)
		}, steps: []wire.CompletedStep{done("a", wire.StepRun, `1`)}, status: 422, code: "duplicate_step_id", msg: `"a"`},
		{name: "steps called in another order", fn: func(ctx *bridge.Context, _ any) error {
			if err := bridge.Delay(ctx, "b", time.Second); err != nil {
				return err
			}
			return runA(ctx, nil)
		}, steps: []wire.CompletedStep{done("a", wire.StepRun, `1`), done("b", wire.StepDelay, `null`)},
			status: 422, code: "nondeterministic", msg: `nondeterministic workflow: step 1 was "a" (run) in the history, the code asked for "b" (delay)`},
		{name: "recorded step now of another type", fn: func(ctx *bridge.Context, _ any) error { return bridge.Delay(ctx, "a", time.Second) },
			steps:  []wire.CompletedStep{done("a", wire.StepRun, `1`)},
			status: 422, code: "nondeterministic", msg: `nondeterministic workflow: step 1 was "a" (run) in the history, the code asked for "a" (delay)`},
		{name: "recorded step no longer called", fn: runA,
			steps:  []wire.CompletedStep{done("a", wire.StepRun, `1`), done("b", wire.StepDelay, `null`)},
			status: 422, code: "nondeterministic", msg: `nondeterministic workflow: step 2 was "b" (delay) in the history, the code returned without asking for it`},
		{name: "recorded output of another type", fn: runA,
			steps:  []wire.CompletedStep{done("a", wire.StepRun, `"one"`)},
			status: 422, code: "nondeterministic", msg: `nondeterministic workflow: step 1 "a" (run) recorded an output that does not decode as int`},
		{name: "recorded send output not a SendResult", fn: func(ctx *bridge.Context, _ any) error {
			_, err := bridge.Send(ctx, "s", "email", nil)
			return err
		}, steps: []wire.CompletedStep{done("s", wire.StepSend, `[1]`)}, status: 400, code: "invalid_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := execute(t, serve(bridge.MustWorkflow("wf", tt.fn)), "wf", `{}`, tt.steps...)
			e := errorOf(t, body)
			if status != tt.status || e.Code != tt.code || e.StepID != tt.stepID || !strings.Contains(e.Message, tt.msg) {
				t.Fatalf("got %d %s\nwant %d code %q stepId %q message containing %q", status, body, tt.status, tt.code, tt.stepID, tt.msg)
			}
		})
	}
}

func TestStepErrorReachesWorkflow(t *testing.T) {
	boom := errors.New("boom")
	var seen error
	wf := bridge.MustWorkflow("wf", func(ctx *bridge.Context, _ any) error {
		_, err := bridge.Run(ctx, "a", func(context.Context) (int, error) { return 0, boom })
		seen = err
		return err
	})
	execute(t, serve(wf), "wf", `{}`)
	se, ok := errors.AsType[*bridge.StepError](seen)
	if !ok || se.StepID != "a" || !errors.Is(seen, boom) || seen.Error() != `bridge: step "a": boom` {
		t.Fatalf("Run returned %v, want a StepError of step a wrapping boom", seen)
	}
}

func TestExecuteIgnoresSwallowedErrors(t *testing.T) {
	later := 0
	wf := bridge.MustWorkflow("wf", func(ctx *bridge.Context, _ any) error {
		_, err := bridge.Run(ctx, "a", func(context.Context) (string, error) { return "done", nil })
		if !errors.Is(err, bridge.ErrSuspended) {
			t.Errorf("Run returned %v, want ErrSuspended", err)
		}
		// A careless workflow carries on: nothing more happens.
		_, err = bridge.Run(ctx, "b", func(context.Context) (int, error) { later++; return 0, nil })
		if !errors.Is(err, bridge.ErrSuspended) {
			t.Errorf("second Run returned %v, want ErrSuspended", err)
		}
		_ = bridge.Delay(ctx, "a", -1) // duplicate and invalid: no longer judged
		return errors.New("swallowed and replaced")
	})
	status, body := execute(t, serve(wf), "wf", `{}`)
	want := `{"status":"step","step":{"stepId":"a","type":"run","output":"done"}}`
	if status != http.StatusOK || body != want || later != 0 {
		t.Fatalf("got %d %s (later steps ran %d times)\nwant 200 %s", status, body, later, want)
	}
}

func TestExecuteFailureSurvivesSwallowing(t *testing.T) {
	wf := bridge.MustWorkflow("wf", func(ctx *bridge.Context, _ any) error {
		_, _ = bridge.Run(ctx, "a", func(context.Context) (int, error) { return 0, errors.New("boom") })
		_ = bridge.Delay(ctx, "b", time.Second)
		return nil
	})
	status, body := execute(t, serve(wf), "wf", `{}`)
	if e := errorOf(t, body); status != 500 || e.StepID != "a" {
		t.Fatalf("got %d %s, want 500 for step a", status, body)
	}
}

func TestRequestErrors(t *testing.T) {
	h := serve(bridge.MustWorkflow("wf", noop))
	tests := []struct {
		name   string
		body   string
		status int
		code   string
	}{
		{"malformed JSON", `{"action":`, 400, "invalid_json"},
		{"not an object", `[1,2]`, 400, "invalid_json"},
		{"wrong field type", `{"action":"execute","steps":{}}`, 400, "invalid_json"},
		{"trailing data", `{"action":"health"} {}`, 400, "invalid_json"},
		{"empty body", ``, 400, "invalid_json"},
		{"no action", `{}`, 400, "unknown_action"},
		{"unknown action", `{"action":"launch"}`, 400, "unknown_action"},
		{"action is case-sensitive", `{"action":"Health"}`, 400, "unknown_action"},
		{"payload not an object", `{"action":"execute","workflowId":"wf","payload":[1]}`, 400, "invalid_request"},
		{"step listed twice", `{"action":"execute","workflowId":"wf","steps":[{"stepId":"a","type":"run","output":1},{"stepId":"a","type":"run","output":1}]}`, 400, "invalid_request"},
		{"step without id", `{"action":"execute","workflowId":"wf","steps":[{"type":"run","output":1}]}`, 400, "invalid_request"},
		{"unknown workflow", `{"action":"execute","workflowId":"nope","payload":{},"subscriber":null,"steps":[]}`, 404, "workflow_not_found"},
		{"no workflow id", `{"action":"execute"}`, 404, "workflow_not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := post(h, tt.body, testKey, testNow)
			if e := errorOf(t, body); status != tt.status || e.Code != tt.code || e.Message == "" {
				t.Fatalf("got %d %s, want %d %s", status, body, tt.status, tt.code)
			}
		})
	}
}

func TestServeSignature(t *testing.T) {
	reg := bridge.NewRegistry().MustRegister(bridge.MustWorkflow("wf", noop))
	h := bridge.Serve(reg, bridge.Options{SigningKey: "whsec_new", SigningKeys: []string{"whsec_old"}, Now: clock})
	const health = `{"action":"health"}`

	tests := []struct {
		name   string
		key    string
		at     time.Time
		status int
	}{
		{"new key", "whsec_new", testNow, 200},
		{"old key during rotation", "whsec_old", testNow, 200},
		{"unknown key", "whsec_other", testNow, 401},
		{"300 s old", "whsec_new", testNow.Add(-300 * time.Second), 200},
		{"301 s old", "whsec_new", testNow.Add(-301 * time.Second), 401},
		{"300 s ahead", "whsec_new", testNow.Add(300 * time.Second), 200},
		{"301 s ahead", "whsec_new", testNow.Add(301 * time.Second), 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if status, body := post(h, health, tt.key, tt.at); status != tt.status {
				t.Fatalf("got %d %s, want %d", status, body, tt.status)
			}
		})
	}

	send := func(mutate func(*http.Request)) (int, string) {
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(health))
		req.Header.Set(wire.HeaderTimestamp, strconv.FormatInt(testNow.Unix(), 10))
		req.Header.Set(wire.HeaderSignature, wire.Sign("whsec_new", testNow.Unix(), []byte(health)))
		mutate(req)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	for name, mutate := range map[string]func(*http.Request){
		"unsigned":  func(r *http.Request) { r.Header = http.Header{} },
		"no ts":     func(r *http.Request) { r.Header.Del(wire.HeaderTimestamp) },
		"body +1":   func(r *http.Request) { r.Body = io.NopCloser(strings.NewReader(health + " ")) },
		"body flip": func(r *http.Request) { r.Body = io.NopCloser(strings.NewReader(`{"action":"hea1th"}`)) },
	} {
		if status, body := send(mutate); status != 401 || errorOf(t, body).Code != "unauthorized" {
			t.Errorf("%s: got %d %s, want 401 unauthorized", name, status, body)
		}
	}

	// With no key configured, nothing gets in.
	open := bridge.Serve(reg, bridge.Options{Now: clock})
	if status, _ := post(open, health, "", testNow); status != 401 {
		t.Errorf("no key configured: got %d, want 401", status)
	}
}

func TestServeSignatureCheckedBeforeParsing(t *testing.T) {
	// An unsigned malformed body is a 401, not a 400: nothing is parsed
	// before the signature passes.
	h := serve(bridge.MustWorkflow("wf", noop))
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{not json`))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 401 {
		t.Fatalf("got %d, want 401", rec.Code)
	}
}

func TestServeBodyLimit(t *testing.T) {
	h := bridge.Serve(bridge.NewRegistry(), bridge.Options{SigningKey: testKey, Now: clock, MaxBodyBytes: 16})
	status, body := post(h, `{"action":"health"}`, testKey, testNow)
	if status != http.StatusRequestEntityTooLarge || errorOf(t, body).Code != "body_too_large" {
		t.Fatalf("got %d %s, want 413", status, body)
	}
}

func TestServeAnyMethod(t *testing.T) {
	h := serve(bridge.MustWorkflow("wf", noop))
	for i, method := range []string{http.MethodGet, http.MethodPut, http.MethodPatch} {
		body := `{"action":"health"}`
		ts := testNow.Unix() + int64(i) // the same signature twice would be a replay
		req := httptest.NewRequest(method, "/", strings.NewReader(body))
		req.Header.Set(wire.HeaderTimestamp, strconv.FormatInt(ts, 10))
		req.Header.Set(wire.HeaderSignature, wire.Sign(testKey, ts, []byte(body)))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			t.Errorf("%s: got %d", method, rec.Code)
		}
	}
}

func TestHealthAndDiscover(t *testing.T) {
	h := serve(
		bridge.MustWorkflow("welcome", noop),
		bridge.MustWorkflow("daily_digest", noop, bridge.WithSchedule("0 9 * * *")),
		bridge.MustWorkflow("typed", noop, bridge.WithPayloadSchema(json.RawMessage(`{ "type": "object" }`))),
	)
	tests := []struct{ body, want string }{
		{`{"action":"health"}`, `{"status":"ok","workflows":3}`},
		{`{"action":"discover"}`, `{"workflows":[` +
			`{"workflowId":"welcome","schedule":null,"payloadSchema":null},` +
			`{"workflowId":"daily_digest","schedule":"0 9 * * *","payloadSchema":null},` +
			`{"workflowId":"typed","schedule":null,"payloadSchema":{"type":"object"}}]}`},
	}
	for _, tt := range tests {
		status, body := post(h, tt.body, testKey, testNow)
		if status != 200 || body != tt.want {
			t.Errorf("%s: got %d %s\nwant 200 %s", tt.body, status, body, tt.want)
		}
	}
}

// TestServeRefusesReplays: a request accepted once is refused when sent
// again inside the window, whatever the order of other requests; the
// same body with another timestamp (a fresh signature) passes; with
// replay checks off, the repeat passes.
func TestServeRefusesReplays(t *testing.T) {
	h := bridge.Serve(bridge.NewRegistry().MustRegister(bridge.MustWorkflow("wf", noop)), bridge.Options{SigningKey: testKey, Now: clock})
	const body = `{"action":"health"}`
	if status, got := post(h, body, testKey, testNow); status != 200 {
		t.Fatalf("first: %d %s", status, got)
	}
	if status, _ := post(h, body, testKey, testNow.Add(time.Second)); status != 200 {
		t.Fatalf("a fresh signature: %d", status)
	}
	status, got := post(h, body, testKey, testNow)
	if status != http.StatusConflict || errorOf(t, got).Code != "replayed" {
		t.Fatalf("replay: %d %s, want 409 replayed", status, got)
	}
	// A replay with a wrong signature is still a 401, not a hint.
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	req.Header.Set(wire.HeaderTimestamp, strconv.FormatInt(testNow.Unix(), 10))
	req.Header.Set(wire.HeaderSignature, wire.Sign("whsec_other", testNow.Unix(), []byte(body)))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized {
		t.Fatalf("a forged replay: %d", rec.Code)
	}

	off := bridge.Serve(bridge.NewRegistry(), bridge.Options{SigningKey: testKey, Now: clock, MaxReplayEntries: -1})
	for range 2 {
		if status, got := post(off, body, testKey, testNow); status != 200 {
			t.Fatalf("replay checks off: %d %s", status, got)
		}
	}
}

// TestServeReplayMemoryIsBounded: beyond MaxReplayEntries the oldest
// signatures are forgotten, the newest still refused.
func TestServeReplayMemoryIsBounded(t *testing.T) {
	h := bridge.Serve(bridge.NewRegistry(), bridge.Options{SigningKey: testKey, Now: clock, MaxReplayEntries: 2})
	bodies := []string{`{"action":"health","n":1}`, `{"action":"health","n":2}`, `{"action":"health","n":3}`}
	for _, b := range bodies {
		if status, got := post(h, b, testKey, testNow); status != 200 {
			t.Fatalf("%s: %d %s", b, status, got)
		}
	}
	if status, _ := post(h, bodies[2], testKey, testNow); status != http.StatusConflict {
		t.Fatalf("the newest replayed: %d", status)
	}
	if status, _ := post(h, bodies[0], testKey, testNow); status != 200 {
		t.Fatalf("the forgotten oldest: %d", status)
	}
}

func TestNotifyChannelsAndSkippedResult(t *testing.T) {
	var got []string
	wf := bridge.MustWorkflow("wf", func(ctx *bridge.Context, _ any) error {
		sms, err := bridge.Notify(ctx, "sms", func(context.Context) (bridge.SMSContent, error) {
			return bridge.SMSContent{Body: "hi"}, nil
		})
		if err != nil {
			return err
		}
		chat, err := bridge.Notify(ctx, "chat", func(context.Context) (bridge.ChatContent, error) {
			return bridge.ChatContent{Body: "hi"}, nil
		})
		if err != nil {
			return err
		}
		got = []string{strconv.FormatBool(sms.Skipped()), string(sms.Reason), strconv.FormatBool(sms.Reason == bridge.NoAddress),
			strconv.FormatBool(chat.Skipped()), string(chat.Reason)}
		return nil
	})
	h := serve(wf)
	// The first call describes the sms step on the sms channel.
	if status, body := execute(t, h, "wf", `{}`); status != http.StatusOK ||
		body != `{"status":"step","step":{"stepId":"sms","type":"send","channel":"sms","to":null,"content":{"body":"hi"}}}` {
		t.Fatalf("got %d %s", status, body)
	}
	status, body := execute(t, h, "wf", `{}`,
		done("sms", wire.StepSend, `{"attemptId":"att_1","status":"skipped","reason":"no_address"}`),
		done("chat", wire.StepSend, `{"attemptId":"att_2","status":"sent","providerMessageId":"m2"}`))
	if status != http.StatusOK || body != `{"status":"completed"}` {
		t.Fatalf("got %d %s", status, body)
	}
	if strings.Join(got, " ") != "true no_address true false " {
		t.Fatalf("results read %q", got)
	}
}

// Context.Controls refuses a step the workflow declares no controls for,
// and values that do not decode into its target: the step fails with
// the reason.
func TestControlsErrors(t *testing.T) {
	wf := bridge.MustWorkflow("ctl", func(ctx *bridge.Context, p struct{ Step string }) error {
		_, err := bridge.Notify(ctx, "mail", func(context.Context) (bridge.EmailContent, error) {
			var c struct{ Count int }
			if err := ctx.Controls(p.Step, &c); err != nil {
				return bridge.EmailContent{}, err
			}
			return bridge.EmailContent{Subject: "n", Body: strconv.Itoa(c.Count)}, nil
		})
		return err
	}, bridge.Controls("mail", json.RawMessage(`{"type":"object","properties":{"count":{"type":"string","default":"x"}}}`)))
	h := serve(wf)
	for _, tt := range []struct{ step, want string }{
		{"other", `bridge: step "other" of "ctl" declares no controls`},
		{"mail", `bridge: the controls of step "mail" do not decode as *struct { Count int }`},
	} {
		status, body := execute(t, h, "ctl", `{"step":"`+tt.step+`"}`)
		if e := errorOf(t, body); status != http.StatusInternalServerError || e.StepID != "mail" || !strings.HasPrefix(e.Message, tt.want) {
			t.Errorf("%s: %d %s, want a failed step saying %q", tt.step, status, body, tt.want)
		}
	}
}
