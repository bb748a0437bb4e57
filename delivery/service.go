package delivery

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"log/slog"
	"net/mail"
	"strings"
	"time"

	"github.com/heraldhq/herald/delivery/smtp"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/events"
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

// Config configures a Service. Log, Store, Keys and SMTP are required;
// the zero value of every other field is documented.
type Config struct {
	// Log holds the delivery ledger.
	Log *eventlog.Log
	// Store is read for channels and subscribers, and waited on so that
	// an answer is visible to reads (GET /v1/deliveries) at once.
	Store *projections.Store
	// Keys opens the sealed secrets of channel configs.
	Keys *secrets.Keyring
	// SMTP sends email-smtp channels' messages. The Service does not own
	// it: its creator closes it after the last Deliver.
	SMTP *smtp.Sender
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
	// InFlightWait is how long a request finding another attempt of its key
	// in flight waits for that attempt's outcome before failing with
	// ErrInProgress. Zero: DefaultInFlightWait.
	InFlightWait time.Duration
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
	if c.SMTP == nil {
		errs = append(errs, errors.New("delivery: Config.SMTP is required"))
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
//     died mid-send) is taken over by a new attempt.
//
// No channel (ErrNoChannel) and no address (ErrNoAddress) are decided
// before any attempt and record nothing.
//
// # Caveats
//
// SMTP cannot tell a lost reply to the message body from a lost message:
// an attempt that failed that way (or was taken over after a crash) may
// have been delivered, and the next attempt delivers again. Every attempt
// of a key carries the same Message-ID, derived from the tenant and the
// key, so that mail clients can drop the copy. Leases compare the clock of
// the process that claimed with the clock of the one that takes over.
type Service struct {
	cfg Config
}

// NewService returns a Service, or the problems of cfg.
func NewService(cfg Config) (*Service, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Service{cfg: cfg}, nil
}

// plan is what one delivery resolved before it claims its key.
type plan struct {
	channel projections.Channel
	address string
	smtp    smtp.Config
	message smtp.Message
}

// Deliver delivers req for tenant, at most once per req.IdempotencyKey,
// and returns its Result (see Service for the ledger's rules).
//
// Errors wrap ErrInvalidRequest (with a *apierr.ValidationError),
// ErrNoChannel, ErrNoAddress, ErrProviderRejected (an SMTP 5xx reply, or a
// channel config that cannot work), ErrProviderUnavailable (SMTP 4xx,
// network, timeout) or ErrInProgress; [Classify] tells terminal from
// transient. Other errors are internal (the log, or a secret that does not
// open).
//
// Once Deliver has claimed an attempt it calls the provider and records
// the outcome even if ctx ends meanwhile (bounded by Config.SendTimeout),
// so a client that gives up does not leave the key blocked.
func (s *Service) Deliver(ctx context.Context, tenant string, req Request) (Result, error) {
	if err := req.Validate(); err != nil {
		return Result{}, err
	}
	subject := eventlog.Subject(tenant, eventlog.AggDelivery, req.IdempotencyKey)
	deadline := time.Now().Add(s.cfg.InFlightWait)
	var (
		p         *plan
		waitedFor string // the attempt in flight this request waited for
	)
	for range maxRounds {
		e, err := s.ledger(ctx, subject)
		if err != nil {
			return Result{}, err
		}
		takeover := ""
		switch e.state {
		case keySent:
			if err := s.cfg.Store.WaitFor(ctx, e.seq); err != nil {
				return Result{}, err
			}
			return Result{AttemptID: e.sent.AttemptID, Status: StatusSent,
				ProviderMessageID: e.sent.ProviderMessageID}, nil
		case keyFailed:
			if e.attemptID == waitedFor {
				// A concurrent repeat shares the outcome of the attempt it
				// waited for.
				return Result{}, e.failure()
			}
		case keyInFlight:
			if time.Since(e.at) < s.cfg.Lease {
				waitedFor = e.attemptID
				if err := s.waitMoved(ctx, subject, e, deadline); err != nil {
					return Result{}, err
				}
				continue
			}
			takeover = e.attemptID
		}
		if p == nil {
			if p, err = s.resolve(ctx, tenant, req); err != nil {
				return Result{}, err
			}
		}
		res, err := s.attempt(ctx, tenant, subject, req, p, e.seq, takeover)
		if errors.Is(err, errLostClaim) {
			continue
		}
		return res, err
	}
	return Result{}, fmt.Errorf("%w: the key kept changing; try again later", ErrInProgress)
}

// errLostClaim: another request appended to the key's subject first.
var errLostClaim = errors.New("delivery: lost the claim")

// resolve picks the channel, the recipient's address and opens the
// channel's config. It records nothing.
func (s *Service) resolve(ctx context.Context, tenant string, req Request) (*plan, error) {
	// See every write acknowledged before this request (a channel or a
	// subscriber just changed, through any process).
	if err := s.cfg.Store.WaitCaughtUp(ctx, s.cfg.Log); err != nil {
		return nil, err
	}
	ch, err := SelectChannel(s.cfg.Store, tenant, req.Channel)
	if err != nil {
		return nil, err
	}
	recipient := req.Recipient()
	sub, err := s.cfg.Store.Subscriber(tenant, recipient)
	if errors.Is(err, projections.ErrNotFound) {
		return nil, fmt.Errorf("%w: subscriber %.100q does not exist", ErrNoAddress, recipient)
	}
	if err != nil {
		return nil, err
	}
	addrs := sub.Contacts[ch.Kind]
	if len(addrs) == 0 || addrs[0] == "" {
		return nil, fmt.Errorf("%w: subscriber %.100q has no %s address", ErrNoAddress, recipient, ch.Kind)
	}
	p := &plan{channel: ch, address: addrs[0]}
	switch ch.ChannelKey {
	case "email-smtp":
		if a, err := mail.ParseAddress(p.address); err != nil || a.Address != p.address {
			return nil, fmt.Errorf("%w: the first email address of subscriber %.100q is not a bare email address", ErrNoAddress, recipient)
		}
		config, err := OpenChannelConfig(s.cfg.Keys, tenant, ch)
		if err != nil {
			return nil, err
		}
		if p.smtp, err = smtpConfig(config); err != nil {
			return nil, fmt.Errorf("%w: channel %s: its config cannot work: %w", ErrProviderRejected, ch.ChannelKey, err)
		}
		p.message = smtp.Message{To: p.address, Subject: req.Content.Subject, Body: req.Content.Body,
			MessageID: messageID(tenant, req.IdempotencyKey, p.smtp.FromEmail)}
		if err := p.message.Validate(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNoAddress, err)
		}
	default:
		return nil, fmt.Errorf("delivery: channel %q has no provider", ch.ChannelKey)
	}
	return p, nil
}

// attempt claims the key (its subject's last sequence being expect) and
// sends. It fails with errLostClaim when another request claimed first.
func (s *Service) attempt(ctx context.Context, tenant, subject string, req Request, p *plan, expect uint64, takeover string) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	attemptID := eventlog.NewID("att_")
	// The claim is written whatever becomes of ctx: a claim abandoned half
	// way (published, its acknowledgement not awaited, as when the process
	// shuts down) could hold the key for a whole lease.
	claimCtx, cancelClaim := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancelClaim()
	claimSeq, err := s.cfg.Log.Append(claimCtx, eventlog.Record{
		Subject: subject, Type: events.DeliveryAttempted, Tenant: tenant, MsgID: attemptID,
		Data: events.DeliveryAttemptedData{
			AttemptID: attemptID, IdempotencyKey: req.IdempotencyKey, RunID: req.RunID, StepID: req.StepID,
			SubscriberID: req.Recipient(), ChannelKey: p.channel.ChannelKey, Kind: p.channel.Kind,
			Address: p.address, Takeover: takeover,
		},
		Expect: true, ExpectSeq: expect,
	})
	if errors.Is(err, eventlog.ErrConflict) {
		return Result{}, errLostClaim
	}
	if err != nil {
		return Result{}, err
	}
	log := s.cfg.Logger.With("tenant", tenant, "idempotencyKey", req.IdempotencyKey, "attemptId", attemptID,
		"channelKey", p.channel.ChannelKey)
	if takeover != "" {
		log.Warn("delivery: took over an attempt that recorded no outcome within its lease", "staleAttemptId", takeover)
	}

	// The key is ours: send and record the outcome whatever becomes of ctx.
	sendCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.SendTimeout)
	sent, sendErr := s.cfg.SMTP.Send(sendCtx, p.smtp, p.message)
	cancel()

	outcome := eventlog.Record{Subject: subject, Tenant: tenant, MsgID: attemptID + ".outcome",
		Expect: true, ExpectSeq: claimSeq}
	var answer error
	if sendErr == nil {
		outcome.Type = events.DeliverySent
		outcome.Data = events.DeliverySentData{AttemptID: attemptID, ProviderMessageID: sent.MessageID}
		log.Debug("delivery: sent", "providerMessageId", sent.MessageID)
	} else {
		code := CodeProviderUnavailable
		if errors.Is(sendErr, smtp.ErrRejected) || errors.Is(sendErr, smtp.ErrInvalid) {
			code = CodeProviderRejected
		}
		// The tenant sees the reply code, never the server's words: the
		// host may be a service that is no SMTP server. The log has them.
		public := smtp.PublicMessage(sendErr)
		outcome.Type = events.DeliveryFailed
		outcome.Data = events.DeliveryFailedData{AttemptID: attemptID, Code: code, Message: public,
			Transient: code == CodeProviderUnavailable}
		answer = failureError(code, public)
		log.Warn("delivery: attempt failed", "code", code, "err", sendErr.Error())
	}
	seq, err := s.record(ctx, outcome)
	if err != nil {
		log.Error("delivery: the outcome of an attempt could not be recorded; the key stays claimed until its lease ends",
			"outcome", outcome.Type, "err", err)
		return Result{}, fmt.Errorf("delivery: recording the outcome of attempt %s: %w", attemptID, err)
	}
	if err := s.cfg.Store.WaitFor(ctx, seq); err != nil {
		return Result{}, err
	}
	if answer != nil {
		return Result{}, answer
	}
	return Result{AttemptID: attemptID, Status: StatusSent, ProviderMessageID: sent.MessageID}, nil
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

