// Package testworkflow holds the workflows that the tests of the Bridge
// SDK (bridge) and of its client in the service (bridgeclient) both run:
// one definition, so that the two sides are tested against the same
// steps.
package testworkflow

import (
	"context"
	"time"

	"github.com/heraldhq/herald/bridge"
)

// Profile is the output of Onboarding's first step.
type Profile struct {
	Name string `json:"name"`
	Plan string `json:"plan"`
}

// Onboarding is the workflow "onboarding" of four steps: a run "fetch"
// returning Profile{Ada, pro}, a send "welcome" by email greeting the
// fetched name, a delay "pause" of 90 seconds and a run "score" returning
// 42. It counts in calls each time its tenant code runs ("fetch",
// "render", "score").
func Onboarding(calls map[string]int) *bridge.Workflow {
	return bridge.MustWorkflow("onboarding", func(ctx *bridge.Context, _ any) error {
		p, err := bridge.Run(ctx, "fetch", func(context.Context) (Profile, error) {
			calls["fetch"]++
			return Profile{Name: "Ada", Plan: "pro"}, nil
		})
		if err != nil {
			return err
		}
		_, err = bridge.Send(ctx, "welcome", bridge.Email, func(context.Context) (bridge.SendContent, error) {
			calls["render"]++
			return bridge.SendContent{Subject: "Hi " + p.Name, Body: "<p>Welcome & enjoy</p>"}, nil
		})
		if err != nil {
			return err
		}
		if err := bridge.Delay(ctx, "pause", 90*time.Second); err != nil {
			return err
		}
		_, err = bridge.Run(ctx, "score", func(context.Context) (int, error) {
			calls["score"]++
			return 42, nil
		})
		return err
	})
}
