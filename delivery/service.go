package delivery

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/heraldhq/herald/delivery/inbound"
	"github.com/heraldhq/herald/delivery/provider"
	"github.com/heraldhq/herald/egress"
	"github.com/heraldhq/herald/eventlog"
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
	// onceMu guards once, the one-use tokens of providers' requests
	// (opened at the first request that carries one).
	onceMu sync.Mutex
	once   *eventlog.Once
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
