package delivery

import (
	"context"
	"net/mail"
	"strings"
	"time"

	"github.com/heraldhq/herald/preferences/links"
	"github.com/heraldhq/herald/projections"
)

// plan is what one delivery resolved before it claims its key: the
// channels of the kind in the order they are tried, the recipient and its
// address.
type plan struct {
	channels  []projections.Channel
	recipient string
	address   string
	// skip is the reason the send is skipped, when it is.
	skip string
	// unsubscribe is the List-Unsubscribe URL of an email; "" for none.
	unsubscribe string
}

// resolve returns the plan of req's send: by the Decision its caller
// made (Request.Decision), or by one Decide now. It records nothing.
func (s *Service) resolve(ctx context.Context, tenant string, req Request) (*plan, error) {
	d := req.Decision
	if d == nil || !d.decides(tenant, req) {
		decided, err := s.decide(ctx, tenant, req)
		if err != nil {
			return nil, err
		}
		d = &decided
	}
	if d.noChannel != nil {
		return nil, d.noChannel
	}
	p := &plan{channels: d.channels, recipient: req.Recipient(), address: d.address, skip: d.Skip}
	if p.skip == "" {
		var err error
		if p.unsubscribe, err = s.unsubscribe(tenant, req, d.critical); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// decide decides req's send as Deliver reads: after every write
// acknowledged before the request (a channel or a subscriber just
// changed, through any process), or every one before what the caller has
// seen.
func (s *Service) decide(ctx context.Context, tenant string, req Request) (Decision, error) {
	if req.Seen == 0 {
		if err := s.cfg.Store.WaitCaughtUp(ctx, s.cfg.Log); err != nil {
			return Decision{}, err
		}
	}
	return Decide(ctx, s.cfg.Store, Ask{Tenant: tenant, Workflow: req.WorkflowID, Subscriber: req.Recipient(),
		Kind: req.Channel, Seen: req.Seen, Now: time.Now()})
}

// decides reports whether d was made for req's send.
func (d *Decision) decides(tenant string, req Request) bool {
	return d.Ask.Tenant == tenant && d.Ask.Workflow == req.WorkflowID && d.Ask.Subscriber == req.Recipient() &&
		d.Ask.Kind == req.Channel
}

// maxListUnsubscribe bounds the URL of a List-Unsubscribe header, so that
// the header line stays within RFC 5322's 998 characters: a longer URL (a
// subscriber id of hundreds of characters makes a long token) is not sent,
// rather than folded in a way mailbox providers may not undo.
const maxListUnsubscribe = 998 - len("List-Unsubscribe: <>")

// unsubscribe is the List-Unsubscribe URL of req's send: for an email of a
// non-critical workflow to a recipient when links are made; "" otherwise,
// and when over maxListUnsubscribe.
func (s *Service) unsubscribe(tenant string, req Request, critical bool) (string, error) {
	recipient := req.Recipient()
	if req.Channel != KindEmail || critical || req.WorkflowID == "" || recipient == "" || !s.cfg.Links.Enabled() {
		return "", nil
	}
	u, err := s.cfg.Links.URL(links.Unsubscribe, links.Claims{Tenant: tenant, Subscriber: recipient, Workflow: req.WorkflowID})
	if err != nil || len(u) > maxListUnsubscribe {
		return "", err
	}
	return u, nil
}

// usableAddress reports whether addr can be sent to on kind.
func usableAddress(kind, addr string) bool {
	switch kind {
	case KindEmail:
		a, err := mail.ParseAddress(addr)
		return err == nil && a.Address == addr && !strings.ContainsAny(addr, "\r\n")
	}
	return addr != ""
}
