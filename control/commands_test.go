package control_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/bridgeclient"
	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
)

// runtime records what the commands ask of the engine.
type runtime struct {
	mu      sync.Mutex
	fanouts []events.TriggerAcceptedData
	// broadcasts are the triggers handed over by Broadcast: nothing is
	// fanned out.
	broadcasts []events.TriggerAcceptedData
	woken      []uint64
	cancelled  []string
	discover   func() ([]wire.WorkflowInfo, error)
	armed      [][]events.SyncedWorkflow
	// log, when set, is read by Arm: accepted records whether each
	// trigger's transaction was already accepted when it was armed.
	log      *eventlog.Log
	accepted []bool
	released int
	// expired makes Arm hand back a context already ended.
	expired bool
}

func (r *runtime) Arm(ctx context.Context, tenant string, acc events.TriggerAcceptedData) (context.Context, func(), error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.log != nil {
		_, ok, err := r.log.First(ctx, eventlog.Subject(tenant, eventlog.AggTransaction, acc.TransactionID))
		if err != nil {
			return nil, nil, err
		}
		r.accepted = append(r.accepted, ok)
	}
	release := func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.released++
	}
	if r.expired {
		ctx, cancel := context.WithCancel(ctx)
		cancel()
		return ctx, release, nil
	}
	return ctx, release, nil
}

func (r *runtime) FanOut(_ context.Context, _ string, acc events.TriggerAcceptedData) ([]events.Dispatch, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fanouts = append(r.fanouts, acc)
	return []events.Dispatch{{SubscriberID: "u1", RunID: "run_x", Status: "dispatched"}}, nil
}

func (r *runtime) Broadcast(_ context.Context, _ string, acc events.TriggerAcceptedData) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.broadcasts = append(r.broadcasts, acc)
	return nil
}

func (r *runtime) Discover(context.Context, string, string) ([]wire.WorkflowInfo, error) {
	return r.discover()
}

func (r *runtime) Preview(context.Context, string, string, wire.ExecuteRequest) (bridgeclient.Outcome, error) {
	return bridgeclient.Outcome{}, errors.New("no bridge in this test")
}

func (r *runtime) ArmSchedules(_ context.Context, _ string, _, current []events.SyncedWorkflow) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.armed = append(r.armed, current)
	return nil
}

func (r *runtime) Wake(_ context.Context, _, _ string, seq uint64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.woken = append(r.woken, seq)
	return nil
}

func (r *runtime) Cancelled(_ context.Context, _, runID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cancelled = append(r.cancelled, runID)
	return nil
}

var _ control.Runtime = (*runtime)(nil)

func code(err error) string {
	var e *apierr.Error
	if errors.As(err, &e) {
		return e.Code
	}
	var ve *apierr.ValidationError
	if errors.As(err, &ve) {
		return ve.Code
	}
	return fmt.Sprint(err)
}

