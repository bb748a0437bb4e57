package control

import (
	"context"
	"time"

	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/bridgeclient"
	"github.com/heraldhq/herald/events"
)

// Runtime is what the commands of runs and workflows need of the engine
// that executes runs. Its methods are safe for concurrent use and safe to
// repeat: each write they make is idempotent.
type Runtime interface {
	// Arm prepares the runtime to finish a trigger about to be accepted,
	// should the caller die once it is: the caller then appends the
	// trigger's TriggerAccepted under the returned context (an acceptance
	// later than it allows would not be finished), calls FanOut, and calls
	// release once the trigger is answered or refused.
	Arm(ctx context.Context, tenant string, acc events.TriggerAcceptedData) (accept context.Context, release func(), err error)
	// FanOut starts the runs of an accepted trigger that are not started
	// yet and returns the dispatch of every recipient, in the order they
	// were resolved. A fan-out this call does not finish (a crash) is
	// finished later by the runtime.
	FanOut(ctx context.Context, tenant string, acc events.TriggerAcceptedData) ([]events.Dispatch, error)
	// Broadcast hands an accepted trigger's fan-out to the runtime, which
	// goes on with it in the background, shared by every process; it is
	// durable once Broadcast returns (Arm, given a trigger with
	// Recipients set, made it so should the caller die before).
	Broadcast(ctx context.Context, tenant string, acc events.TriggerAcceptedData) error
	// Discover asks the Bridge at url, signing with secret, which
	// workflows it serves. Errors wrap bridgeclient.ErrUnreachable when the
	// Bridge gave no answer.
	Discover(ctx context.Context, url, secret string) ([]wire.WorkflowInfo, error)
	// Preview asks the Bridge at url, signing with secret, to preview
	// req.StepID: bridgeclient.Client.Preview's outcome.
	Preview(ctx context.Context, url, secret string, req wire.ExecuteRequest) (bridgeclient.Outcome, error)
	// ArmSchedules arms the cron schedule of every scheduled workflow of
	// current and disarms those of previous that are gone or unscheduled.
	ArmSchedules(ctx context.Context, tenant string, previous, current []events.SyncedWorkflow) error
	// Wake has the run take a turn after the event at seq was appended to
	// it (a signal).
	Wake(ctx context.Context, tenant, runID string, seq uint64) error
	// Cancelled forgets a cancelled run: its cached state and its pending
	// timer.
	Cancelled(ctx context.Context, tenant, runID string) error
}

// RuntimeOptions tune the commands of runs and workflows. The zero value
// of each field is documented.
type RuntimeOptions struct {
	// CronMinInterval is the shortest interval between two ticks of a
	// workflow's schedule that a sync accepts (422 schedule_too_frequent
	// beyond). Zero: none (a schedule ticks at most every second).
	CronMinInterval time.Duration
	// BroadcastThreshold is the largest audience a trigger is answered
	// with its runs (see the constant). Zero: BroadcastThreshold.
	BroadcastThreshold int
	// Now is the clock. Zero: time.Now.
	Now func() time.Time
}

func (c *Control) now() time.Time { return c.rtOpts.Now() }
