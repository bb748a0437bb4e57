package delivery

import (
	"github.com/heraldhq/herald/bridge/wire"
	"github.com/heraldhq/herald/preferences"
	"github.com/heraldhq/herald/preferences/links"
)

// ReasonPreference: the recipient opted out of the kind, or of the
// workflow (CONTRACT §11); a skipped Result's Reason.
const ReasonPreference = string(wire.SkipPreference)

// maxListUnsubscribe bounds the URL of a List-Unsubscribe header, so that
// the header line stays within RFC 5322's 998 characters: a longer URL (a
// subscriber id of hundreds of characters makes a long token) is not sent,
// rather than folded in a way mailbox providers may not undo.
const maxListUnsubscribe = 998 - len("List-Unsubscribe: <>")

// applyPreferences decides, for a send to p.recipient, whether the
// recipient's preferences skip it (p.skip = ReasonPreference) and, for an
// email of a non-critical workflow when links are made, its unsubscribe
// URL (p.unsubscribe, none when over maxListUnsubscribe). A critical workflow always sends; the workflow's
// critical flag and defaults are those of the tenant's last sync.
func (s *Service) applyPreferences(tenant string, req Request, p *plan) error {
	if p.recipient == "" {
		return nil
	}
	def, err := s.cfg.Store.WorkflowDefaults(tenant, req.WorkflowID)
	if err != nil {
		return err
	}
	doc, err := s.cfg.Store.Preferences(tenant, p.recipient)
	if err != nil {
		return err
	}
	if !preferences.Allows(doc, req.WorkflowID, def, req.Channel) {
		p.skip = ReasonPreference
		return nil
	}
	if req.Channel == KindEmail && !def.Critical && req.WorkflowID != "" && s.cfg.Links.Enabled() {
		u, err := s.cfg.Links.URL(links.Unsubscribe, links.Claims{Tenant: tenant, Subscriber: p.recipient, Workflow: req.WorkflowID})
		if err != nil {
			return err
		}
		if len(u) <= maxListUnsubscribe {
			p.unsubscribe = u
		}
	}
	return nil
}