func TestTriggerCommand(t *testing.T) {
	h := newChannelHarness(t, channelKeyring(t, 1))
	rt := &runtime{}
	h.rebuild(control.Config{Runtime: rt})
	ctx := context.Background()
	u1, txn := "u1", "t1"
	cmd := control.TriggerCommand{WorkflowID: "welcome", To: &control.TriggerTarget{SubscriberID: &u1},
		TransactionID: &txn, Payload: json.RawMessage(` { "a" : 1 } `)}
	if _, err := h.ctl.Trigger(ctx, "ten_1", cmd); code(err) != "bridge_not_configured" || !errors.Is(err, apierr.ErrConflict) {
		t.Fatalf("before a Bridge: %v", err)
	}
	if _, err := h.ctl.ConfigureBridge(ctx, "ten_1", "https://bridge.example/h"); err != nil {
		t.Fatal(err)
	}
	// Armed under a context that ended: nothing is accepted.
	rt.expired = true
	if _, err := h.ctl.Trigger(ctx, "ten_1", cmd); !errors.Is(err, context.Canceled) || len(rt.fanouts) != 0 || rt.released != 1 {
		t.Fatalf("accepted under an ended context: %v, %d fan-outs, %d released", err, len(rt.fanouts), rt.released)
	}
	rt.expired, rt.log = false, h.log
	res, err := h.ctl.Trigger(ctx, "ten_1", cmd)
	if err != nil || res.TransactionID != "t1" || len(res.Runs) != 1 || res.Runs[0] != (control.RunRef{RunID: "run_x", SubscriberID: "u1", Status: "dispatched"}) {
		t.Fatalf("trigger: %+v %v", res, err)
	}
	if len(rt.fanouts) != 1 || string(rt.fanouts[0].Payload) != `{"a":1}` || rt.fanouts[0].RequestDigest == "" {
		t.Fatalf("fan-out of %+v", rt.fanouts)
	}
	// A repeat fans out the first request again (finishing it if need be).
	if _, err := h.ctl.Trigger(ctx, "ten_1", cmd); err != nil || len(rt.fanouts) != 2 {
		t.Fatalf("repeat: %v, %d fan-outs", err, len(rt.fanouts))
	}
	cmd.Payload = json.RawMessage(`{"a":2}`)
	if _, err := h.ctl.Trigger(ctx, "ten_1", cmd); code(err) != "transaction_mismatch" {
		t.Fatalf("repeat with another payload: %v", err)
	}
	// Each trigger was armed before it was accepted (the first), and
	// released once answered or refused.
	if fmt.Sprint(rt.accepted) != "[false true true]" || rt.released != 4 {
		t.Fatalf("armed with the transaction accepted: %v; %d released", rt.accepted, rt.released)
	}
	bad := control.TriggerCommand{WorkflowID: "9x", Payload: json.RawMessage(`[1]`)}
	var ve *apierr.ValidationError
	if _, err := h.ctl.Trigger(ctx, "ten_1", bad); !errors.As(err, &ve) || len(ve.Problems) != 3 {
		t.Fatalf("invalid trigger: %v", err)
	}
}

func TestSignalAndCancelCommands(t *testing.T) {
	h := newChannelHarness(t, channelKeyring(t, 1))
	rt := &runtime{}
	h.rebuild(control.Config{Runtime: rt})
	ctx := context.Background()
	const runID = "run_0123456789abcdef01234567"
	if err := h.ctl.Signal(ctx, "ten_1", runID, control.SignalCommand{Event: "go"}); code(err) != "run_not_found" {
		t.Fatalf("unknown run: %v", err)
	}
	if err := h.ctl.Signal(ctx, "ten_1", "run_nope", control.SignalCommand{Event: "go"}); code(err) != "run_not_found" {
		t.Fatalf("malformed run id: %v", err)
	}
	subject := eventlog.Subject("ten_1", eventlog.AggRun, runID)
	if _, err := h.log.Append(ctx, eventlog.Record{Subject: subject, Type: events.RunStarted, Tenant: "ten_1",
		Data: events.RunStartedData{RunID: runID, TransactionID: "t", WorkflowID: "w"}}); err != nil {
		t.Fatal(err)
	}
	if err := h.ctl.Signal(ctx, "ten_1", runID, control.SignalCommand{}); code(err) != "validation_failed" {
		t.Fatalf("no event: %v", err)
	}
	if err := h.ctl.Signal(ctx, "ten_1", runID, control.SignalCommand{Event: "go"}); err != nil {
		t.Fatal(err)
	}
	if err := h.ctl.Signal(ctx, "ten_1", runID, control.SignalCommand{Event: "go", Payload: json.RawMessage(`{ "k": 1 }`)}); err != nil {
		t.Fatal(err)
	}
	evs, err := h.log.History(ctx, subject, 0)
	if err != nil || len(evs) != 3 {
		t.Fatalf("history: %d events, %v", len(evs), err)
	}
	for i, want := range []string{"null", `{"k":1}`} {
		var d events.SignalReceivedData
		if err := evs[i+1].Decode(&d); err != nil || string(d.Payload) != want {
			t.Fatalf("signal %d carries %s (%v), want %s", i, d.Payload, err, want)
		}
		if rt.woken[i] != evs[i+1].Seq {
			t.Fatalf("woken at %v, events at %d", rt.woken, evs[i+1].Seq)
		}
	}
	if err := h.ctl.Cancel(ctx, "ten_1", runID, "hk_test0000"); err != nil || len(rt.cancelled) != 1 {
		t.Fatalf("cancel: %v %v", err, rt.cancelled)
	}
	if err := h.ctl.Cancel(ctx, "ten_1", runID, "hk_test0000"); code(err) != "run_finished" {
		t.Fatalf("cancel a cancelled run: %v", err)
	}
	if err := h.ctl.Signal(ctx, "ten_1", runID, control.SignalCommand{Event: "go"}); code(err) != "run_finished" {
		t.Fatalf("signal a cancelled run: %v", err)
	}
}

