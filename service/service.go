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
	"github.com/heraldhq/herald/delivery/smtp"
	"github.com/heraldhq/herald/egress"
	"github.com/heraldhq/herald/embedded"
	"github.com/heraldhq/herald/engine"
	"github.com/heraldhq/herald/eventlog"
	"github.com/heraldhq/herald/httpapi"
	"github.com/heraldhq/herald/metrics"
	"github.com/heraldhq/herald/projections"
	"github.com/heraldhq/herald/secrets"
	"github.com/nats-io/nats.go"
)

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

	metrics *metrics.Metrics
	lock    *dirLock // the data dir's, held until Shutdown ends

	// Delivery (POST /v1/deliver): the SMTP sender is closed after the API
	// has drained.
	smtp     *smtp.Sender
	delivery *delivery.Service

	adminToken    string
	internalToken string

	http     *http.Server
	listener net.Listener

	ready    atomic.Bool
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	errs     chan error
	stopOnce sync.Once
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
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	if s.lock, err = lockDataDir(cfg.DataDir); err != nil {
		return nil, fmt.Errorf("HERALD_DATA_DIR: %w", err)
	}
	s.metrics = metrics.New() // a registry of its own: no global state
	if err := s.loadSecrets(); err != nil {
		return nil, err
	}
	if err := s.connect(); err != nil {
		return nil, err
	}
	if s.log, err = eventlog.Open(ctx, s.nc, eventlog.Config{Replicas: cfg.Replicas, Appended: s.metrics.EventAppended}); err != nil {
		return nil, err
	}
	if s.store, err = projections.Open(filepath.Join(cfg.DataDir, ProjectionsFile), projections.Options{Logger: logger}); err != nil {
		return nil, err
	}
	s.ctl = control.New(s.log, s.store, s.keys, logger)
	s.ctl.SetEgress(&egress.Policy{AllowPrivate: cfg.AllowPrivateEgress})

	runCtx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	if s.listener, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
		return nil, fmt.Errorf("HERALD_HTTP_ADDR %s: %w", cfg.HTTPAddr, err)
	}
	// Delivery.
	smtpOpts := cfg.SMTP
	if smtpOpts.MaxIdlePerChannel == 0 {
		smtpOpts.MaxIdlePerChannel = 32
	}
	if smtpOpts.MaxOpenPerChannel == 0 {
		// Every session opened is kept: none is opened and quit per message.
		smtpOpts.MaxOpenPerChannel = smtpOpts.MaxIdlePerChannel
	}
	if smtpOpts.DialContext == nil {
		smtpOpts.DialContext = egress.Policy{AllowPrivate: cfg.AllowPrivateEgress}.Dialer(smtpOpts.DialTimeout).DialContext
	}
	s.smtp = smtp.NewSender(smtpOpts)
	if s.delivery, err = delivery.NewService(delivery.Config{
		Log: s.log, Store: s.store, Channels: s.ctl, SMTP: s.smtp, Logger: logger,
	}); err != nil {
		return nil, err
	}

	// Send steps go to this process's delivery service, unless DeliverURL
	// names another API.
	var deliverer engine.Deliverer = localDeliverer{svc: s.delivery}
	if cfg.DeliverURL != "" {
		deliverer = &engine.HTTPDeliverer{BaseURL: cfg.DeliverURL, Token: s.internalToken}
	}
	s.engine = engine.New(engine.Config{
		RetryBase:      cfg.RetryBase,
		MaxAttempts:    cfg.MaxAttempts,
		Workers:        cfg.Workers,
		FanoutBackstop: cfg.FanoutBackstop,
		AckWait:        cfg.AckWait,
		Logger:         logger,

		BridgeTransport: s.metrics.BridgeTransport,
		WokeLate:        s.metrics.WokeLate,
		SteppedAside:    s.metrics.SteppedAside,
		Egress:          &egress.Policy{AllowPrivate: cfg.AllowPrivateEgress},
	}, engine.Deps{
		Log:       s.log,
		Store:     s.store,
		Bridges:   s.ctl,
		Deliverer: deliverer,
		Work:      s.workNC,
	})

	projReady := make(chan struct{})
	s.goRun("projector", func() error { return s.store.Run(runCtx, s.log, projReady) })
	s.goRun("readiness", func() error {
		select {
		case <-projReady:
		case <-runCtx.Done():
			return nil
		}
		s.ready.Store(true)
		logger.Info("projections caught up; ready")
		s.goRun("engine", func() error { return s.engine.Run(runCtx) })
		return nil
	})

	api := httpapi.New(httpapi.Config{
		AdminToken:    s.adminToken,
		InternalToken: s.internalToken,
		Ready:         s.Ready,
		Logger:        logger,
		Metrics:       s.metrics,
	}, httpapi.Deps{Control: s.ctl, Store: s.store, Log: s.log, Engine: s.engine, Delivery: s.delivery})
	s.http = &http.Server{Handler: api.Handler(), ReadHeaderTimeout: 10 * time.Second}
	s.http.RegisterOnShutdown(api.StopStreams)
	s.sampleMetrics()
	s.goRun("http", func() error {
		if err := s.http.Serve(s.listener); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	logger.Info("herald serving", "http", s.Addr(), "data", cfg.DataDir, "embedded_nats", cfg.Embedded())
	return s, nil
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
		// Printed once, at first start, on stderr: not a log line.
		fmt.Fprintf(os.Stderr, "herald: generated admin token (stored in %s): %s\n", path, tok)
	}
	return tok, nil
}

func (s *Service) connect() error {
	var err error
	if s.cfg.Embedded() {
		s.nats, err = embedded.Start(embedded.Config{
			StoreDir:   filepath.Join(s.cfg.DataDir, NATSDir),
			SyncAlways: s.cfg.Sync == SyncAlways,
		})
		if err != nil {
			return fmt.Errorf("embedded nats: %w", err)
		}
		if s.nc, err = s.nats.Connect(); err != nil {
			return err
		}
		s.workNC, err = s.nats.Connect()
		return err
	}
	opts := []nats.Option{nats.Name("herald"), nats.MaxReconnects(-1), nats.Timeout(5 * time.Second)}
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

// goRun runs fn in a goroutine the service owns; a failure is reported on
// Done.
func (s *Service) goRun(name string, fn func() error) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := fn(); err != nil {
			s.logger.Error("component stopped", "component", name, "err", err)
			select {
			case s.errs <- fmt.Errorf("%s: %w", name, err):
			default:
			}
		}
	}()
}

// Done delivers the first failure of a component that stopped on its own.
func (s *Service) Done() <-chan error { return s.errs }

// Ready reports whether NATS is connected and projections caught up.
func (s *Service) Ready() bool {
	return s.ready.Load() && s.nc != nil && s.nc.IsConnected()
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

// Metrics returns the process's instruments.
func (s *Service) Metrics() *metrics.Metrics { return s.metrics }

// Store returns the projections.
func (s *Service) Store() *projections.Store { return s.store }

// Shutdown drains in-flight requests, stops every component in reverse
// order and closes the store and NATS. It is safe to call more than once.
func (s *Service) Shutdown(ctx context.Context) error {
	var err error
	s.stopOnce.Do(func() {
		s.ready.Store(false)
		if s.http != nil {
			err = s.http.Shutdown(ctx)
		} else if s.listener != nil {
			s.listener.Close()
		}
		if s.cancel != nil {
			s.cancel()
		}
		s.wg.Wait()
		if s.smtp != nil {
			s.smtp.Close()
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
