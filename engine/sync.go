package engine

import (
	"context"

	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/bridgeclient"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
)

// Discover asks the Bridge at url, signing with secret, which workflows
// it serves. Errors wrap bridgeclient.ErrUnreachable when the Bridge gave no
// answer.
func (e *Engine) Discover(ctx context.Context, url, secret string) ([]wire.WorkflowInfo, error) {
	return e.client.Discover(ctx, url, secret)
}

// synced reads the tenant's last sync from the log (authoritative for
// every process); nil when there was none.
func (e *Engine) synced(ctx context.Context, tenant string) ([]events.SyncedWorkflow, error) {
	d, _, err := eventlog.LastAs[events.WorkflowsSyncedData](ctx, e.log, eventlog.Subject(tenant, eventlog.AggWorkflows, tenant))
	return d.Workflows, err
}

// Preview asks the Bridge at url, signing with secret, to preview
// req.StepID (see bridgeclient.Client.Preview).
func (e *Engine) Preview(ctx context.Context, url, secret string, req wire.ExecuteRequest) (bridgeclient.Outcome, error) {
	return e.client.Preview(ctx, url, secret, req)
}
