package bridge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"time"

	"github.com/heraldhq/herald/bridge"
)

// greet fetches a display name, then e-mails the subscriber.
func greet(ctx *bridge.Context) error {
	name, err := bridge.Run(ctx, "fetch-name", func(context.Context) (string, error) {
		return "Ada", nil // a CRM or database lookup in real code
	})
	if err != nil {
		return err
	}
	_, err = bridge.Send(ctx, "welcome-email", "email", func() (bridge.SendContent, error) {
		return bridge.SendContent{Subject: "Welcome, " + name, Body: "Glad to have you."}, nil
	})
	return err
}

// Mount a Bridge and call it the way Herald does: a signed POST.
func ExampleServe() {
	reg := bridge.NewRegistry().MustRegister(bridge.MustWorkflow("welcome", greet))
	srv := httptest.NewServer(bridge.Serve(reg, bridge.Options{SigningKey: "whsec_example"}))
	defer srv.Close()

	body := []byte(`{"action":"execute","workflowId":"welcome","runId":"run_1","payload":{},` +
		`"subscriber":{"subscriberId":"u1"},"steps":[{"stepId":"fetch-name","type":"run","output":"Grace"}]}`)
	ts := time.Now().Unix()
	req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
	req.Header.Set(bridge.HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(bridge.HeaderSignature, bridge.Sign("whsec_example", ts, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	fmt.Print(resp.StatusCode, " ", string(answer))
	// Output:
	// 200 {"status":"step","step":{"stepId":"welcome-email","type":"send","channel":"email","to":null,"content":{"subject":"Welcome, Grace","body":"Glad to have you."}}}
}

func ExampleSign() {
	body := []byte(`{"action":"health"}`)
	fmt.Println(bridge.Sign("whsec_test", 1700000000, body))
	// Output: 0baaf36c6a86bf76d8d88bac4230fc4c36746de47a86021b4e3cc4d2c4da79bf
}

func ExampleVerify() {
	body := []byte(`{"action":"health"}`)
	now := time.Unix(1700000000, 0)
	sig := bridge.Sign("whsec_old", now.Unix(), body)

	// During a rotation, accept the new secret and the old one.
	fmt.Println(bridge.Verify(body, "1700000000", sig, now, 0, "whsec_new", "whsec_old"))
	fmt.Println(bridge.Verify(body, "1700000000", sig, now.Add(10*time.Minute), 0, "whsec_old"))
	// Output:
	// <nil>
	// bridge: signature timestamp outside tolerance: timestamp 1700000000 is 10m0s away (tolerance 5m0s)
}

// The engine's loop in miniature: execute, record the step, execute again.
func ExampleClient_Execute() {
	reg := bridge.NewRegistry().MustRegister(bridge.MustWorkflow("welcome", greet))
	srv := httptest.NewServer(bridge.Serve(reg, bridge.Options{SigningKey: "whsec_example"}))
	defer srv.Close()

	var c bridge.Client
	req := bridge.ExecuteRequest{WorkflowID: "welcome", RunID: "run_1", Subscriber: &bridge.Subscriber{SubscriberID: "u1"}}
	for {
		o, err := c.Execute(context.Background(), srv.URL, "whsec_example", req)
		if err != nil {
			panic(err)
		}
		if o.Kind != bridge.OutcomeStep {
			fmt.Println(o.Kind)
			return
		}
		fmt.Println(o.Step.Type, o.Step.StepID)
		output := o.Step.Output
		if o.Step.Type == bridge.StepSend {
			output, _ = json.Marshal(bridge.SendResult{AttemptID: "att_1", Status: "sent"}) // delivered by the service
		}
		req.Steps = append(req.Steps, bridge.CompletedStep{StepID: o.Step.StepID, Type: o.Step.Type, Output: output})
	}
	// Output:
	// run fetch-name
	// send welcome-email
	// completed
}

func ExampleWaitForEvent() {
	approval := bridge.MustWorkflow("approval", func(ctx *bridge.Context) error {
		ev, err := bridge.WaitForEvent(ctx, "wait-approval", "approved", 48*time.Hour)
		if err != nil {
			return err
		}
		subject := "Request expired"
		if ev != nil {
			var decision struct {
				By string `json:"by"`
			}
			if err := json.Unmarshal(ev, &decision); err != nil {
				return err
			}
			subject = "Approved by " + decision.By
		}
		_, err = bridge.Send(ctx, "outcome", "email", func() (bridge.SendContent, error) {
			return bridge.SendContent{Subject: subject, Body: "…"}, nil
		})
		return err
	})
	_ = bridge.NewRegistry().MustRegister(approval)
}

func ExampleParseDuration() {
	for _, s := range []string{"90s", "1h30m", "2d", "1.5d"} {
		d, _ := bridge.ParseDuration(s)
		fmt.Println(s, d)
	}
	// Output:
	// 90s 1m30s
	// 1h30m 1h30m0s
	// 2d 48h0m0s
	// 1.5d 36h0m0s
}

func ExampleNewWorkflow() {
	_, err := bridge.NewWorkflow("daily-digest", greet)
	fmt.Println(err)
	w, err := bridge.NewWorkflow("daily_digest", greet, bridge.WithSchedule("0 9 * * *"))
	fmt.Println(w.ID(), err)
	// Output:
	// bridge: invalid workflow id: "daily-digest"
	// daily_digest <nil>
}
