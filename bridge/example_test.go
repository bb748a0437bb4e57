package bridge_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/bridge/wire"
)

// greet fetches a display name, then e-mails the subscriber.
func greet(ctx *bridge.Context, _ struct{}) error {
	name, err := bridge.Run(ctx, "fetch-name", func(context.Context) (string, error) {
		return "Ada", nil // a CRM or database lookup in real code
	})
	if err != nil {
		return err
	}
	_, err = bridge.Send(ctx, "welcome-email", bridge.Email, func(context.Context) (bridge.SendContent, error) {
		return bridge.SendContent{Subject: "Welcome, " + name, Body: "Glad to have you."}, nil
	})
	return err
}

// call posts body to h signed as Herald signs it, and prints the answer.
func call(h http.Handler, body string) {
	srv := httptest.NewServer(h)
	defer srv.Close()
	ts := time.Now().Unix()
	req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader([]byte(body)))
	req.Header.Set(wire.HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(wire.HeaderSignature, wire.Sign("whsec_example", ts, []byte(body)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	fmt.Print(resp.StatusCode, " ", string(answer))
}

// Mount a Bridge and call it the way Herald does: a signed POST.
func ExampleServe() {
	reg := bridge.NewRegistry().MustRegister(bridge.MustWorkflow("welcome", greet))
	h := bridge.Serve(reg, bridge.Options{SigningKey: "whsec_example"})
	call(h, `{"action":"execute","workflowId":"welcome","runId":"run_1","payload":{},`+
		`"subscriber":{"subscriberId":"u1"},"steps":[{"stepId":"fetch-name","type":"run","output":"Grace"}]}`)
	// Output:
	// 200 {"status":"step","step":{"stepId":"welcome-email","type":"send","channel":"email","to":null,"content":{"subject":"Welcome, Grace","body":"Glad to have you."}}}
}

// A workflow receives its trigger payload decoded into the type of its
// function's second parameter.
func ExampleNewWorkflow() {
	type order struct {
		OrderID string `json:"orderId"`
		Total   int    `json:"totalCents"`
	}
	shipped := bridge.MustWorkflow("order_shipped", func(ctx *bridge.Context, o order) error {
		_, err := bridge.Send(ctx, "notify", bridge.SMS, func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Body: fmt.Sprintf("Order %s (%d.%02d €) is on its way.", o.OrderID, o.Total/100, o.Total%100)}, nil
		})
		return err
	})
	h := bridge.Serve(bridge.NewRegistry().MustRegister(shipped), bridge.Options{SigningKey: "whsec_example"})
	call(h, `{"action":"execute","workflowId":"order_shipped","runId":"run_1","payload":{"orderId":"A-17","totalCents":4250},"subscriber":{"subscriberId":"u1"},"steps":[]}`)
	call(h, `{"action":"execute","workflowId":"order_shipped","runId":"run_2","payload":{"orderId":17},"subscriber":{"subscriberId":"u1"},"steps":[]}`)

	_, err := bridge.NewWorkflow("order-shipped", func(*bridge.Context, order) error { return nil })
	fmt.Println(err)
	// Output:
	// 200 {"status":"step","step":{"stepId":"notify","type":"send","channel":"sms","to":null,"content":{"body":"Order A-17 (42.50 €) is on its way."}}}
	// 400 {"error":{"code":"invalid_request","message":"bridge: invalid request: the payload does not decode as bridge_test.order: json: cannot unmarshal number into Go struct field order.orderId of type string"}}
	// bridge: invalid workflow id: "order-shipped"
}

// WaitForEvent decodes the signal's payload; ok is false on timeout.
func ExampleWaitForEvent() {
	type decision struct {
		By string `json:"by"`
	}
	approval := bridge.MustWorkflow("approval", func(ctx *bridge.Context, _ struct{}) error {
		d, ok, err := bridge.WaitForEvent[decision](ctx, "wait-approval", "approved", 48*time.Hour)
		if err != nil {
			return err
		}
		subject := "Request expired"
		if ok {
			subject = "Approved by " + d.By
		}
		_, err = bridge.Send(ctx, "outcome", bridge.Email, func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Subject: subject, Body: "…"}, nil
		})
		return err
	})
	h := bridge.Serve(bridge.NewRegistry().MustRegister(approval), bridge.Options{SigningKey: "whsec_example"})
	for _, output := range []string{`{"by":"ann"}`, `null`} {
		call(h, `{"action":"execute","workflowId":"approval","runId":"run_1","payload":{},"subscriber":{"subscriberId":"u1"},`+
			`"steps":[{"stepId":"wait-approval","type":"waitForEvent","output":`+output+`}]}`)
	}
	// Output:
	// 200 {"status":"step","step":{"stepId":"outcome","type":"send","channel":"email","to":null,"content":{"subject":"Approved by ann","body":"…"}}}
	// 200 {"status":"step","step":{"stepId":"outcome","type":"send","channel":"email","to":null,"content":{"subject":"Request expired","body":"…"}}}
}

// A digest per post: comments on one post are gathered together.
func ExampleDigest() {
	type comment struct {
		PostID string `json:"postId"`
	}
	comments := bridge.MustWorkflow("comments", func(ctx *bridge.Context, c comment) error {
		got, err := bridge.Digest(ctx, "gather", 10*time.Minute, bridge.DigestKey(c.PostID))
		if err != nil {
			return err
		}
		_, err = bridge.Send(ctx, "summary", bridge.Email, func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Subject: fmt.Sprintf("%d new comments", got.Count), Body: "…"}, nil
		})
		return err
	})
	h := bridge.Serve(bridge.NewRegistry().MustRegister(comments), bridge.Options{SigningKey: "whsec_example"})
	call(h, `{"action":"execute","workflowId":"comments","runId":"run_1","payload":{"postId":"p42"},"subscriber":{"subscriberId":"u1"},"steps":[]}`)
	// Output:
	// 200 {"status":"step","step":{"stepId":"gather","type":"digest","window":600,"key":"p42"}}
}

