package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/control"
	"github.com/heraldhq/herald/delivery"
	"github.com/heraldhq/herald/delivery/inbound"
	"github.com/heraldhq/herald/delivery/providers"
	"github.com/heraldhq/herald/egress"
	"github.com/heraldhq/herald/embedded"
	"github.com/heraldhq/herald/engine"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/httpapi"
	"github.com/heraldhq/herald/inboxfeed"
	"github.com/heraldhq/herald/livetail"
	"github.com/heraldhq/herald/metrics"
	"github.com/heraldhq/herald/preferences/links"
	"github.com/heraldhq/herald/projections"
	"github.com/heraldhq/herald/retention"
	"github.com/heraldhq/herald/secrets"
	"github.com/heraldhq/herald/webhooks"
	"github.com/nats-io/nats.go"
)

// MaxInboxStreamsPerSubscriber bounds the GET /v1/inbox/stream streams
// one subscriber holds open on one process (tabs and devices); the
// process holds at most half of HERALD_MAX_CONNS streams, so that streams
// never take every connection from the API, and the subscribers of one
// tenant half of those (inboxfeed's default), so that one tenant
// never takes every stream from the others.
const MaxInboxStreamsPerSubscriber = 8

// Files under the data directory.
const (
	AdminTokenFile    = "admin.token"
	InternalTokenFile = "internal.token"
	ProjectionsFile   = "projections.db"
	NATSDir           = "nats"
)

// Service is one running herald process. Create it with Start; stop it
// with Shutdown.
type Service struct {
	cfg    Config
	logger *slog.Logger

	nats *embedded.Server
	nc   *nats.Conn
	// workNC carries the engine's work consumers, so that due work is not
	// queued behind the event stream the projector tails on nc.
	workNC *nats.Conn
	log    *eventlog.Log
	store  *projections.Store
	ctl    *control.Control
	keys   *secrets.Keyring
	engine *engine.Engine
	// webhooks sends outbound webhooks (started with the engine).
	webhooks *webhooks.Dispatcher
	// feed follows the inbox subjects for GET /v1/inbox/stream.
	feed *inboxfeed.Feed
	tail *livetail.Feed

	metrics *metrics.Metrics
	lock    *dirLock // the data dir's, held until Shutdown ends

	// process identifies this start of the process (its delivery claims);
	// presence keeps it known alive to the other processes.
	process  string
	presence *eventlog.Presence

	// Delivery (POST /v1/deliver): closed (its providers' SMTP sessions)
	// after the API has drained.
	delivery *delivery.Service

	adminToken    string
	internalToken string

	http     *http.Server
	listener net.Listener
	// internalHTTP serves the internal routes on InternalAddr, if set.
	internalHTTP     *http.Server
	internalListener net.Listener

	ready    atomic.Bool
	dead     atomic.Bool // a NATS connection closed for good
	stopping atomic.Bool // Shutdown began: closed connections are expected
	cancel   context.CancelFunc
	// cancelBackground stops the work commands left running after their
	// answer (control.Config.Background).
	cancelBackground context.CancelFunc
	wg               sync.WaitGroup
	errs             chan error
	stopOnce         sync.Once
}

// Start brings the process up: it returns once the API listens. Readiness
// (projections caught up) follows; see Ready.
func Start(ctx context.Context, cfg Config, logger *slog.Logger) (_ *Service, err error) {
	if logger == nil {
		logger = slog.Default()
	}
	if cfg.Env == nil {
		cfg.Env = func(string) string { return "" }
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, logger: logger, errs: make(chan error, 4)}
	defer func() {
		if err != nil {
			s.Shutdown(context.Background())
		}
	}()
	if err := s.openState(ctx); err != nil {
		return nil, err
	}
	if err := s.listen(); err != nil {
		return nil, err
	}
	tokens := links.New(s.keys, cfg.PublicURL)
	if s.delivery, err = s.newDelivery(tokens); err != nil {
		return nil, err
	}
	s.engine = s.newEngine(tokens)
	s.webhooks = s.newWebhooks()
	s.ctl = s.newControl()
	if s.feed, err = inboxfeed.Start(ctx, s.log, inboxfeed.Options{Logger: logger,
		MaxListeners: orDefault(cfg.MaxConns, 4096) / 2, MaxPerSubscriber: MaxInboxStreamsPerSubscriber,
		TailRestarted: s.metrics.TailRestarted}); err != nil {
		return nil, err
	}
	s.tail = livetail.New(s.log, livetail.Options{Logger: logger, TailRestarted: s.metrics.TailRestarted})
	s.runComponents()
	s.serve(tokens)
	logger.Info("herald serving", "http", s.Addr(), "data", cfg.DataDir, "embedded_nats", cfg.Embedded())
	return s, nil
}

