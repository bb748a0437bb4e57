package main

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/bridge/bridgetest"
)

// testdata/approval.json is the last execute request of a real approval run
// (approved, then completed), saved as the Bridge received it. Replaying it
// checks that the code still takes the path the run took: a change that
// would fail runs in flight as nondeterministic fails here first.
func TestApprovalReplaysItsHistory(t *testing.T) {
	h, err := bridgetest.LoadHistory("testdata/approval.json")
	if err != nil {
		t.Fatal(err)
	}
	res, err := bridgetest.Replay(bridge.MustWorkflow("approval", approval), h)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Completed {
		t.Fatalf("replay ended at %s (%s), want completed", res.NextStepID, res.NextStepType)
	}
}

// approvalReordered is approval with its first two steps swapped: it waits
// for the decision before asking for it.
func approvalReordered(ctx *bridge.Context, req approvalRequest) error {
	decision, ok, err := bridge.WaitForEvent[approvalDecision](ctx, "wait-approval", "approved", 48*time.Hour)
	if err != nil {
		return err
	}
	_, err = bridge.Send(ctx, "ask-approver", bridge.Email, func(context.Context) (bridge.SendContent, error) {
		return bridge.SendContent{Subject: "Approval needed: " + req.Title, Body: "…"}, nil
	}, bridge.To(req.ApproverID))
	if err != nil || !ok {
		return err
	}
	_, err = bridge.Send(ctx, "notify-approved", bridge.Email, func(context.Context) (bridge.SendContent, error) {
		return bridge.SendContent{Subject: "Approved: " + req.Title, Body: "by " + decision.By}, nil
	})
	return err
}

func TestReorderedApprovalIsCaught(t *testing.T) {
	h, err := bridgetest.LoadHistory("testdata/approval.json")
	if err != nil {
		t.Fatal(err)
	}
	_, err = bridgetest.Replay(bridge.MustWorkflow("approval", approvalReordered), h)
	want := `nondeterministic workflow: step 1 was "ask-approver" (send) in the history, the code asked for "wait-approval" (waitForEvent)`
	if !errors.Is(err, bridge.ErrNondeterministic) || fmt.Sprint(err) != want {
		t.Fatalf("replay of the reordered code: %v\nwant %s", err, want)
	}
}
