package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/bridge"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/internal/testherald"
)

// TestInvalidStepsFailAtOnceThroughARealBridge: steps called with values
// no retry can mend fail their run at once with invalid_step, the error
// naming the step and what is wrong, with no retry recorded: through the
// Go SDK (a local time of 25:00, a throttle limit of 0, whose arguments
// the SDK refuses; a digest cron that never fires, which Herald refuses),
// and through a Bridge answering the step itself (a fractional throttle
// limit, a negative delay).
func TestInvalidStepsFailAtOnceThroughARealBridge(t *testing.T) {
	t.Parallel()
	h := testherald.Start(t, testherald.Options{DeliverURL: testherald.NewStandInDelivery(t).URL})
	tenant, key := h.Tenant("Acme")
	if r := h.Do("PUT", "/v1/subscribers/u1", key, map[string]any{}); r.Status/100 != 2 {
		t.Fatalf("subscriber: %d %s", r.Status, r.Body)
	}
	reg := bridge.NewRegistry().MustRegister(
		bridge.MustWorkflow("bad_local", func(ctx *bridge.Context, _ any) error {
			return bridge.DelayUntilLocal(ctx, "wake", "25:00")
		}),
		bridge.MustWorkflow("bad_limit", func(ctx *bridge.Context, _ any) error {
			_, err := bridge.Throttle(ctx, "cap", 0, time.Hour)
			return err
		}),
		bridge.MustWorkflow("never_cron", func(ctx *bridge.Context, _ any) error {
			_, err := bridge.Digest(ctx, "gather", 0, bridge.DigestCron("0 0 30 2 *"))
			return err
		}),
	)
	h.Bridge(key, reg)
	for wf, want := range map[string][]string{
		"bad_local":  {"wake", `invalid step "wake"`, "local time"},
		"bad_limit":  {"cap", `invalid step "cap"`, "limit"},
		"never_cron": {"gather", `digest step "gather"`, "cron", "never fires"},
	} {
		runID := triggerOne(t, h, key, wf)
		assertFailedAtOnce(t, h, tenant, key, runID, want)
	}

	// A Bridge of its own answering the invalid step.
	raw, rawKey, b := startRaw(t, testherald.Options{})
	b.set("fractional_limit", 200, `{"status":"step","step":{"stepId":"cap","type":"throttle","limit":2.5,"window":60}}`)
	b.set("negative_delay", 200, `{"status":"step","step":{"stepId":"nap","type":"delay","seconds":-5}}`)
	for wf, want := range map[string][]string{
		"fractional_limit": {"cap", `throttle step "cap"`, "limit must be a whole number"},
		"negative_delay":   {"nap", `delay step "nap"`, "seconds must be"},
	} {
		runID := triggerOne(t, raw, rawKey, wf)
		// One Bridge call: nothing retried.
		assertFailedAtOnce(t, raw, "", rawKey, runID, want)
		if n := b.count(wf); n != 1 {
			t.Errorf("%s: %d Bridge calls, want 1", wf, n)
		}
	}
}

// assertFailedAtOnce checks that run runID failed invalid_step on step
// want[0], its error's message holding each of want[1:], and that no try
// of a step failed before (nothing was retried). tenant "" skips the
// history.
func assertFailedAtOnce(t *testing.T, h *testherald.Herald, tenant, key, runID string, want []string) {
	t.Helper()
	run := h.WaitRun(key, runID, "failed", "completed")
	runErr, _ := run["error"].(map[string]any)
	msg, _ := runErr["message"].(string)
	if run["status"] != "failed" || runErr["code"] != "invalid_step" {
		t.Errorf("%s: run %.400v, want failed invalid_step", want[0], run)
		return
	}
	for _, w := range want[1:] {
		if !strings.Contains(msg, w) {
			t.Errorf("%s: error message %q does not say %q", want[0], msg, w)
		}
	}
	if tenant == "" {
		return
	}
	for _, ev := range runHistory(t, h, tenant, runID) {
		if ev.Type == events.StepFailed {
			t.Errorf("%s: a try failed and was retried: %+v", want[0], ev)
		}
		if ev.Type == events.RunFailed {
			var d events.RunFailedData
			if err := ev.Decode(&d); err != nil || d.StepID != want[0] {
				t.Errorf("%s: the run failed on step %q (%v)", want[0], d.StepID, err)
			}
		}
	}
}