// openState takes the data directory and opens what lives in it or
// through it: the secrets, NATS, the event log and the projections.
func (s *Service) openState(ctx context.Context) (err error) {
	if err := os.MkdirAll(s.cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	if s.lock, err = lockDataDir(s.cfg.DataDir); err != nil {
		return fmt.Errorf("HERALD_DATA_DIR: %w", err)
	}
	s.metrics = metrics.New() // a registry of its own: no global state
	if err := s.loadSecrets(); err != nil {
		return err
	}
	if err := s.connect(); err != nil {
		return err
	}
	if s.log, err = eventlog.Open(ctx, s.nc, eventlog.Config{Replicas: s.cfg.Replicas, Appended: s.metrics.EventAppended}); err != nil {
		return err
	}
	stream, err := s.log.Identity(ctx)
	if err != nil {
		return err
	}
	// Every process keeps a presence, so that another takes over a send
	// it left in flight as soon as it is gone (a SIGKILL), within AckWait
	// as its other work is, not after the send's lease.
	s.process = eventlog.NewID("proc_")
	if s.presence, err = s.log.Presence(ctx, s.process, orDefault(s.cfg.AckWait, engine.DefaultAckWait)); err != nil {
		return err
	}
	s.store, err = projections.Open(filepath.Join(s.cfg.DataDir, ProjectionsFile), projections.Options{Logger: s.logger, Stream: stream,
		TailRestarted: s.metrics.TailRestarted})
	return err
}

// listen opens the API's listener, and the internal routes' when they
// have their own.
func (s *Service) listen() (err error) {
	if s.listener, err = net.Listen("tcp", s.cfg.HTTPAddr); err != nil {
		return fmt.Errorf("HERALD_HTTP_ADDR %s: %w", s.cfg.HTTPAddr, err)
	}
	if s.cfg.InternalAddr != "" {
		if s.internalListener, err = net.Listen("tcp", s.cfg.InternalAddr); err != nil {
			return fmt.Errorf("HERALD_INTERNAL_ADDR %s: %w", s.cfg.InternalAddr, err)
		}
	}
	return nil
}

// newDelivery returns the delivery service: the providers, the ledger.
func (s *Service) newDelivery(tokens *links.Maker) (*delivery.Service, error) {
	policy := s.egressPolicy()
	// SNS certificates and confirmations come from Amazon's public hosts
	// only (inbound.AllowedSNSURL), and through a dialer that refuses
	// private addresses whatever the tenant egress setting.
	sns := inbound.NewCertFetcher()
	sns.Client = egress.Policy{}.Client(10 * time.Second)
	if s.cfg.SNSClient != nil {
		sns.Client = s.cfg.SNSClient
	}
	return delivery.NewService(delivery.Config{
		Log: s.log, Store: s.store, Keys: s.keys, Logger: s.logger, Links: tokens,
		Providers:  providers.Registry(),
		HTTPClient: policy.Client(0),
		Dial:       policy.Dialer(0).DialContext,
		TLSConfig:  s.cfg.ProviderTLS,
		Lease:      s.cfg.DeliveryLease, SendTimeout: s.cfg.DeliverySendTimeout,
		// Embedded NATS lives in the data dir, whose lock admits one
		// process: attempts left in flight by an earlier one are dead.
		Process: s.process, SoleProcess: s.cfg.Embedded(), Alive: s.presence.Alive,
		Inbound:    inbound.Deps{SNSCertificate: sns.Certificate},
		ConfirmSNS: sns.Confirm,
		Reported:   s.metrics.DeliveryReported,
	})
}

// egressPolicy is the policy of every tenant-supplied destination.
func (s *Service) egressPolicy() *egress.Policy {
	return &egress.Policy{AllowPrivate: s.cfg.AllowPrivateEgress}
}

// newEngine returns the engine of runs. Its send steps go to this
// process's delivery service, unless DeliverURL names another API.
func (s *Service) newEngine(tokens *links.Maker) *engine.Engine {
	cfg := s.cfg
	var deliverer engine.Deliverer = s.delivery
	if cfg.DeliverURL != "" {
		deliverer = delivery.NewClient(cfg.DeliverURL, s.internalToken, cfg.Workers)
	}
	return engine.New(engine.Config{
		RetryBase:      cfg.RetryBase,
		MaxAttempts:    cfg.MaxAttempts,
		Workers:        cfg.Workers,
		FanoutBackstop: cfg.FanoutBackstop,
		AckWait:        cfg.AckWait,

		FanoutChunk:       cfg.FanoutChunk,
		MaxParked:         cfg.MaxParked,
		MaxRunSteps:       cfg.MaxRunSteps,
		MaxRunOutputBytes: cfg.MaxRunOutputBytes,
		Logger:            s.logger,

		CacheBytes: int64(cfg.CacheMiB) << 20,
		Links:      tokens,

		BridgeTransport: s.metrics.BridgeTransport,
		WokeLate:        s.metrics.WokeLate,
		SteppedAside:    s.metrics.SteppedAside,
		Egress:          s.egressPolicy(),

		TenantConcurrency: cfg.TenantConcurrency,
		ConsumerRestarted: s.metrics.ConsumerRestarted,
	}, engine.Deps{
		Log:       s.log,
		Store:     s.store,
		Bridges:   control.NewBridgeSecrets(s.log, s.store, s.keys),
		Deliverer: deliverer,
		Work:      s.workNC,
	})
}

// newWebhooks returns the sender of outbound webhooks.
func (s *Service) newWebhooks() *webhooks.Dispatcher {
	return webhooks.New(webhooks.Config{
		Log: s.log, Store: s.store, Keys: s.keys, Render: httpapi.WebhookData(s.store),
		RetryBase: s.cfg.WebhookRetryBase, AckWait: s.cfg.AckWait, Egress: *s.egressPolicy(),
		Logger: s.logger, Attempted: s.metrics.WebhookAttempted, Restarted: s.metrics.ConsumerRestarted,
	})
}

// newControl returns the command service, which runs through the engine.
func (s *Service) newControl() *control.Control {
	bg, cancel := context.WithCancel(context.Background())
	s.cancelBackground = cancel
	return control.New(control.Config{Log: s.log, Store: s.store, Keys: s.keys, Logger: s.logger,
		Background: func(fn func(context.Context)) {
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				fn(bg)
			}()
		},
		Egress: s.egressPolicy(), InboxTokenTTL: s.cfg.InboxTokenTTL,
		Runtime: s.engine, RuntimeOptions: control.RuntimeOptions{CronMinInterval: s.cfg.CronMinInterval,
			BroadcastThreshold: s.cfg.BroadcastThreshold}})
}