// smtpConfig reads an opened email-smtp config (JSON values as
// encoding/json decodes them) into an smtp.Config and validates it.
func smtpConfig(m map[string]any) (smtp.Config, error) {
	str := func(k string) string { v, _ := m[k].(string); return v }
	var port int
	switch v := m["port"].(type) {
	case float64:
		port = int(v)
		if float64(port) != v {
			port = 0
		}
	case int:
		port = v
	}
	secure, _ := m["secure"].(bool)
	insecureAuth, _ := m["allowInsecureAuth"].(bool)
	c := smtp.Config{Host: str("host"), Port: port, Secure: secure, Username: str("username"),
		Password: str("password"), FromEmail: str("fromEmail"), FromName: str("fromName"),
		AllowInsecureAuth: insecureAuth}
	return c, c.Validate()
}

// messageID derives the Message-ID of every attempt of one delivery from
// the tenant and the idempotency key: "<26 base32 characters>.herald@<the
// sender's domain>", or @herald.invalid when that domain is not a plain
// host name.
func messageID(tenant, key, fromEmail string) string {
	sum := sha256.Sum256([]byte(tenant + "\x00" + key))
	local := strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:16]))
	domain := fromEmail[strings.LastIndexByte(fromEmail, '@')+1:]
	if !plainHost(domain) {
		domain = "herald.invalid"
	}
	return local + ".herald@" + domain
}

// plainHost reports whether s is labels of letters, digits and hyphens
// joined by dots.
func plainHost(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}
