package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/bridgeclient"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/runstate"
	"github.com/heraldhq/herald/stepcontrols"
)

// PreviewInput is the body of POST /v1/workflows/{workflowId}/preview:
// the step previewed, and optionally a subscriber, a payload, a locale,
// values of controls to try (step id → values, over the resolved ones)
// and a run whose recorded outputs the earlier steps replay.
type PreviewInput struct {
	StepID       string
	SubscriberID *string
	Payload      json.RawMessage
	Locale       *string
	Controls     map[string]json.RawMessage
	RunID        *string
}

// PreviewResult is what a preview answers: the previewed step as the
// Bridge described it (an email's HTML in its layout), and the controls
// and locale it was rendered with.
type PreviewResult struct {
	Step     wire.Step
	Controls map[string]json.RawMessage
	Locale   string
}

// Preview has the tenant's Bridge render the step in.StepID of workflow
// as a run would reach it, without running any step body but that
// step's content function (action preview): earlier steps replay the
// outputs in.RunID recorded, else a `run` step stands for its declared
// sample. It sends nothing and writes nothing.
//
// Errors: 404 workflow_not_found, run_not_found, subscriber_not_found;
// 422 validation_failed (no stepId, a bad locale, a run of another
// workflow, a step the code does not reach), invalid_controls,
// preview_needs_sample (a run step without a recorded output or a
// sample, named), invalid_content (an unknown layout); 409
// bridge_not_configured; 502 bridge_unreachable, bridge_rejected (the
// Bridge's failure, with its message).
func (c *Control) Preview(ctx context.Context, tenant, workflow string, in PreviewInput) (PreviewResult, error) {
	var p apierr.Problems
	if in.StepID == "" {
		p.Add("stepId", "is required: the step to preview")
	}
	locale := ""
	if in.Locale != nil && *in.Locale != "" {
		l, ok := stepcontrols.NormalizeLocale(*in.Locale)
		if !ok {
			p.Add("locale", "must be a locale such as fr or fr-CA")
		}
		locale = l
	}
	if len(in.Payload) > 0 && string(in.Payload) != "null" {
		var obj map[string]json.RawMessage
		if json.Unmarshal(in.Payload, &obj) != nil || obj == nil {
			p.Add("payload", "must be a JSON object")
		}
	} else {
		in.Payload = json.RawMessage("{}")
	}
	if err := p.Err(); err != nil {
		return PreviewResult{}, err
	}
	wfs, err := c.Workflows(ctx, tenant)
	if err != nil {
		return PreviewResult{}, err
	}
	var wf *Workflow
	for i := range wfs {
		if wfs[i].WorkflowID == workflow {
			wf = &wfs[i]
		}
	}
	if wf == nil {
		return PreviewResult{}, apierr.Errorf(apierr.CodeWorkflowNotFound, "workflow %q is not among the tenant's synced workflows", clip(workflow, MaxWorkflowIDChars))
	}
	req := wire.ExecuteRequest{WorkflowID: workflow, RunID: "run_preview", Payload: in.Payload, StepID: in.StepID}
	var recorded json.RawMessage // the run's recorded controls
	if in.RunID != nil {
		st, payload, err := c.previewRun(ctx, tenant, *in.RunID)
		if err != nil {
			return PreviewResult{}, err
		}
		if st.WorkflowID != workflow {
			p.Add("runId", "is a run of workflow %q", st.WorkflowID)
			return PreviewResult{}, p.Err()
		}
		req.RunID = st.RunID
		if len(in.Payload) == 0 || string(in.Payload) == "{}" {
			req.Payload = payload
		}
		for _, s := range st.CompletedSteps() {
			if s.StepID == in.StepID {
				break
			}
			req.Steps = append(req.Steps, wire.CompletedStep{StepID: s.StepID, Type: wire.StepType(s.Type), Output: s.Output})
		}
		if len(st.Subscriber) > 0 && in.SubscriberID == nil {
			var sub wire.Subscriber
			if json.Unmarshal(st.Subscriber, &sub) == nil {
				req.Subscriber = &sub
			}
		}
		if in.SubscriberID == nil && req.Subscriber == nil && st.SubscriberID != nil {
			in.SubscriberID = st.SubscriberID
		}
		if locale == "" && st.Controls != nil {
			recorded, locale = st.Controls, st.Locale
		}
	}
	if in.SubscriberID != nil {
		sub, err := c.Subscriber(tenant, *in.SubscriberID)
		if err != nil {
			return PreviewResult{}, err
		}
		ws := &wire.Subscriber{SubscriberID: *in.SubscriberID, Contacts: sub.Contacts}
		if sub.Locale != nil {
			ws.Locale = *sub.Locale
		}
		if sub.Timezone != nil {
			ws.Timezone = *sub.Timezone
		}
		if len(sub.Attributes) > 0 {
			_ = json.Unmarshal(sub.Attributes, &ws.Attributes)
		}
		req.Subscriber = ws
	}
	if locale == "" && req.Subscriber != nil {
		locale = req.Subscriber.Locale
	}
	if req.Controls, err = c.previewControls(ctx, tenant, wf, recorded, locale, in.Controls); err != nil {
		return PreviewResult{}, err
	}
	if len(req.Controls) > 0 {
		req.Locale = locale
	}
	url, secret, err := c.BridgeSecret(ctx, tenant)
	if errors.Is(err, apierr.ErrNotFound) {
		return PreviewResult{}, errBridgeRequired
	}
	if err != nil {
		return PreviewResult{}, err
	}
	out, err := c.rt.Preview(ctx, url, secret, req)
	if err != nil {
		return PreviewResult{}, err
	}
	switch out.Kind {
	case bridgeclient.OutcomePreviewNeeds:
		return PreviewResult{}, &apierr.ValidationError{Code: apierr.CodePreviewNeedsSample,
			Message:  fmt.Sprintf("the preview reached run step %q, which has neither a recorded output (give a runId that ran it) nor a declared preview sample", out.StepID),
			Problems: []apierr.FieldProblem{{Field: "steps." + out.StepID, Problem: "needs a recorded output or a declared preview sample"}}}
	case bridgeclient.OutcomeCompleted:
		p.Add("stepId", "the workflow completed without reaching step %q", clip(in.StepID, maxControlStepIDBytes))
		return PreviewResult{}, p.Err()
	case bridgeclient.OutcomeStep:
	default:
		code := apierr.CodeBridgeRejected
		if out.Code == apierr.CodeBridgeUnreachable {
			code = apierr.CodeBridgeUnreachable
		}
		return PreviewResult{}, apierr.New(code, "the Bridge failed the preview: "+out.Message)
	}
	step := *out.Step
	if step.Type == wire.StepSend && step.Channel == delivery.KindEmail {
		if err := delivery.ValidateContent(step.Channel, step.Content); err != nil {
			return PreviewResult{}, err
		}
		if step.Content, err = delivery.ApplyLayout(c.store, tenant, step.Content); err != nil {
			return PreviewResult{}, err
		}
	}
	return PreviewResult{Step: step, Controls: req.Controls, Locale: req.Locale}, nil
}