// At most three order updates an hour per subscriber and order: a run
// over the limit completes without sending. The first call describes the
// step; the second replays a recorded count of 4.
func ExampleThrottle() {
	type update struct {
		OrderID string `json:"orderId"`
	}
	updates := bridge.MustWorkflow("order_update", func(ctx *bridge.Context, u update) error {
		t, err := bridge.Throttle(ctx, "cap", 3, time.Hour, bridge.ThrottleKey(u.OrderID))
		if err != nil || t.Throttled {
			return err
		}
		_, err = bridge.Send(ctx, "notify", bridge.Email, func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Subject: "Order " + u.OrderID + " updated", Body: "…"}, nil
		})
		return err
	})
	h := bridge.Serve(bridge.NewRegistry().MustRegister(updates), bridge.Options{SigningKey: "whsec_example"})
	req := `{"action":"execute","workflowId":"order_update","runId":"run_1","payload":{"orderId":"o7"},"subscriber":{"subscriberId":"u1"},"steps":[%s]}`
	call(h, fmt.Sprintf(req, ""))
	call(h, fmt.Sprintf(req, `{"stepId":"cap","type":"throttle","output":{"throttled":true,"count":4}}`))
	// Output:
	// 200 {"status":"step","step":{"stepId":"cap","type":"throttle","limit":3,"window":3600,"key":"o7"}}
	// 200 {"status":"completed"}
}

// Send's render function gets the request's context, for a template
// lookup or a translation service; To names another recipient.
func ExampleSend() {
	loadTemplate := func(ctx context.Context, name string) (string, error) {
		return "Your weekly report is ready.", ctx.Err() // a template store in real code
	}
	report := bridge.MustWorkflow("weekly_report", func(ctx *bridge.Context, _ struct{}) error {
		_, err := bridge.Send(ctx, "report", bridge.Email, func(c context.Context) (bridge.SendContent, error) {
			body, err := loadTemplate(c, "weekly")
			return bridge.SendContent{Subject: "Weekly report", Body: body}, err
		}, bridge.To("ops"))
		return err
	}, bridge.WithSchedule("0 8 * * 1"))
	h := bridge.Serve(bridge.NewRegistry().MustRegister(report), bridge.Options{SigningKey: "whsec_example"})
	call(h, `{"action":"execute","workflowId":"weekly_report","runId":"run_1","payload":{},"subscriber":null,"steps":[]}`)
	// Output:
	// 200 {"status":"step","step":{"stepId":"report","type":"send","channel":"email","to":"ops","content":{"subject":"Weekly report","body":"Your weekly report is ready."}}}
}

// Notify takes the content of each channel kind in full; the content's
// type names the channel. A send the service skipped (the subscriber has
// no phone number) is read from its result, without string compares:
// here the workflow falls back to e-mail.
func ExampleNotify() {
	wf := bridge.MustWorkflow("shipped", func(ctx *bridge.Context, _ struct{}) error {
		res, err := bridge.Notify(ctx, "sms", func(context.Context) (bridge.SMSContent, error) {
			return bridge.SMSContent{Body: "Your order is on its way."}, nil
		})
		if err != nil || !res.Skipped() || res.Reason != bridge.NoAddress {
			return err
		}
		_, err = bridge.Notify(ctx, "email", func(context.Context) (bridge.EmailContent, error) {
			return bridge.EmailContent{Subject: "Shipped", HTML: "<p>On its way.</p>", Text: "On its way."}, nil
		})
		return err
	})
	h := bridge.Serve(bridge.NewRegistry().MustRegister(wf), bridge.Options{SigningKey: "whsec_example"})
	call(h, `{"action":"execute","workflowId":"shipped","runId":"run_1","payload":{},"subscriber":{"subscriberId":"u1"},"steps":[]}`)
	call(h, `{"action":"execute","workflowId":"shipped","runId":"run_1","payload":{},"subscriber":{"subscriberId":"u1"},`+
		`"steps":[{"stepId":"sms","type":"send","output":{"attemptId":"att_1","status":"skipped","reason":"no_address"}}]}`)
	// Output:
	// 200 {"status":"step","step":{"stepId":"sms","type":"send","channel":"sms","to":null,"content":{"body":"Your order is on its way."}}}
	// 200 {"status":"step","step":{"stepId":"email","type":"send","channel":"email","to":null,"content":{"subject":"Shipped","html":"<p>On its way.</p>","text":"On its way."}}}
}

// A skipped send completes its step: Skipped reports it and Reason says
// why, one of NoAddress, Preference and Suppressed.
func ExampleSendResult_Skipped() {
	for _, res := range []bridge.SendResult{
		{AttemptID: "att_1", Status: "sent", ProviderMessageID: "m1"},
		{AttemptID: "att_2", Status: "skipped", Reason: bridge.Preference},
	} {
		switch {
		case !res.Skipped():
			fmt.Println(res.AttemptID, "sent as", res.ProviderMessageID)
		case res.Reason == bridge.Preference:
			fmt.Println(res.AttemptID, "skipped: the subscriber opted out")
		}
	}
	// Output:
	// att_1 sent as m1
	// att_2 skipped: the subscriber opted out
}
