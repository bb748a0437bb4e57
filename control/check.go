package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/bridgeclient"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/projections"
	"github.com/heraldhq/herald/runstate"
)

// Bounds of a check.
const (
	// DefaultCheckSince is how far back a check looks for finished runs.
	DefaultCheckSince = 168 * time.Hour
	// MaxCheckSince bounds CheckCommand.Since.
	MaxCheckSince = 90 * 24 * time.Hour
	// DefaultCheckMax is how many runs a check replays at most.
	DefaultCheckMax = 1000
	// MaxCheckMax bounds CheckCommand.Max.
	MaxCheckMax = 10_000
	// checkConcurrency is how many calls to the candidate are in flight.
	checkConcurrency = 8
	// checkCallTimeout bounds one call to the candidate.
	checkCallTimeout = 10 * time.Second
	// checkTimeout bounds a whole check.
	checkTimeout = 2 * time.Minute
)

// CheckCommand replays recorded runs against a candidate Bridge.
type CheckCommand struct {
	BridgeURL string
	// SigningSecret signs the calls; "": the tenant's own secret.
	SigningSecret string
	// WorkflowID limits the check to one workflow; "": every workflow.
	WorkflowID string
	// Since: finished runs are checked when they ended this recently.
	// Zero: DefaultCheckSince.
	Since time.Duration
	// Max is how many runs are checked at most, unfinished ones first.
	// Zero: DefaultCheckMax.
	Max int
}

// CheckReport is what a check found.
type CheckReport struct {
	Checked  int
	OK       int
	Breaking []CheckBreak
}

// CheckBreak is a run the candidate would not replay.
type CheckBreak struct {
	RunID      string
	WorkflowID string
	Status     string
	// Position is the 1-based position of the first step the candidate
	// disagrees with.
	Position int
	Recorded wire.StepRef
	// Candidate is what the candidate asks for at Position: a step, or,
	// when CandidateError is set, an error instead.
	Candidate      *wire.StepRef
	CandidateError string
}

// Check replays the tenant's recorded runs against the candidate Bridge
// of cmd: every unfinished run first (the ones a deploy of the candidate
// breaks), then the runs finished within cmd.Since, newest first, cmd.Max
// at most. It calls the candidate with the check action, which runs no
// step body, and writes nothing to the log.
//
// Errors: a *apierr.ValidationError naming the fields at fault (the
// candidate's URL as PUT /v1/bridge checks it, with the egress rules);
// bridge_not_configured when no secret is given and the tenant has no
// Bridge.
func (c *Control) Check(ctx context.Context, tenant string, cmd CheckCommand) (CheckReport, error) {
	var p apierr.Problems
	if problem := checkWebhookURL(cmd.BridgeURL); problem != "" {
		p.Add("bridgeUrl", "%s", problem)
	} else if problem := c.checkDestinationURL(ctx, cmd.BridgeURL); problem != "" {
		p.Add("bridgeUrl", "%s", problem)
	}
	if cmd.WorkflowID != "" && !wire.ValidWorkflowID(cmd.WorkflowID) {
		p.Add("workflowId", "is not a valid workflow id")
	}
	switch {
	case cmd.Since == 0:
		cmd.Since = DefaultCheckSince
	case cmd.Since < 0 || cmd.Since > MaxCheckSince:
		p.Add("since", "must be positive and at most %s", MaxCheckSince)
	}
	switch {
	case cmd.Max == 0:
		cmd.Max = DefaultCheckMax
	case cmd.Max < 0 || cmd.Max > MaxCheckMax:
		p.Add("max", "must be between 1 and %d", MaxCheckMax)
	}
	if len(cmd.SigningSecret) > 1024 {
		p.Add("signingSecret", "must be at most 1024 bytes")
	}
	if err := p.Err(); err != nil {
		return CheckReport{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	secret := cmd.SigningSecret
	if secret == "" {
		var err error
		if _, secret, err = c.BridgeSecret(ctx, tenant); err != nil {
			return CheckReport{}, err
		}
	}
	ck := &checker{c: c, tenant: tenant, url: cmd.BridgeURL, secret: secret, client: c.checkClient()}
	// A candidate that does not answer, or refuses the secret, would
	// break every run alike: one error says it.
	_, err := ck.client.Health(ctx, ck.url, ck.secret)
	switch {
	case errors.Is(err, bridgeclient.ErrUnreachable):
		return CheckReport{}, apierr.New(apierr.CodeBridgeUnreachable, err.Error())
	case err != nil:
		return CheckReport{}, apierr.New(apierr.CodeBridgeRejected, err.Error())
	}
	runs, err := c.checkedRuns(tenant, cmd, c.rtOpts.Now())
	if err != nil {
		return CheckReport{}, err
	}
	breaks := make([]*CheckBreak, len(runs))
	errs := make([]error, len(runs))
	sem := make(chan struct{}, checkConcurrency)
	var wg sync.WaitGroup
	for i, st := range runs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			breaks[i], errs[i] = ck.run(ctx, st)
		}()
	}
	wg.Wait()
	rep := CheckReport{Breaking: []CheckBreak{}}
	for i := range runs {
		if errs[i] != nil {
			return CheckReport{}, errs[i]
		}
		rep.Checked++
		if breaks[i] == nil {
			rep.OK++
			continue
		}
		rep.Breaking = append(rep.Breaking, *breaks[i])
	}
	return rep, nil
}

