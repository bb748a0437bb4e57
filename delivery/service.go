package delivery

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/mail"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/apierr"
	"github.com/heraldhq/herald/delivery/inbound"
	"github.com/heraldhq/herald/delivery/provider"
	"github.com/heraldhq/herald/egress"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
	"github.com/heraldhq/herald/preferences/links"
	"github.com/heraldhq/herald/projections"
	"github.com/heraldhq/herald/secrets"
)

// Defaults of Config.
const (
	DefaultSendTimeout  = 45 * time.Second
	DefaultLease        = 60 * time.Second
	DefaultInFlightWait = 10 * time.Second
)

// recordTimeout bounds the append of an attempt's outcome (retries
// included).
const recordTimeout = 10 * time.Second

// maxRounds bounds the read-claim loop of one Deliver: each round either
// answers, waits, or lost a claim to a writer that made progress.
const maxRounds = 64

// Config configures a Service. Log, Store and Keys are required;
// the zero value of every other field is documented.
type Config struct {
	// Log holds the delivery ledger.
	Log *eventlog.Log
	// Store is read for channels and subscribers, and waited on so that
	// an answer is visible to reads (GET /v1/deliveries) at once.
	Store *projections.Store
	// Keys opens the sealed secrets of channel configs.
	Keys *secrets.Keyring
	// HTTPClient is the client of providers that speak HTTP
	// (provider.Deps.HTTPClient). Zero: an egress.Policy client, which
	// refuses private and loopback addresses and follows no redirect.
	HTTPClient *http.Client
	// Dial opens the connections of providers that speak another protocol
	// (provider.Deps.Dial: SMTP). Zero: the dialer of an egress.Policy,
	// which refuses private and loopback addresses.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// TLSConfig is the base TLS configuration of those connections
	// (provider.Deps.TLSConfig): tests trust a loopback server's
	// certificate with its RootCAs. Zero: the system's roots.
	TLSConfig *tls.Config
	// Providers are the provider constructors by channel key, over the
	// Service's own (in-app): a server passes providers.Registry(). A
	// channel whose key has none fails its sends as not sent. Zero: in-app
	// only.
	Providers map[string]provider.New
	// Logger receives a line per failed attempt (and a debug line per sent
	// one); never a channel config. Zero: slog.Default().
	Logger *slog.Logger
	// SendTimeout bounds one provider call. Zero: DefaultSendTimeout.
	SendTimeout time.Duration
	// Lease is how long a claimed attempt with no recorded outcome keeps
	// its key: afterwards the process that claimed it is presumed dead and
	// a new request may attempt again. It must exceed SendTimeout by at
	// least 10s (the time allowed to record an outcome), so that a live
	// attempt is never taken over. Zero: DefaultLease.
	Lease time.Duration
	// Process identifies this process in the attempts it claims (one per
	// start of herald serve).
	Process string
	// SoleProcess: no other process delivers on this log while this one
	// runs (embedded NATS: the data dir's lock admits one herald serve).
	// An attempt in flight claimed by another Process was then claimed
	// before a restart, by a process now dead, and is taken over at once
	// rather than after Lease.
	SoleProcess bool
	// Alive, when set, tells whether another process (by its Process id)
	// still lives: an attempt in flight claimed by a process that keeps a
	// presence and is no longer alive is taken over at once rather than
	// after Lease (see eventlog.Presence). An error counts as alive. The
	// process's own attempts say they keep a presence when Alive is set.
	Alive func(ctx context.Context, process string) (bool, error)
	// InFlightWait is how long a request finding another attempt of its key
	// in flight waits for that attempt's outcome before failing with
	// ErrInProgress. Zero: DefaultInFlightWait.
	InFlightWait time.Duration
	// Links makes the List-Unsubscribe URL of emails of non-critical
	// workflows (CONTRACT §12). Zero, or a Maker without a public URL: no
	// List-Unsubscribe header.
	Links *links.Maker
	// Inbound is what the verifiers of provider events may reach (the
	// SNS certificates of SES events). Zero: SES events are refused.
	Inbound inbound.Deps
	// ConfirmSNS answers an SNS subscription confirmation (a GET of its
	// SubscribeURL, an allowed Amazon URL). Zero: it is logged, not
	// answered.
	ConfirmSNS func(ctx context.Context, subscribeURL string) error
	// Reported, when set, is told of every provider report recorded: the
	// channel key and the status (metrics).
	Reported func(channelKey, status string)
}