// Each refused sync carries the code of the problem found, set where it
// is found.
func TestSyncCodes(t *testing.T) {
	h := newChannelHarness(t, channelKeyring(t, 1))
	rt := &runtime{}
	h.rebuild(control.Config{Runtime: rt, RuntimeOptions: control.RuntimeOptions{CronMinInterval: 60e9}})
	ctx := context.Background()
	if _, err := h.ctl.Sync(ctx, "ten_1", false); code(err) != "bridge_not_configured" || !errors.Is(err, apierr.ErrConflict) {
		t.Fatalf("before a Bridge: %v", err)
	}
	if _, err := h.ctl.ConfigureBridge(ctx, "ten_1", "https://bridge.example/h"); err != nil {
		t.Fatal(err)
	}
	s := func(v string) *string { return &v }
	cases := []struct {
		name   string
		infos  []wire.WorkflowInfo
		err    error
		code   string
		fields []string
	}{
		{"unreachable", nil, fmt.Errorf("x: %w", bridgeclient.ErrUnreachable), "bridge_unreachable", nil},
		{"rejected", nil, errors.New("bridge answered 401"), "bridge_rejected", nil},
		{"bad id", []wire.WorkflowInfo{{WorkflowID: "ok"}, {WorkflowID: "9bad"}}, nil,
			"invalid_workflow_id", []string{"workflows[1].workflowId"}},
		{"twice", []wire.WorkflowInfo{{WorkflowID: "a"}, {WorkflowID: "a"}}, nil,
			"invalid_workflow_id", []string{"workflows[1].workflowId"}},
		{"bad schedule", []wire.WorkflowInfo{{WorkflowID: "a", Schedule: s("every day")}}, nil,
			"invalid_schedule", []string{"workflows[0].schedule"}},
		{"bad id and bad schedule", []wire.WorkflowInfo{{WorkflowID: "9bad"}, {WorkflowID: "a", Schedule: s("nope")}}, nil,
			"invalid_schedule", []string{"workflows[0].workflowId", "workflows[1].schedule"}},
		{"a bad id's schedule is not checked", []wire.WorkflowInfo{{WorkflowID: "9bad", Schedule: s("nope")}}, nil,
			"invalid_workflow_id", []string{"workflows[0].workflowId"}},
		{"too frequent", []wire.WorkflowInfo{{WorkflowID: "a", Schedule: s("*/2 * * * * *")}, {WorkflowID: "9bad"}}, nil,
			"schedule_too_frequent", []string{"workflows[0].schedule"}},
		{"unknown kinds in default preferences", []wire.WorkflowInfo{{WorkflowID: "a", Critical: true},
			{WorkflowID: "b", Preferences: &wire.WorkflowPreferences{Channels: map[string]bool{"email": false, "fax": false, "pager": true}}}}, nil,
			"invalid_preferences", []string{"workflows[1].preferences.channels.fax", "workflows[1].preferences.channels.pager"}},
		{"bad id and bad preferences", []wire.WorkflowInfo{{WorkflowID: "9bad"},
			{WorkflowID: "b", Preferences: &wire.WorkflowPreferences{Channels: map[string]bool{"fax": false}}}}, nil,
			"invalid_preferences", []string{"workflows[0].workflowId", "workflows[1].preferences.channels.fax"}},
		{"display text over its bounds or with control characters", []wire.WorkflowInfo{
			{WorkflowID: "a", Name: strings.Repeat("n", 101)}, {WorkflowID: "b", Description: "line\nbreak"},
			{WorkflowID: "c", Name: strings.Repeat("é", 100), Description: strings.Repeat("d", 500)}}, nil,
			"validation_failed", []string{"workflows[0].name", "workflows[1].description"}},
	}
	for _, c := range cases {
		rt.discover = func() ([]wire.WorkflowInfo, error) { return c.infos, c.err }
		_, err := h.ctl.Sync(ctx, "ten_1", false)
		if code(err) != c.code {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
			continue
		}
		var ve *apierr.ValidationError
		if errors.As(err, &ve) {
			var fields []string
			for _, p := range ve.Problems {
				fields = append(fields, p.Field)
			}
			if fmt.Sprint(fields) != fmt.Sprint(c.fields) {
				t.Errorf("%s: fields %v, want %v", c.name, fields, c.fields)
			}
		}
	}
	if len(rt.armed) != 0 {
		t.Fatalf("a refused sync armed %v", rt.armed)
	}
	rt.discover = func() ([]wire.WorkflowInfo, error) {
		return []wire.WorkflowInfo{{WorkflowID: "daily", Schedule: s("0 9 * * *")}, {WorkflowID: "welcome"}}, nil
	}
	res, err := h.ctl.Sync(ctx, "ten_1", false)
	wfs := res.Workflows
	if err != nil || len(wfs) != 2 || wfs[0].NextRunAt == nil || wfs[1].NextRunAt != nil || len(rt.armed) != 1 {
		t.Fatalf("sync: %+v %v armed %v", wfs, err, rt.armed)
	}
	if got, err := h.ctl.Workflows(ctx, "ten_1"); err != nil || len(got) != 2 || got[0].WorkflowID != "daily" {
		t.Fatalf("workflows: %+v %v", got, err)
	}
}