// runComponents runs the projector and, once the projections caught up
// (the process is then ready), the engine and the webhook sender, until
// Shutdown.
func (s *Service) runComponents() {
	runCtx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	projReady := make(chan struct{})
	s.goRun("presence", func() error { s.presence.Run(runCtx); return nil })
	s.goRun("projector", func() error { return s.store.Run(runCtx, s.log, projReady) })
	s.goRun("readiness", func() error {
		select {
		case <-projReady:
		case <-runCtx.Done():
			return nil
		}
		s.ready.Store(true)
		s.logger.Info("projections caught up; ready")
		s.goRun("engine", func() error { return s.engine.Run(runCtx) })
		s.goRun("webhooks", func() error { return s.webhooks.Run(runCtx) })
		if s.cfg.RunRetention > 0 {
			sw := retention.New(retention.Config{Retention: s.cfg.RunRetention, Every: s.cfg.RetentionEvery,
				Logger: s.logger.With("component", "retention")}, s.log, s.store)
			s.goRun("retention", func() error { sw.Run(runCtx); return nil })
		}
		return nil
	})
}

// serve serves the API on the listeners until Shutdown.
func (s *Service) serve(tokens *links.Maker) {
	cfg := s.cfg
	api := httpapi.New(httpapi.Config{
		AdminToken:    s.adminToken,
		InternalToken: s.internalToken,
		Ready:         s.Ready,
		Live:          s.Live,
		Logger:        s.logger,
		Metrics:       s.metrics,

		SeparateInternal: cfg.InternalAddr != "",
		RateLimit:        cfg.RateLimit,
		InboundRate:      cfg.InboundRate,
		InboxHeartbeat:   cfg.InboxHeartbeat,
		InboxOrigins:     cfg.InboxOrigins,
	}, httpapi.Deps{Control: s.ctl, Store: s.store, Log: s.log, Delivery: s.delivery, Links: tokens, Feed: s.feed,
		Tail: s.tail, Inbound: inbound.NewTokens(s.keys, s.cfg.PublicURL)})
	s.http = s.newHTTPServer(api.Handler())
	s.http.RegisterOnShutdown(api.StopStreams)
	s.sampleMetrics()
	s.goServe("http", s.http, s.listener)
	if s.internalListener != nil {
		s.internalHTTP = s.newHTTPServer(api.InternalHandler())
		s.goServe("internal http", s.internalHTTP, s.internalListener)
		s.logger.Info("internal routes on their own listener", "internal_http", s.internalListener.Addr().String())
	}
}

