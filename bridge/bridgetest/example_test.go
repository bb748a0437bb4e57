package bridgetest_test

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/bridge/bridgetest"
)

func ExampleReplay() {
	// The history as the Bridge received it (in a test: LoadHistory from
	// testdata).
	h, err := bridgetest.ParseHistory([]byte(`{"action":"execute","workflowId":"welcome","runId":"run_1",
		"payload":{},"subscriber":{"subscriberId":"u1"},
		"steps":[{"stepId":"load-user","type":"run","output":"Ada"},
		         {"stepId":"send-email","type":"send","output":{"attemptId":"att_1","status":"sent"}}]}`))
	if err != nil {
		panic(err)
	}
	loadUser := func(ctx *bridge.Context) (string, error) {
		return bridge.Run(ctx, "load-user", func(context.Context) (string, error) { return "Ada", nil })
	}
	sendEmail := func(ctx *bridge.Context, name string) error {
		_, err := bridge.Send(ctx, "send-email", bridge.Email, func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Subject: "Welcome, " + name, Body: "…"}, nil
		})
		return err
	}

	welcome := bridge.MustWorkflow("welcome", func(ctx *bridge.Context, _ struct{}) error {
		name, err := loadUser(ctx)
		if err != nil {
			return err
		}
		return sendEmail(ctx, name)
	})
	fmt.Println(bridgetest.Replay(welcome, h))

	// The same workflow, edited: it now greets before it loads.
	edited := bridge.MustWorkflow("welcome", func(ctx *bridge.Context, _ struct{}) error {
		if err := sendEmail(ctx, "there"); err != nil {
			return err
		}
		_, err := loadUser(ctx)
		return err
	})
	_, err = bridgetest.Replay(edited, h)
	fmt.Println(err)
	// Output:
	// {true  } <nil>
	// nondeterministic workflow: step 1 was "load-user" (run) in the history, the code asked for "send-email" (send)
}
