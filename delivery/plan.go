package delivery

import (
	"context"
	"errors"
	"net/mail"
	"strings"

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

// resolve picks the channels and the recipient's address. It records
// nothing.
func (s *Service) resolve(ctx context.Context, tenant string, req Request) (*plan, error) {
	// See every write acknowledged before this request (a channel or a
	// subscriber just changed, through any process), or every one before
	// what the caller has seen.
	if req.Seen != 0 {
		if err := s.cfg.Store.WaitFor(ctx, req.Seen); err != nil {
			return nil, err
		}
	} else if err := s.cfg.Store.WaitCaughtUp(ctx, s.cfg.Log); err != nil {
		return nil, err
	}
	chs, err := SelectChannels(s.cfg.Store, tenant, req.Channel)
	if err != nil {
		return nil, err
	}
	recipient := req.Recipient()
	p := &plan{channels: chs, recipient: recipient}
	if err := s.applyPreferences(tenant, req, p); err != nil {
		return nil, err
	}
	if p.skip != "" {
		return p, nil
	}
	if req.Channel == KindWebhook {
		return p, nil // no address, and no subscriber needed
	}
	sub, err := s.cfg.Store.Subscriber(tenant, recipient)
	if errors.Is(err, projections.ErrNotFound) {
		p.skip = ReasonNoAddress
		return p, nil
	}
	if err != nil {
		return nil, err
	}
	if req.Channel == KindInApp {
		p.address = recipient // the subscriber's own inbox
		return p, nil
	}
	addrs := sub.Contacts[req.Channel]
	if len(addrs) == 0 || !usableAddress(req.Channel, addrs[0]) {
		p.skip = ReasonNoAddress
		return p, nil
	}
	p.address = addrs[0]
	if p.skip, err = s.suppressedReason(tenant, req.Channel, p.address); err != nil {
		return nil, err
	}
	return p, nil
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