func (c *Config) setDefaults() {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.SendTimeout == 0 {
		c.SendTimeout = DefaultSendTimeout
	}
	if c.Lease == 0 {
		c.Lease = DefaultLease
	}
	if c.InFlightWait == 0 {
		c.InFlightWait = DefaultInFlightWait
	}
	if c.HTTPClient == nil {
		c.HTTPClient = egress.Policy{}.Client(c.SendTimeout)
	}
	if c.Dial == nil {
		c.Dial = egress.Policy{}.Dialer(0).DialContext
	}
}

// Validate reports every problem of c (after defaults) at once.
func (c Config) Validate() error {
	var errs []error
	if c.Log == nil {
		errs = append(errs, errors.New("delivery: Config.Log is required"))
	}
	if c.Store == nil {
		errs = append(errs, errors.New("delivery: Config.Store is required"))
	}
	if c.Keys == nil {
		errs = append(errs, errors.New("delivery: Config.Keys is required"))
	}
	if c.SendTimeout < 0 || c.InFlightWait < 0 {
		errs = append(errs, errors.New("delivery: timeouts must not be negative"))
	}
	if c.Lease < c.SendTimeout+recordTimeout {
		errs = append(errs, fmt.Errorf("delivery: Lease %v must be at least SendTimeout %v + %v", c.Lease, c.SendTimeout, recordTimeout))
	}
	return errors.Join(errs...)
}

// Service delivers send steps: it resolves the channel and the address,
// records the attempt in the delivery ledger, calls the provider and
// records the outcome. It is safe for concurrent use.
//
// # The ledger
//
// Each idempotency key has its own event subject. An attempt is claimed by
// appending DeliveryAttempted with the subject's last sequence expected, so
// of two concurrent requests for one key exactly one claims it and sends.
// The claimant then appends DeliverySent or DeliveryFailed.
//
//   - A key whose last attempt was sent answers that first result and sends
//     nothing.
//   - A key with an attempt in flight makes the request wait (up to
//     Config.InFlightWait) for its outcome and answer the same: the same
//     result, or the same failure. After the wait it is ErrInProgress.
//   - A key whose last attempt failed (transient or not) gets a new attempt.
//   - A claimed attempt with no outcome after Config.Lease (its process
//     died mid-send) is taken over by a new attempt; with
//     Config.SoleProcess, so is one claimed by an earlier process at once.
//
// One send may try several channels (see Deliver): each try is one
// attempt, claimed and settled as above. A failure after which only the
// same channel may try again (an unknown outcome, a takeover) carries that
// channel as the key's pin (events.DeliveryFailedData.Pin).
//
// No channel (ErrNoChannel) and invalid content (ErrInvalidContent) are
// decided before any attempt and record nothing. A skipped send records one
// DeliverySkipped, final for the key.
//
// # Caveats
//
// SMTP cannot tell a lost reply to the message body from a lost message:
// an attempt that failed that way (or was taken over after a crash) may
// have been delivered, and the next attempt (on the same channel) delivers
// again. Every attempt of a key carries the same Message-ID, derived from
// the tenant and the key, so that mail clients can drop the copy. Leases compare the clock of
// the process that claimed with the clock of the one that takes over.
type Service struct {
	cfg   Config
	news  map[string]provider.New
	deps  provider.Deps
	cache providerCache
	// unsent are this process's claims whose append failed without an
	// answer (a NATS node lost): stored or not, nothing was sent under
	// them, so the key is taken over at once rather than after Lease.
	unsent unsentClaims
}

// NewService returns a Service, or the problems of cfg.
func NewService(cfg Config) (*Service, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, deps: provider.Deps{HTTPClient: cfg.HTTPClient, Logger: cfg.Logger, Now: time.Now,
		Dial: cfg.Dial, TLSConfig: cfg.TLSConfig}}
	s.news = s.providers()
	return s, nil
}

