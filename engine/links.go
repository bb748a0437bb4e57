package engine

import (
	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/preferences/links"
)

// links returns the links of an execute request of workflow for sub
// (CONTRACT §12): nil without a public URL or a subscriber; no
// unsubscribe link when the tenant's last sync declared the workflow
// critical. Each call seals fresh tokens.
func (e *Engine) links(tenant, workflow string, sub *wire.Subscriber) (*wire.Links, error) {
	if !e.cfg.Links.Enabled() || sub == nil {
		return nil, nil
	}
	def, err := e.store.WorkflowDefaults(tenant, workflow)
	if err != nil {
		return nil, err
	}
	return e.cfg.Links.For(links.Claims{Tenant: tenant, Subscriber: sub.SubscriberID, Workflow: workflow}, def.Critical)
}
