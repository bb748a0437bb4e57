package bridgeclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/bridge/wire"
)

// Check asks the Bridge at url to replay req's steps without running any
// step body (the check action) and classifies the answer as [Client.Execute]
// does: OutcomeCompleted, OutcomeStep with a Step that carries only its id
// and type, or a failure (422 nondeterministic with the Bridge's message
// naming both sides, unreachable, …). Its error is Execute's.
func (c *Client) Check(ctx context.Context, url, secret string, req wire.ExecuteRequest) (Outcome, error) {
	body, err := encodeRun(wire.ActionCheck, req)
	if err != nil {
		return Outcome{}, err
	}
	rep, err := c.post(ctx, url, secret, body)
	if err != nil {
		return Outcome{}, err
	}
	var o Outcome
	switch {
	case rep.err != nil:
		o = unreachable(rep.status, rep.err)
	case rep.tooLarge:
		o = invalidAnswer(Outcome{HTTPStatus: rep.status}, fmt.Sprintf("over %d bytes", MaxAnswerBytes))
	case rep.status == http.StatusOK:
		o = checkAnswer(rep.body)
	default:
		o = outcomeOf(rep.status, rep.body)
	}
	if o.Detail != "" {
		c.logger().Warn("bridge: call failed", "action", wire.ActionCheck, "runId", req.RunID, "host", hostOf(url),
			"status", o.HTTPStatus, "code", o.Code, "detail", o.Detail)
	}
	return o, nil
}

// checkAnswer classifies the 200 answer to a check call.
func checkAnswer(body []byte) Outcome {
	o := Outcome{HTTPStatus: http.StatusOK}
	var a wire.CheckAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return invalidAnswer(o, fmt.Sprintf("not a check answer: %v", err))
	}
	switch {
	case a.Status == wire.StatusCompleted:
		o.Kind = OutcomeCompleted
	case a.Status == wire.StatusStep && a.Step != nil && a.Step.StepID != "" && a.Step.Type != "" &&
		validID(a.Step.StepID) && validID(string(a.Step.Type)):
		o.Kind, o.Step = OutcomeStep, &wire.Step{StepID: a.Step.StepID, Type: a.Step.Type}
	default:
		o = invalidAnswer(o, "neither completed nor a step with its id and type")
		o.Kind, o.Code = OutcomeTerminal, apierr.CodeBridgeInvalidAnswer
	}
	return o
}
