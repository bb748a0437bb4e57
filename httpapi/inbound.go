package httpapi

import (
	"errors"
	"net/http"
	"time"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/delivery/inbound"
	"github.com/heraldhq/herald/projections"
)

// The inbound URLs of CONTRACT §20: POST /in/{token}, where providers
// post what became of the messages they accepted. The token is the
// capability (inbound.Tokens opens it) and names the tenant and the
// channel; the provider's own signature is checked besides (see package
// delivery/inbound). No answer quotes anything of the tenant's: a token
// that opens nothing, a rotated one, or a channel that hears nothing are
// one and the same 404.

var (
	errInboundUnknown   = errors.New("no such inbound URL")
	errInboundSignature = apierr.Errorf(apierr.CodeUnauthorized, "the request's signature does not verify")
	errInboundMalformed = apierr.Errorf(apierr.CodeInvalidJSON, "the body is not a payload the provider documents")
)

// inboundAnswer is the body of an accepted request: nothing of the
// tenant's, only whether something was recorded.
type inboundAnswer struct {
	Status string `json:"status"` // "recorded" or "ignored"
}

// hearInbound is POST /in/{token}: 200 when a report was recorded, 202
// when nothing the request holds names a known message (or all was
// recorded before), 401 on a bad signature (nothing written).
func (s *Server) hearInbound(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Cache-Control", "no-store")
	tok, err := pathVar(r, "token")
	if err != nil || s.deps.Inbound == nil || s.deps.Delivery == nil {
		return notFoundErr(errInboundUnknown)
	}
	c, err := s.deps.Inbound.Open(tok)
	if err != nil {
		return notFoundErr(errInboundUnknown)
	}
	if ok, d := s.inbound.allow(c.Tenant+"\x00"+c.ChannelKey, time.Now()); !ok {
		w.Header().Set("Retry-After", retryAfter(d))
		return errRateLimited
	}
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	if err := s.caughtUp(r); err != nil {
		return err
	}
	ch, err := s.deps.Store.Channel(c.Tenant, c.ChannelKey)
	if err != nil || ch.Seq != c.Seq || ch.InboundGeneration != c.Generation {
		if err != nil && !errors.Is(err, projections.ErrNotFound) {
			return err
		}
		return notFoundErr(errInboundUnknown)
	}
	noteTenant(w, c.Tenant)
	u := s.deps.Inbound.Base() + "/in/" + tok
	if r.URL.RawQuery != "" {
		u += "?" + r.URL.RawQuery
	}
	heard, err := s.deps.Delivery.Hear(r.Context(), c.Tenant, ch, inbound.Request{URL: u, Header: r.Header, Body: body, Now: time.Now()})
	switch {
	case errors.Is(err, delivery.ErrNoInbound):
		return notFoundErr(errInboundUnknown)
	case errors.Is(err, inbound.ErrSignature):
		return errInboundSignature
	case errors.Is(err, inbound.ErrMalformed):
		return errInboundMalformed
	case err != nil:
		return err
	}
	if heard.Recorded > 0 {
		writeJSON(w, http.StatusOK, inboundAnswer{Status: "recorded"})
	} else {
		writeJSON(w, http.StatusAccepted, inboundAnswer{Status: "ignored"})
	}
	return nil
}

// notFoundErr is a 404 not_found with err's words.
func notFoundErr(err error) error { return apierr.Errorf(apierr.CodeNotFound, "%s", err.Error()) }

// rotateInboundToken is POST /v1/channels/{key}/inbound-token: the
// channel's inbound URLs shown so far stop opening; the answer is the
// channel's view with its new one.
func (s *Server) rotateInboundToken(w http.ResponseWriter, r *http.Request) error {
	key, err := pathOnly(w, r, "key")
	if err != nil {
		return err
	}
	ch, err := s.deps.Control.RotateInboundToken(r.Context(), tenantOf(r.Context()), key)
	return reply(w, http.StatusOK, ch, err, s.channelView(tenantOf(r.Context())))
}

// channelView returns safeView with, when the service has a public URL,
// the channel's inbound URL (sealed anew on each read: every URL shown
// opens until the channel's next rotation).
func (s *Server) channelView(tenant string) func(projections.Channel) channelView {
	return func(ch projections.Channel) channelView {
		v := safeView(ch)
		if !s.deps.Inbound.Enabled() {
			return v
		}
		if u, err := s.deps.Inbound.URL(inbound.Claims{Tenant: tenant, ChannelKey: ch.ChannelKey, Seq: ch.Seq,
			Generation: ch.InboundGeneration}); err == nil {
			v.InboundURL = u
		}
		return v
	}
}
