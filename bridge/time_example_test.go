package bridge_test

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/bridge"
)

// DelayUntilLocal waits for a time of the subscriber's day, in its time
// zone; DigestCron closes a digest at a schedule's instant, in that zone
// too. A send held by quiet hours reports when it went in HeldUntil.
func ExampleDelayUntilLocal() {
	morning := bridge.MustWorkflow("morning_brief", func(ctx *bridge.Context, _ struct{}) error {
		if err := bridge.DelayUntilLocal(ctx, "wait-9am", "09:00"); err != nil {
			return err
		}
		res, err := bridge.Digest(ctx, "weekdays", 0, bridge.DigestCron("0 9 * * 1-5"))
		if err != nil {
			return err
		}
		sent, err := bridge.Send(ctx, "brief", bridge.Email, func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Subject: fmt.Sprintf("%d updates", res.Count), Body: "…"}, nil
		})
		if err == nil && sent.HeldUntil != nil {
			fmt.Println("held by quiet hours until", sent.HeldUntil.Format("15:04"))
		}
		return err
	})
	h := bridge.Serve(bridge.NewRegistry().MustRegister(morning), bridge.Options{SigningKey: "whsec_example"})
	run := `{"action":"execute","workflowId":"morning_brief","runId":"run_1","payload":{},"subscriber":{"subscriberId":"u1","timezone":"Europe/Paris"},"steps":[`
	call(h, run+`]}`)
	call(h, run+`{"stepId":"wait-9am","type":"delay","output":null}]}`)
	call(h, run+`{"stepId":"wait-9am","type":"delay","output":null},{"stepId":"weekdays","type":"digest","output":{"count":2,"events":[]}},`+
		`{"stepId":"brief","type":"send","output":{"attemptId":"a","status":"sent","heldUntil":"2026-06-02T07:30:00Z"}}]}`)
	// Output:
	// 200 {"status":"step","step":{"stepId":"wait-9am","type":"delay","until":{"localTime":"09:00"}}}
	// 200 {"status":"step","step":{"stepId":"weekdays","type":"digest","cron":"0 9 * * 1-5","key":null}}
	// held by quiet hours until 07:30
	// 200 {"status":"completed"}
}

// ParseDuration reads a delay or a window a payload carries, as the
// service writes durations: days too.
func ExampleParseDuration() {
	for _, s := range []string{"30m", "1d", "2d12h", "-1h"} {
		d, err := bridge.ParseDuration(s)
		fmt.Println(d, err != nil)
	}
	// Output:
	// 30m0s false
	// 24h0m0s false
	// 60h0m0s false
	// 0s true
}