// Close closes the providers the Service built (an email-smtp channel's
// sessions). Call it after the last Deliver: a later one fails as not
// sent. It always returns nil.
func (s *Service) Close() error {
	s.cache.close()
	return nil
}

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

// Deliver delivers req for tenant, at most once per req.IdempotencyKey,
// and returns its Result (see Service for the ledger's rules).
//
// The channels of req.Channel's kind are tried in the order of [Select]:
// a failure that proves nothing was sent moves to the next one at once; a
// rejection ends the send (ErrProviderRejected, terminal); an unknown
// outcome ends it too (ErrProviderUnavailable, transient), and every later
// request of the key tries only that channel again. Each channel tried is
// one attempt, one ledger row.
//
// A recipient with no address of the kind gets a skipped Result (Status
// StatusSkipped, Reason ReasonNoAddress), recorded as a ledger row; so
// does a recipient whose preferences opt out of the send (Reason
// ReasonPreference), and one whose address is suppressed
// (ReasonSuppressed). A rejection saying the address does not exist
// (provider.ErrBadAddress) suppresses it (reason hard_bounce) once the
// failure is recorded.
//
// Errors wrap ErrInvalidRequest or ErrInvalidContent (with a
// *apierr.ValidationError), ErrNoChannel, ErrProviderRejected,
// ErrProviderUnavailable (every channel failed) or ErrInProgress;
// [Classify] tells terminal from transient. Other errors are internal (the
// log, or a secret that does not open).
//
// Once Deliver has claimed an attempt it calls the provider and records
// the outcome even if ctx ends meanwhile (bounded by Config.SendTimeout),
// so a client that gives up does not leave the key blocked.
func (s *Service) Deliver(ctx context.Context, tenant string, req Request) (Result, error) {
	if err := req.Validate(); err != nil {
		return Result{}, err
	}
	if err := ValidateContent(req.Channel, req.Content); err != nil {
		return Result{}, err
	}
	subject := eventlog.Subject(tenant, eventlog.AggDelivery, req.IdempotencyKey)
	d := send{tenant: tenant, subject: subject, req: req}
	deadline := time.Now().Add(s.cfg.InFlightWait)
	var (
		p         *plan
		waitedFor string          // the attempt in flight this request waited for
		tried     map[string]bool // channels this request tried and saw fail as not sent
		failures  []string        // their public failures, for the answer
	)
	// The first round takes the key for new, the usual case (a send's
	// first try), without reading the ledger: its claim expects the
	// key's subject empty, so a key with any history fails it and the
	// rounds after read the ledger. A first round whose resolution fails
	// reads the ledger too before answering: a settled key answers its
	// result whatever its channels are now.
	assumeNew := true
	for range maxRounds {
		fresh := assumeNew
		assumeNew = false
		e := ledgerEntry{state: keyNew}
		if !fresh {
			var err error
			if e, err = s.ledger(ctx, subject); err != nil {
				return Result{}, err
			}
		}
		takeover, pin := "", ""
		switch e.state {
		case keySent:
			if err := s.waitApplied(ctx, req, e.seq); err != nil {
				return Result{}, err
			}
			return Result{AttemptID: e.sent.AttemptID, Status: StatusSent,
				ProviderMessageID: e.sent.ProviderMessageID}, nil
		case keySkipped:
			if err := s.waitApplied(ctx, req, e.seq); err != nil {
				return Result{}, err
			}
			return Result{AttemptID: e.skipped.AttemptID, Status: StatusSkipped, Reason: e.skipped.Reason}, nil
		case keyFailed:
			if e.attemptID == waitedFor {
				// A concurrent repeat shares the outcome of the attempt it
				// waited for.
				return Result{}, e.failure()
			}
			pin = e.failed.Pin
		case keyInFlight:
			if time.Since(e.at) < s.cfg.Lease && !s.claimantDead(ctx, e) {
				waitedFor = e.attemptID
				if err := s.waitMoved(ctx, subject, e, deadline); err != nil {
					return Result{}, err
				}
				continue
			}
			// Its process died mid-send: the message may have gone out.
			takeover, pin = e.attemptID, e.channelKey
		}
		if p == nil {
			var err error
			if p, err = s.resolve(ctx, tenant, req); err != nil {
				if fresh {
					p = nil
					continue
				}
				return Result{}, err
			}
		}
		if p.skip != "" {
			res, err := s.skip(ctx, d, p, e.seq)
			if errors.Is(err, errLostClaim) {
				continue
			}
			return res, err
		}
		ch, ok := next(p.channels, pin, tried)
		if !ok {
			return Result{}, fmt.Errorf("%w: %s", ErrProviderUnavailable, strings.Join(failures, "; "))
		}
		res, err := s.attempt(ctx, d, p, try{ch: ch, pinned: pin != "", expect: e.seq, takeover: takeover})
		var nf *notSent
		switch {
		case errors.Is(err, errLostClaim):
			continue
		case errors.As(err, &nf):
			if tried == nil {
				tried = map[string]bool{}
			}
			tried[ch.ChannelKey] = true
			failures = append(failures, nf.public)
			continue
		}
		return res, err
	}
	return Result{}, fmt.Errorf("%w: the key kept changing; try again later", ErrInProgress)
}