// previewRun reads a run's state and its trigger's payload.
func (c *Control) previewRun(ctx context.Context, tenant, runID string) (*runstate.State, json.RawMessage, error) {
	if !ValidRunID(runID) {
		return nil, nil, errRunNotFound("")
	}
	evs, err := c.log.History(ctx, eventlog.Subject(tenant, eventlog.AggRun, runID), 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := runstate.Fold(evs)
	if err != nil {
		return nil, nil, err
	}
	if st.RunID == "" {
		return nil, nil, errRunNotFound(runID)
	}
	payload := json.RawMessage("{}")
	ev, ok, err := c.log.First(ctx, eventlog.Subject(tenant, eventlog.AggTransaction, st.TransactionID))
	if err != nil {
		return nil, nil, err
	}
	var acc events.TriggerAcceptedData
	if ok && ev.Decode(&acc) == nil && len(acc.Payload) > 0 {
		payload = acc.Payload
	}
	return st, payload, nil
}

// previewControls returns the controls a preview renders with: those the
// run recorded, else those resolved now for locale, with the values of
// try over them (each step's checked against its schema).
func (c *Control) previewControls(ctx context.Context, tenant string, wf *Workflow, recorded json.RawMessage, locale string,
	try map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	var out map[string]json.RawMessage
	if recorded != nil {
		if err := json.Unmarshal(recorded, &out); err != nil {
			return nil, err
		}
	} else {
		stored, err := c.store.ControlValues(tenant, wf.WorkflowID)
		if err != nil {
			return nil, err
		}
		layers := make([]stepcontrols.Stored, len(stored))
		for i, v := range stored {
			layers[i] = stepcontrols.Stored{StepID: v.StepID, Locale: v.Locale, Values: v.Values}
		}
		if out, err = stepcontrols.ResolveAll(wf.Controls, layers, locale); err != nil {
			return nil, err
		}
	}
	for step, values := range try {
		cs, err := stepSchemaOf([]Workflow{*wf}, wf.WorkflowID, step)
		if err != nil {
			return nil, err
		}
		checked, err := checkControlValues(ctx, cs, wf.Controls[step], values)
		if err != nil {
			return nil, err
		}
		merged := map[string]json.RawMessage{}
		_ = json.Unmarshal(out[step], &merged)
		for k, v := range checked {
			merged[k] = v
		}
		if out[step], err = json.Marshal(merged); err != nil {
			return nil, err
		}
	}
	return out, nil
}