// A sync answers the ids of the last sync's workflows it drops; a dry run
// answers the same and records and arms nothing.
func TestSyncRemovedAndDryRun(t *testing.T) {
	h := newChannelHarness(t, channelKeyring(t, 1))
	rt := &runtime{}
	h.rebuild(control.Config{Runtime: rt, RuntimeOptions: control.RuntimeOptions{CronMinInterval: 60e9}})
	ctx := context.Background()
	if _, err := h.ctl.ConfigureBridge(ctx, "ten_1", "https://bridge.example/h"); err != nil {
		t.Fatal(err)
	}
	serve := func(ids ...string) {
		rt.discover = func() ([]wire.WorkflowInfo, error) {
			var infos []wire.WorkflowInfo
			for _, id := range ids {
				infos = append(infos, wire.WorkflowInfo{WorkflowID: id})
			}
			return infos, nil
		}
	}
	ids := func(wfs []control.Workflow) string {
		var out []string
		for _, w := range wfs {
			out = append(out, w.WorkflowID)
		}
		return strings.Join(out, ",")
	}
	steps := []struct {
		serves           []string
		dryRun           bool
		removed, current string // current: GET /v1/workflows after the call
	}{
		{[]string{"a", "b", "c"}, true, "", ""}, // a dry run before any sync records nothing
		{[]string{"a", "b", "c"}, false, "", "a,b,c"},
		{[]string{"b", "d"}, true, "a,c", "a,b,c"},
		{[]string{"b", "d"}, true, "a,c", "a,b,c"}, // a dry run repeated answers the same
		{[]string{"b", "d"}, false, "a,c", "b,d"},
		{[]string{"b", "d"}, false, "", "b,d"},
		{nil, false, "b,d", ""},
	}
	for i, st := range steps {
		serve(st.serves...)
		armed := len(rt.armed)
		res, err := h.ctl.Sync(ctx, "ten_1", st.dryRun)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if ids(res.Workflows) != strings.Join(st.serves, ",") || strings.Join(res.Removed, ",") != st.removed || res.Removed == nil {
			t.Errorf("step %d: workflows %s removed %q, want %v and %q", i, ids(res.Workflows), res.Removed, st.serves, st.removed)
		}
		if cur, err := h.ctl.Workflows(ctx, "ten_1"); err != nil || ids(cur) != st.current {
			t.Errorf("step %d: the workflows after it %s %v, want %s", i, ids(cur), err, st.current)
		}
		if want := armed + map[bool]int{true: 0, false: 1}[st.dryRun]; len(rt.armed) != want {
			t.Errorf("step %d: schedules armed %d times, want %d", i, len(rt.armed), want)
		}
	}
}