// next returns the channel to try: the pinned one while it is enabled,
// else the first of chs not tried yet.
func next(chs []projections.Channel, pin string, tried map[string]bool) (projections.Channel, bool) {
	if pin != "" {
		if i := slices.IndexFunc(chs, func(c projections.Channel) bool { return c.ChannelKey == pin }); i >= 0 {
			if tried[pin] {
				return projections.Channel{}, false
			}
			return chs[i], true
		}
		// The pinned channel is gone: the tenant removed or disabled it.
	}
	for _, c := range chs {
		if !tried[c.ChannelKey] {
			return c, true
		}
	}
	return projections.Channel{}, false
}

// claimantDead reports whether the attempt in flight e is known to be
// abandoned: claimed by this process with a claim it knows it sent nothing
// under, or by a dead process: with SoleProcess, any process but this one;
// otherwise one that kept a presence and no longer does.
func (s *Service) claimantDead(ctx context.Context, e ledgerEntry) bool {
	if e.process == s.cfg.Process {
		return s.unsent.has(e.attemptID)
	}
	if s.cfg.SoleProcess {
		return true
	}
	if !e.present || s.cfg.Alive == nil {
		return false
	}
	alive, err := s.cfg.Alive(ctx, e.process)
	return err == nil && !alive
}

// errLostClaim: another request appended to the key's subject first.
var errLostClaim = errors.New("delivery: lost the claim")

// notSent is the answer of an attempt whose channel failed in a way that
// proves nothing was sent: the next channel may be tried.
type notSent struct{ public string }

func (e *notSent) Error() string { return e.public }

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

// skip records the skipped send (its subject's last sequence being expect).
// It fails with errLostClaim when another request appended first.
func (s *Service) skip(ctx context.Context, d send, p *plan, expect uint64) (Result, error) {
	tenant, subject, req := d.tenant, d.subject, d.req
	id := eventlog.NewID("att_")
	seq, err := s.record(ctx, eventlog.Record{
		Subject: subject, Type: events.DeliverySkipped, Tenant: tenant, MsgID: id,
		Data: events.DeliverySkippedData{DeliveryAttempt: events.DeliveryAttempt{AttemptID: id,
			IdempotencyKey: req.IdempotencyKey, RunID: req.RunID, StepID: req.StepID, SubscriberID: p.recipient,
			ChannelKey: p.channels[0].ChannelKey, Kind: req.Channel}, Reason: p.skip},
		Expect: true, ExpectSeq: expect,
	})
	if errors.Is(err, eventlog.ErrConflict) {
		return Result{}, errLostClaim
	}
	if err != nil {
		return Result{}, err
	}
	if err := s.waitApplied(ctx, req, seq); err != nil {
		return Result{}, err
	}
	s.cfg.Logger.Debug("delivery: skipped", "tenant", tenant, "idempotencyKey", req.IdempotencyKey, "reason", p.skip)
	return Result{AttemptID: id, Status: StatusSkipped, Reason: p.skip}, nil
}