// goServe serves srv on l, at most HERALD_MAX_CONNS connections at a
// time, until Shutdown.
func (s *Service) goServe(name string, srv *http.Server, l net.Listener) {
	s.goRun(name, func() error {
		err := serveLimited(srv, l, orDefault(s.cfg.MaxConns, 4096), orDefault(s.cfg.HTTPCapHeaderTimeout, 2*time.Second))
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
}

func (s *Service) loadSecrets() error {
	var (
		info secrets.Info
		err  error
	)
	s.keys, info, err = secrets.LoadKeyring(s.cfg.Env, s.cfg.DataDir, s.cfg.Embedded())
	if err != nil {
		return fmt.Errorf("master key: %w", err)
	}
	if info.Generated {
		s.logger.Warn("generated a development master key; set HERALD_MASTER_KEY in production", "path", info.Path)
	}
	if s.adminToken, err = s.token("HERALD_ADMIN_TOKEN", AdminTokenFile, "hadm_"); err != nil {
		return err
	}
	s.internalToken, err = s.token("HERALD_INTERNAL_TOKEN", InternalTokenFile, "hint_")
	return err
}

// token returns the token in env var name, or the one in the data dir
// file (generated at first start).
func (s *Service) token(name, file, prefix string) (string, error) {
	if v := strings.TrimSpace(s.cfg.Env(name)); v != "" {
		return v, nil
	}
	path := filepath.Join(s.cfg.DataDir, file)
	tok, created, err := secrets.LoadOrCreateTokenFile(path, prefix, 40)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	if created && file == AdminTokenFile {
		// Where it is, never the token: log shippers keep stderr.
		s.logger.Warn("generated an admin token; read it from its file (mode 0600) or set HERALD_ADMIN_TOKEN",
			"path", path)
	}
	return tok, nil
}

func (s *Service) connect() error {
	var err error
	// A lost connection is reconnected for ever (MaxReconnects(-1)); one
	// that is closed for good (the server refused it, nats.go gave up)
	// makes the process fail liveness and exit non-zero: see connClosed.
	watch := []nats.Option{
		nats.ReconnectWait(250 * time.Millisecond),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				s.logger.Warn("NATS connection lost; reconnecting", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { s.logger.Info("NATS connection back", "url", nc.ConnectedUrlRedacted()) }),
		nats.ClosedHandler(s.connClosed),
		// Asynchronous errors (a server's -ERR, a slow consumer) as log
		// lines, not nats.go's default print on stderr.
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			attrs := []any{"err", err}
			if sub != nil {
				attrs = append(attrs, "subject", sub.Subject)
			}
			s.logger.Warn("NATS asynchronous error", attrs...)
		}),
	}
	if s.cfg.Embedded() {
		s.nats, err = embedded.Start(embedded.Config{
			StoreDir:   filepath.Join(s.cfg.DataDir, NATSDir),
			SyncAlways: s.cfg.Sync == SyncAlways,
		})
		if err != nil {
			return fmt.Errorf("embedded nats: %w", err)
		}
		if s.nc, err = s.nats.Connect(watch...); err != nil {
			return err
		}
		s.workNC, err = s.nats.Connect(watch...)
		return err
	}
	opts := append([]nats.Option{nats.Name("herald"), nats.MaxReconnects(-1), nats.Timeout(5 * time.Second)}, watch...)
	if s.cfg.NATSCreds != "" {
		opts = append(opts, nats.UserCredentials(s.cfg.NATSCreds))
	}
	s.nc, err = nats.Connect(strings.Join(s.cfg.NATSURLs, ","), opts...)
	if err == nil {
		s.workNC, err = nats.Connect(strings.Join(s.cfg.NATSURLs, ","), opts...)
	}
	if err != nil {
		return fmt.Errorf("HERALD_NATS_URL: %w", err)
	}
	return nil
}

// newHTTPServer returns a server of h with the configured bounds.
func (s *Service) newHTTPServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: orDefault(s.cfg.HTTPHeaderTimeout, 10*time.Second),
		ReadTimeout:    orDefault(s.cfg.HTTPReadTimeout, 60*time.Second),
		WriteTimeout:   orDefault(s.cfg.HTTPWriteTimeout, 5*time.Minute),
		IdleTimeout:    orDefault(s.cfg.HTTPIdleTimeout, 120*time.Second),
		MaxHeaderBytes: maxHeaderBytes}
}