// checkedRuns lists the runs a check replays: every unfinished run, then
// those finished since now-cmd.Since, newest first, cmd.Max in all.
func (c *Control) checkedRuns(tenant string, cmd CheckCommand, now time.Time) ([]*runstate.State, error) {
	var unfinished, finished []*runstate.State
	after := now.Add(-cmd.Since)
	page := projections.Page{Limit: 500}
	for {
		runs, next, err := c.store.Runs(tenant, projections.RunFilter{WorkflowID: cmd.WorkflowID}, page)
		if err != nil {
			return nil, err
		}
		for _, st := range runs {
			switch {
			case !st.Status.Finished():
				if len(unfinished) < cmd.Max {
					unfinished = append(unfinished, st)
				}
			case !st.UpdatedAt.Before(after) && len(finished) < cmd.Max:
				finished = append(finished, st)
			}
		}
		if next == "" || len(unfinished) >= cmd.Max {
			break
		}
		page.Cursor = next
	}
	out := append(unfinished, finished...)
	return out[:min(len(out), cmd.Max)], nil
}

// checkClient is the client of the calls to candidates: through the
// egress policy, as the engine's calls to Bridges. One for the Control, so
// that it never signs two identical requests alike (a Bridge refuses the
// second as a replay).
func (c *Control) checkClient() *bridgeclient.Client {
	c.checkOnce.Do(func() {
		c.checks = &bridgeclient.Client{Timeout: checkCallTimeout, Logger: c.logger}
		if c.egress != nil {
			c.checks.HTTP = &http.Client{Transport: c.egress.RequireTLS(c.egress.Transport())}
		}
	})
	return c.checks
}

// checker replays runs against one candidate.
type checker struct {
	c      *Control
	tenant string
	url    string
	secret string
	client *bridgeclient.Client
}