// provider returns the provider of the tenant's channel ch, built from its
// opened config (cached per config version).
func (s *Service) provider(tenant string, ch projections.Channel) (provider.Provider, error) {
	version := fmt.Sprintf("%d.%d", ch.Seq, ch.UpdatedAt.UnixNano())
	return s.cache.get(tenant+"\x00"+ch.ChannelKey, version, func() (provider.Provider, error) {
		config, err := OpenChannelConfig(s.cfg.Keys, tenant, ch)
		if err != nil {
			return nil, err
		}
		build, ok := s.news[ch.ChannelKey]
		if !ok {
			return noProvider{ch.ChannelKey}, nil
		}
		p, err := build(config, s.deps)
		if err != nil {
			return nil, errNoProvider(ch.ChannelKey, err)
		}
		return p, nil
	})
}

// send is one Deliver: the tenant, the request, and its key's subject in
// the ledger.
type send struct {
	tenant, subject string
	req             Request
}

// try is one channel's attempt of a send: the channel, whether the key is
// pinned to it, the key subject's last sequence its claim expects, and
// the attempt in flight it takes over ("" for none).
type try struct {
	ch       projections.Channel
	pinned   bool
	expect   uint64
	takeover string
}

// attempt claims d's key for t.ch and sends. It fails with errLostClaim
// when another request claimed first, and with a *notSent when the channel
// failed in a way that proves nothing was sent.
func (s *Service) attempt(ctx context.Context, d send, p *plan, t try) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	prov, provErr := s.provider(d.tenant, t.ch)
	if provErr != nil && !errors.Is(provErr, provider.ErrNotSent) {
		return Result{}, provErr // a secret that does not open: internal
	}
	attemptID, claimSeq, err := s.claim(ctx, d, p, t)
	if err != nil {
		return Result{}, err
	}
	log := s.cfg.Logger.With("tenant", d.tenant, "idempotencyKey", d.req.IdempotencyKey, "attemptId", attemptID,
		"channelKey", t.ch.ChannelKey)
	if t.takeover != "" {
		log.Warn("delivery: took over an attempt that recorded no outcome before its process stopped or its lease ran out", "staleAttemptId", t.takeover)
	}

	// The key is ours: send and record the outcome whatever becomes of ctx.
	var (
		providerID string
		sendErr    = provErr
	)
	if sendErr == nil {
		sendCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.SendTimeout)
		providerID, sendErr = prov.Send(sendCtx, provider.Message{
			Tenant: d.tenant, WorkflowID: d.req.WorkflowID, RunID: d.req.RunID, StepID: d.req.StepID,
			SubscriberID: p.recipient, IdempotencyKey: d.req.IdempotencyKey, To: p.address, Content: d.req.Content,
			ListUnsubscribe: p.unsubscribe,
		})
		cancel()
	}

	outcome := eventlog.Record{Subject: d.subject, Tenant: d.tenant, MsgID: attemptID + ".outcome",
		Expect: true, ExpectSeq: claimSeq}
	var answer error
	if sendErr == nil {
		outcome.Type = events.DeliverySent
		outcome.Data = events.DeliverySentData{AttemptID: attemptID, ProviderMessageID: providerID}
		log.Debug("delivery: sent", "providerMessageId", providerID)
	} else {
		var data events.DeliveryFailedData
		data, answer = judge(t, sendErr)
		data.AttemptID = attemptID
		outcome.Type = events.DeliveryFailed
		outcome.Data = data
		log.Warn("delivery: attempt failed", "code", data.Code, "pin", data.Pin, "err", egress.LogText(sendErr))
	}
	seq, err := s.record(ctx, outcome)
	if err != nil {
		log.Error("delivery: the outcome of an attempt could not be recorded; the key stays claimed until its lease ends",
			"outcome", outcome.Type, "err", err)
		return Result{}, fmt.Errorf("delivery: recording the outcome of attempt %s: %w", attemptID, err)
	}
	if errors.Is(sendErr, provider.ErrBadAddress) {
		s.suppressBounce(ctx, d.tenant, t.ch.Kind, p.address, attemptID, log)
	}
	if err := s.waitApplied(ctx, d.req, seq); err != nil {
		return Result{}, err
	}
	if answer != nil {
		return Result{}, answer
	}
	return Result{AttemptID: attemptID, Status: StatusSent, ProviderMessageID: providerID}, nil
}