// InternalAddr returns the address of the internal listener, or "" when
// the internal routes share the API's.
func (s *Service) InternalAddr() string {
	if s.internalListener == nil {
		return ""
	}
	return s.internalListener.Addr().String()
}

// maxHeaderBytes bounds a request's header block (request line
// included): ids are at most ~1 KiB, a path of several ids and a bearer
// token stay far below it.
const maxHeaderBytes = 64 << 10

// orDefault returns v, or def when v is zero.
func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// connClosed is the ClosedHandler of both NATS connections. Outside
// Shutdown, a closed connection never comes back: the process reports
// itself dead (Live, GET /healthz 503) and fails on Done, so that
// `herald serve` exits non-zero and a supervisor restarts it.
func (s *Service) connClosed(nc *nats.Conn) {
	if s.stopping.Load() {
		return
	}
	s.dead.Store(true)
	s.ready.Store(false)
	cause := nc.LastError()
	s.logger.Error("NATS connection closed for good; exiting so that a supervisor restarts herald", "err", cause)
	if cause == nil {
		cause = nats.ErrConnectionClosed
	}
	select {
	case s.errs <- fmt.Errorf("%w: %w", ErrNATSClosed, cause):
	default:
	}
}

// Live reports whether the process can still serve: false once a NATS
// connection closed for good (GET /healthz answers 503).
func (s *Service) Live() bool {
	return !s.dead.Load() && (s.nc == nil || !s.nc.IsClosed()) && (s.workNC == nil || !s.workNC.IsClosed())
}

// goRun runs fn in a goroutine the service owns; a failure is reported on
// Done.
func (s *Service) goRun(name string, fn func() error) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := fn(); err != nil {
			// A component that stopped because a connection closed for
			// good reports it as such, whichever of it and the
			// connection's ClosedHandler (connClosed) comes first.
			if !s.stopping.Load() && (errors.Is(err, nats.ErrConnectionClosed) || s.connClosedForGood()) {
				err = fmt.Errorf("%w: %w", ErrNATSClosed, err)
			}
			s.logger.Error("component stopped", "component", name, "err", err)
			select {
			case s.errs <- fmt.Errorf("%s: %w", name, err):
			default:
			}
		}
	}()
}

// connClosedForGood reports whether a NATS connection of the service is
// closed (nats.go closes one only for good).
func (s *Service) connClosedForGood() bool {
	return (s.nc != nil && s.nc.IsClosed()) || (s.workNC != nil && s.workNC.IsClosed())
}

// Done delivers the first failure of a component that stopped on its own.
func (s *Service) Done() <-chan error { return s.errs }

// Ready reports whether NATS is connected, projections caught up and the
// projector not stalled (see projections.Options.StallAfter).
func (s *Service) Ready() bool {
	return s.ready.Load() && s.nc != nil && s.nc.IsConnected() && !s.store.Stalled()
}

// Addr returns the address the API listens on.
func (s *Service) Addr() string { return s.listener.Addr().String() }

// URL returns the API's base URL.
func (s *Service) URL() string { return "http://" + s.Addr() }

// AdminToken returns the admin API token.
func (s *Service) AdminToken() string { return s.adminToken }

// InternalToken returns the internal delivery token.
func (s *Service) InternalToken() string { return s.internalToken }

// Log returns the event log.
func (s *Service) Log() *eventlog.Log { return s.log }

// Store returns the projections.
func (s *Service) Store() *projections.Store { return s.store }

// Shutdown drains in-flight requests, stops every component in reverse
// order and closes the store and NATS. It is safe to call more than once.
func (s *Service) Shutdown(ctx context.Context) error {
	var err error
	s.stopOnce.Do(func() {
		s.stopping.Store(true)
		s.ready.Store(false)
		if s.http != nil {
			err = s.http.Shutdown(ctx)
		} else if s.listener != nil {
			s.listener.Close()
		}
		if s.internalHTTP != nil {
			err = errors.Join(err, s.internalHTTP.Shutdown(ctx))
		} else if s.internalListener != nil {
			s.internalListener.Close()
		}
		if s.feed != nil {
			s.feed.Stop()
			s.tail.Stop()
		}
		if s.cancel != nil {
			s.cancel()
		}
		if s.cancelBackground != nil {
			s.cancelBackground()
		}
		s.wg.Wait()
		if s.delivery != nil {
			s.delivery.Close()
		}
		if s.store != nil {
			s.store.Close()
		}
		if s.workNC != nil {
			s.workNC.Close()
		}
		if s.nc != nil {
			s.nc.Close()
		}
		if s.nats != nil {
			s.nats.Shutdown()
		}
		s.lock.release()
	})
	return err
}