// run checks one run: nil when the candidate replays it.
func (k *checker) run(ctx context.Context, listed *runstate.State) (*CheckBreak, error) {
	evs, err := k.c.log.History(ctx, eventlog.Subject(k.tenant, eventlog.AggRun, listed.RunID), 0)
	if err != nil {
		return nil, err
	}
	st, err := runstate.Fold(evs)
	if err != nil {
		return nil, err
	}
	if st.RunID == "" {
		return nil, nil // erased since it was listed
	}
	req := wire.ExecuteRequest{WorkflowID: st.WorkflowID, RunID: st.RunID}
	if req.Payload, err = k.payload(ctx, st.TransactionID); err != nil {
		return nil, err
	}
	if req.Subscriber, err = k.subscriber(st); err != nil {
		return nil, err
	}
	// recorded: the completed steps, then the step the run waits at.
	var recorded []wire.StepRef
	for _, s := range st.CompletedSteps() {
		req.Steps = append(req.Steps, wire.CompletedStep{StepID: s.StepID, Type: wire.StepType(s.Type), Output: s.Output})
		recorded = append(recorded, wire.StepRef{StepID: s.StepID, Type: wire.StepType(s.Type)})
	}
	if p := st.Pending(); p != nil && !p.Bridge() {
		recorded = append(recorded, wire.StepRef{StepID: p.StepID, Type: wire.StepType(p.Type)})
	}
	agrees := func(n int) (bool, bridgeclient.Outcome, error) {
		r := req
		r.Steps = req.Steps[:n]
		o, err := k.client.Check(ctx, k.url, k.secret, r)
		if err != nil {
			return false, o, err
		}
		switch {
		case n < len(recorded):
			return o.Kind == bridgeclient.OutcomeStep && o.Step.StepID == recorded[n].StepID && o.Step.Type == recorded[n].Type, o, nil
		case n == len(req.Steps):
			// Past everything recorded: the code may end or go on.
			return o.Kind == bridgeclient.OutcomeStep || o.Kind == bridgeclient.OutcomeCompleted, o, nil
		}
		return false, o, nil
	}
	ok, _, err := agrees(len(req.Steps))
	if err != nil || ok {
		return nil, err
	}
	// The first prefix the candidate disagrees with: agreement holds for
	// every prefix shorter than it, so a binary search finds it.
	lo, hi := 0, len(req.Steps) // disagrees at hi
	for lo < hi {
		mid := (lo + hi) / 2
		ok, _, err := agrees(mid)
		if err != nil {
			return nil, err
		}
		if ok {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	_, o, err := agrees(hi)
	if err != nil {
		return nil, err
	}
	b := &CheckBreak{RunID: st.RunID, WorkflowID: st.WorkflowID, Status: string(st.Status), Position: hi + 1}
	if hi < len(recorded) {
		b.Recorded = recorded[hi]
	}
	switch o.Kind {
	case bridgeclient.OutcomeStep:
		b.Candidate = &wire.StepRef{StepID: o.Step.StepID, Type: o.Step.Type}
	case bridgeclient.OutcomeCompleted:
		b.CandidateError = "the workflow returns here"
	default:
		b.CandidateError = o.Message
		if o.Code != "" {
			b.CandidateError = o.Code + ": " + o.Message
		}
	}
	return b, nil
}

// payload is the trigger's payload of the run's transaction.
func (k *checker) payload(ctx context.Context, txn string) (json.RawMessage, error) {
	ev, ok, err := k.c.log.First(ctx, eventlog.Subject(k.tenant, eventlog.AggTransaction, txn))
	if err != nil || !ok {
		return json.RawMessage("{}"), err
	}
	var d events.TriggerAcceptedData
	if err := ev.Decode(&d); err != nil {
		return nil, fmt.Errorf("control: run's trigger: %w", err)
	}
	if len(d.Payload) == 0 {
		return json.RawMessage("{}"), nil
	}
	return d.Payload, nil
}

// subscriber is the run's subscriber as its Bridge saw it: frozen at its
// first turn, else as stored now.
func (k *checker) subscriber(st *runstate.State) (*wire.Subscriber, error) {
	if st.SubscriberID == nil {
		return nil, nil
	}
	if len(st.Subscriber) > 0 {
		var sub wire.Subscriber
		if err := json.Unmarshal(st.Subscriber, &sub); err != nil {
			return nil, fmt.Errorf("control: run %s: recorded subscriber: %w", st.RunID, err)
		}
		return &sub, nil
	}
	sub := &wire.Subscriber{SubscriberID: *st.SubscriberID}
	s, err := k.c.store.Subscriber(k.tenant, *st.SubscriberID)
	if errors.Is(err, projections.ErrNotFound) {
		return sub, nil
	}
	if err != nil {
		return nil, err
	}
	sub.Contacts = s.Contacts
	if s.Locale != nil {
		sub.Locale = *s.Locale
	}
	if s.Timezone != nil {
		sub.Timezone = *s.Timezone
	}
	if len(s.Attributes) > 0 {
		_ = json.Unmarshal(s.Attributes, &sub.Attributes)
	}
	return sub, nil
}