// claim appends the DeliveryAttempted of t, expecting the key's subject at
// t.expect, and returns the attempt's id and the claim's sequence. It
// fails with errLostClaim when another request appended first.
func (s *Service) claim(ctx context.Context, d send, p *plan, t try) (attemptID string, seq uint64, err error) {
	attemptID = eventlog.NewID("att_")
	// The claim is written whatever becomes of ctx: a claim abandoned half
	// way (published, its acknowledgement not awaited, as when the process
	// shuts down) could hold the key for a whole lease.
	claimCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	seq, err = s.cfg.Log.Append(claimCtx, eventlog.Record{
		Subject: d.subject, Type: events.DeliveryAttempted, Tenant: d.tenant, MsgID: attemptID,
		Data: events.DeliveryAttemptedData{
			DeliveryAttempt: events.DeliveryAttempt{AttemptID: attemptID, IdempotencyKey: d.req.IdempotencyKey,
				RunID: d.req.RunID, StepID: d.req.StepID, SubscriberID: p.recipient, ChannelKey: t.ch.ChannelKey,
				Kind: t.ch.Kind},
			Address: p.address, Takeover: t.takeover, Process: s.cfg.Process, Present: s.cfg.Alive != nil,
		},
		Expect: true, ExpectSeq: t.expect,
	})
	if errors.Is(err, eventlog.ErrConflict) {
		return "", 0, errLostClaim
	}
	if err != nil {
		s.unsent.add(attemptID, s.cfg.Lease)
	}
	return attemptID, seq, err
}

// judge returns the ledger row (without its attempt id) of t's failed
// send, and what Deliver answers: a *notSent when the next channel may be
// tried, else the failure's error. It is pure.
func judge(t try, sendErr error) (events.DeliveryFailedData, error) {
	// The tenant sees the provider's public words (a reply or status
	// code), never its text: the host may be a service that is no mail
	// server or provider. The log has them.
	public := t.ch.ChannelKey + ": " + provider.PublicMessage(sendErr)
	data := events.DeliveryFailedData{Code: apierr.CodeProviderUnavailable, Message: public, Transient: true}
	switch {
	case errors.Is(sendErr, egress.ErrRefused), errors.Is(sendErr, provider.ErrRejected):
		// A destination the egress policy refuses is refused on every
		// try: terminal, as a rejection (docs/security.md).
		data.Code, data.Transient = apierr.CodeProviderRejected, false
		return data, failureError(data.Code, public)
	case errors.Is(sendErr, provider.ErrNotSent) && !t.pinned:
		return data, &notSent{public: public}
	default:
		// Not sent on the channel the key is pinned to, or an unknown
		// outcome: only this channel may try again.
		data.Pin = t.ch.ChannelKey
		return data, failureError(data.Code, public)
	}
}

// waitApplied waits until the ledger row at seq is applied, so that GET
// /v1/deliveries shows the answer; not for a caller that named what it
// has seen (Request.Seen).
func (s *Service) waitApplied(ctx context.Context, req Request, seq uint64) error {
	if req.Seen != 0 {
		return nil
	}
	return s.cfg.Store.WaitFor(ctx, seq)
}

// record appends an attempt's outcome, retrying failures other than a
// conflict for up to recordTimeout, whatever becomes of ctx.
func (s *Service) record(ctx context.Context, rec eventlog.Record) (uint64, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	pause := 50 * time.Millisecond
	for {
		seq, err := s.cfg.Log.Append(ctx, rec)
		if err == nil || errors.Is(err, eventlog.ErrConflict) {
			return seq, err
		}
		select {
		case <-ctx.Done():
			return 0, err
		case <-time.After(pause):
		}
		pause = min(2*pause, time.Second)
	}
}
