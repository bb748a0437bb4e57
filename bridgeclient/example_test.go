package bridgeclient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/bridgeclient"
)

// The engine's loop in miniature: execute, record the step, execute again.
func ExampleClient_Execute() {
	greet := bridge.MustWorkflow("welcome", func(ctx *bridge.Context, _ struct{}) error {
		name, err := bridge.Run(ctx, "fetch-name", func(context.Context) (string, error) { return "Ada", nil })
		if err != nil {
			return err
		}
		_, err = bridge.Send(ctx, "welcome-email", bridge.Email, func(context.Context) (bridge.SendContent, error) {
			return bridge.SendContent{Subject: "Welcome, " + name, Body: "Glad to have you."}, nil
		})
		return err
	})
	srv := httptest.NewServer(bridge.Serve(bridge.NewRegistry().MustRegister(greet), bridge.Options{SigningKey: "whsec_example"}))
	defer srv.Close()

	var c bridgeclient.Client
	req := wire.ExecuteRequest{WorkflowID: "welcome", RunID: "run_1", Subscriber: &wire.Subscriber{SubscriberID: "u1"}}
	for {
		o, err := c.Execute(context.Background(), srv.URL, "whsec_example", req)
		if err != nil {
			panic(err)
		}
		if o.Kind != bridgeclient.OutcomeStep {
			fmt.Println(o.Kind)
			return
		}
		fmt.Println(o.Step.Type, o.Step.StepID)
		output := o.Step.Output
		if o.Step.Type == wire.StepSend {
			output, _ = json.Marshal(wire.SendResult{AttemptID: "att_1", Status: "sent"}) // delivered by the service
		}
		req.Steps = append(req.Steps, wire.CompletedStep{StepID: o.Step.StepID, Type: o.Step.Type, Output: output})
	}
	// Output:
	// run fetch-name
	// send welcome-email
	// completed
}
