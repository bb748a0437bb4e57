package service

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/secrets"
)

// Sync modes of the embedded store.
const (
	SyncInterval = "interval"
	SyncAlways   = "always"
)

// Config is the configuration of one herald process. Every item has an
// environment variable (HERALD_…) and a flag; a flag beats the
// environment, which beats the default. The zero value of each field is
// documented; LoadConfig applies the defaults.
type Config struct {
	// HTTPAddr is the REST API address. Default 127.0.0.1:8080.
	HTTPAddr string
	// DataDir holds the embedded JetStream store, the projections and the
	// generated keys. Default ./herald-data (relative to the working dir).
	DataDir string
	// NATSURLs are the URLs of an external NATS cluster. Empty: embedded.
	NATSURLs []string
	// NATSCreds is a credentials file for the external cluster.
	NATSCreds string
	// Replicas is the stream replica count. Default 1.
	Replicas int
	// Sync is "interval" (default) or "always" (fsync every write).
	Sync string
	// RetryBase is the first retry backoff of a failed step. Default 1s.
	RetryBase time.Duration
	// WebhookRetryBase is the delay before the first retry of an outbound
	// webhook message (HERALD_WEBHOOK_RETRY_BASE), doubling after each
	// failure up to 1h. Default 5s.
	WebhookRetryBase time.Duration
	// MaxAttempts is how many times one step is tried. Default 8.
	MaxAttempts int
	// Workers is how many runs this process advances at once
	// (HERALD_WORKERS). Default 128; zero: the engine's default, also 128.
	// A turn mostly waits on the Bridge, so a slow Bridge wants many; with
	// a fast Bridge on few cores, fewer workers contend less for the CPU.
	Workers int
	// FanoutBackstop is how long an unfinished fan-out waits before a
	// fan-out worker takes it over after a crash. Zero: the engine's
	// default (20s). Not configurable from the environment: a test knob.
	FanoutBackstop time.Duration
	// MaxRunSteps and MaxRunOutputBytes bound one run's steps and their
	// outputs together. Zero: the engine's defaults (1,000 steps, 8 MiB).
	// Test knobs, like FanoutBackstop: a test of the bounds need not run
	// a thousand Bridge calls of a growing history.
	MaxRunSteps, MaxRunOutputBytes int
	// FanoutChunk (runs a fan-out starts at once) and BroadcastThreshold
	// (the largest audience answered with its runs) are test knobs too, so
	// that a test of a broadcast of several chunks need not start
	// thousands of runs. Zero: the defaults (1,000 and 1,000).
	FanoutChunk, BroadcastThreshold int
	// MaxParked bounds the work messages a process parks for fairness
	// (engine.Config.MaxParked), a test knob so that a test of a backlog
	// past it need not start thousands of runs. Zero: the engine's
	// default.
	MaxParked int
	// AckWait is how soon work held by a crashed process is redelivered
	// (the engine's, and the webhooks dispatcher's).
	// Zero: the engine's default (15s). A test knob, like FanoutBackstop.
	AckWait time.Duration
	// DeliveryLease and DeliverySendTimeout are delivery.Config's Lease
	// (how long a send claimed by a process that died holds its key) and
	// SendTimeout. Zero: delivery's defaults (60s, 45s). Test knobs, like
	// AckWait.
	DeliveryLease, DeliverySendTimeout time.Duration
	// DeliverURL is the base URL of the API whose POST /v1/deliver the
	// engine calls for send steps. Zero: this process's own delivery
	// service, called in-process (no HTTP round trip).
	DeliverURL string
	// ProviderTLS is the base TLS configuration of the providers'
	// connections that are not HTTP (SMTP). It has no environment
	// variable: tests set RootCAs to trust a loopback server. Zero: the
	// system's roots.
	ProviderTLS *tls.Config
	// SNSClient fetches SNS signing certificates and confirms SNS
	// subscriptions (SES events). It has no environment variable: tests
	// answer for Amazon's hosts with it. Zero: Amazon's public hosts,
	// through a dialer that refuses private addresses.
	SNSClient *http.Client
	// CronMinInterval is the shortest interval between two ticks of a
	// workflow schedule that a sync accepts (HERALD_CRON_MIN_INTERVAL).
	// Default 1m with HERALD_NATS_URL (production), 1s embedded
	// (development: a 6-field schedule ticks at most every second anyway).
	CronMinInterval time.Duration
	// CacheMiB bounds the engine's in-memory caches (run states with their
	// outputs, trigger payloads, digest windows), in MiB of estimated
	// bytes (HERALD_CACHE_MIB). Default 256.
	CacheMiB int
	// AllowPrivateEgress lets tenant-supplied destinations (Bridge URLs,
	// SMTP hosts) reach loopback, private, link-local and other internal
	// addresses, and Bridge URLs use plain http (HERALD_ALLOW_PRIVATE_EGRESS).
	// Default: true in embedded mode (development), false with
	// HERALD_NATS_URL. See package egress.
	AllowPrivateEgress bool
	// TenantConcurrency caps the runs one tenant advances at once in this
	// process (HERALD_TENANT_CONCURRENCY); the rest of its work waits
	// without taking a worker. Zero: the engine's default, half of Workers
	// (at least 1). A value of Workers or more is no cap.
	TenantConcurrency int
	// RateLimit is each tenant's API requests per second
	// (HERALD_RATE_LIMIT, default 200, burst twice that); over it, 429
	// rate_limited with Retry-After. Zero: no limit.
	RateLimit float64
	// InboundRate is each channel's requests per second on its inbound
	// URL (HERALD_INBOUND_RATE, default 100, burst twice that); over it,
	// 429 rate_limited with Retry-After. Zero: no limit.
	InboundRate float64
	// Env reads the secrets (HERALD_MASTER_KEY, HERALD_ADMIN_TOKEN,
	// HERALD_INTERNAL_TOKEN, HERALD_MASTER_KEY_PREVIOUS). Default: none set.
	Env func(string) string
	// RunRetention is how long a finished run is kept
	// (HERALD_RUN_RETENTION, default 720h): then it leaves the log and
	// the projections in the background (package retention). Zero keeps
	// every run.
	RunRetention time.Duration
	// RetentionEvery is the pause between two retention sweeps. Zero: a
	// quarter of RunRetention, at most a minute. Not from the
	// environment: for tests.
	RetentionEvery time.Duration
	// MaxConns caps the API's open connections (HERALD_MAX_CONNS); at
	// the cap a new one closes the longest idle, else the oldest that has
	// not sent a whole request within HTTPCapHeaderTimeout, or waits in
	// the listen backlog while every one is busy (connLimiter). Zero:
	// 4096.
	MaxConns int
	// HTTPReadTimeout bounds reading one request, headers and body
	// (HERALD_HTTP_READ_TIMEOUT): a client idle mid-body is cut off. Zero:
	// 60s.
	HTTPReadTimeout time.Duration
	// HTTPWriteTimeout bounds answering one request
	// (HERALD_HTTP_WRITE_TIMEOUT); a followed audit stream is exempt. Zero:
	// 5m (a fan-out to 100,000 is answered once finished).
	HTTPWriteTimeout time.Duration
	// HTTPIdleTimeout closes a keep-alive connection idle this long
	// (HERALD_HTTP_IDLE_TIMEOUT). Zero: 120s.
	HTTPIdleTimeout time.Duration
	// HTTPHeaderTimeout bounds reading a request's header block
	// (HERALD_HTTP_HEADER_TIMEOUT). Zero: 10s.
	HTTPHeaderTimeout time.Duration
	// HTTPCapHeaderTimeout: at MaxConns, a connection that has not sent a
	// whole request this long after it opened is closed to make room
	// (HERALD_HTTP_CAP_HEADER_TIMEOUT). Zero: 2s.
	HTTPCapHeaderTimeout time.Duration
	// InboxOrigins are the origins whose pages may call the inbox's
	// subscriber routes (HERALD_INBOX_ORIGINS, flag --inbox-origins:
	// comma-separated scheme://host[:port] values, or "*" for any). Zero:
	// none.
	InboxOrigins []string
	// InboxTokenTTL is how long a minted inbox token is accepted. Zero:
	// 24h (CONTRACT §13). Not configurable from the environment: a test
	// knob, like FanoutBackstop.
	InboxTokenTTL time.Duration
	// InboxHeartbeat is how often an idle inbox stream writes a comment
	// line. Zero: 15s (CONTRACT §13). A test knob, like InboxTokenTTL.
	InboxHeartbeat time.Duration
	// InternalAddr, when set, is the address of a listener of its own for
	// the internal routes (POST /v1/deliver), which HTTPAddr then does not
	// serve (HERALD_INTERNAL_ADDR). Zero: HTTPAddr serves them.
	InternalAddr string
	// PublicURL is the base URL at which users' browsers and mailbox
	// providers reach this service (HERALD_PUBLIC_URL, --public-url), an
	// absolute http(s) URL with no query or fragment. When set, emails of
	// non-critical workflows carry List-Unsubscribe and Bridges receive
	// links (CONTRACT §12). Zero: neither.
	PublicURL string
}

// Embedded reports whether the process runs its own NATS server.
func (c Config) Embedded() bool { return len(c.NATSURLs) == 0 }

// Flags are the command-line values of `herald serve`; an empty value (or
// zero) means "not given".
type Flags struct {
	HTTPAddr, DataDir, NATSURL, NATSCreds, Sync, PublicURL string
	Replicas                                               int
	// InboxOrigins is --inbox-origins (HERALD_INBOX_ORIGINS).
	InboxOrigins string
}

// LoadConfig builds a Config from the environment and flags and validates
// it, reporting every problem at once.
func LoadConfig(env func(string) string, f Flags) (Config, error) {
	var errs []error
	pick := func(flag, name, def string) string {
		if flag != "" {
			return flag
		}
		if v := strings.TrimSpace(env(name)); v != "" {
			return v
		}
		return def
	}
	c := Config{
		HTTPAddr:  pick(f.HTTPAddr, "HERALD_HTTP_ADDR", "127.0.0.1:8080"),
		DataDir:   pick(f.DataDir, "HERALD_DATA_DIR", "./herald-data"),
		NATSCreds: pick(f.NATSCreds, "HERALD_NATS_CREDS", ""),
		Sync:      pick(f.Sync, "HERALD_SYNC", SyncInterval),
		Env:       env,
	}
	for _, u := range strings.Split(pick(f.NATSURL, "HERALD_NATS_URL", ""), ",") {
		if u = strings.TrimSpace(u); u != "" {
			c.NATSURLs = append(c.NATSURLs, u)
		}
	}
	for _, o := range strings.Split(pick(f.InboxOrigins, "HERALD_INBOX_ORIGINS", ""), ",") {
		if o = strings.TrimSpace(o); o != "" {
			// Browsers send origins in lower case.
			c.InboxOrigins = append(c.InboxOrigins, strings.ToLower(strings.TrimSuffix(o, "/")))
		}
	}
	c.Replicas = f.Replicas
	if c.Replicas == 0 {
		n, err := strconv.Atoi(pick("", "HERALD_REPLICAS", "1"))
		if err != nil {
			errs = append(errs, fmt.Errorf("HERALD_REPLICAS: %q is not an integer", env("HERALD_REPLICAS")))
		}
		c.Replicas = n
	}
	var err error
	if c.RetryBase, err = time.ParseDuration(pick("", "HERALD_RETRY_BASE", "1s")); err != nil {
		errs = append(errs, fmt.Errorf("HERALD_RETRY_BASE: %w", err))
	}
	if c.WebhookRetryBase, err = time.ParseDuration(pick("", "HERALD_WEBHOOK_RETRY_BASE", "5s")); err != nil {
		errs = append(errs, fmt.Errorf("HERALD_WEBHOOK_RETRY_BASE: %w", err))
	}
	if c.MaxAttempts, err = strconv.Atoi(pick("", "HERALD_MAX_ATTEMPTS", "8")); err != nil {
		errs = append(errs, fmt.Errorf("HERALD_MAX_ATTEMPTS: %q is not an integer", env("HERALD_MAX_ATTEMPTS")))
	}
	if c.Workers, err = strconv.Atoi(pick("", "HERALD_WORKERS", "128")); err != nil {
		errs = append(errs, fmt.Errorf("HERALD_WORKERS: %q is not an integer", env("HERALD_WORKERS")))
	} else if c.Workers == 0 {
		errs = append(errs, errors.New("HERALD_WORKERS: must be from 1 to 4096"))
	}
	c.InternalAddr = pick("", "HERALD_INTERNAL_ADDR", "")
	c.PublicURL = strings.TrimRight(pick(f.PublicURL, "HERALD_PUBLIC_URL", ""), "/")
	if c.MaxConns, err = strconv.Atoi(pick("", "HERALD_MAX_CONNS", "4096")); err != nil {
		errs = append(errs, fmt.Errorf("HERALD_MAX_CONNS: %q is not an integer", env("HERALD_MAX_CONNS")))
	} else if c.MaxConns == 0 {
		errs = append(errs, errors.New("HERALD_MAX_CONNS: must be at least 1"))
	}
	for _, d := range []struct {
		name, def string
		dst       *time.Duration
	}{
		{"HERALD_HTTP_READ_TIMEOUT", "60s", &c.HTTPReadTimeout},
		{"HERALD_HTTP_WRITE_TIMEOUT", "5m", &c.HTTPWriteTimeout},
		{"HERALD_HTTP_IDLE_TIMEOUT", "120s", &c.HTTPIdleTimeout},
		{"HERALD_HTTP_HEADER_TIMEOUT", "10s", &c.HTTPHeaderTimeout},
		{"HERALD_HTTP_CAP_HEADER_TIMEOUT", "2s", &c.HTTPCapHeaderTimeout},
	} {
		if *d.dst, err = time.ParseDuration(pick("", d.name, d.def)); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", d.name, err))
		} else if *d.dst == 0 {
			errs = append(errs, fmt.Errorf("%s: must be positive", d.name))
		}
	}
	if c.RunRetention, err = time.ParseDuration(pick("", "HERALD_RUN_RETENTION", "720h")); err != nil {
		errs = append(errs, fmt.Errorf("HERALD_RUN_RETENTION: %w", err))
	} else if c.RunRetention < 0 {
		errs = append(errs, errors.New("HERALD_RUN_RETENTION: must not be negative (0 keeps every run)"))
	}
	cronMin := "1s"
	if !c.Embedded() {
		cronMin = "1m"
	}
	if c.CronMinInterval, err = time.ParseDuration(pick("", "HERALD_CRON_MIN_INTERVAL", cronMin)); err != nil {
		errs = append(errs, fmt.Errorf("HERALD_CRON_MIN_INTERVAL: %w", err))
	}
	if c.CacheMiB, err = strconv.Atoi(pick("", "HERALD_CACHE_MIB", "256")); err != nil {
		errs = append(errs, fmt.Errorf("HERALD_CACHE_MIB: %q is not an integer", env("HERALD_CACHE_MIB")))
	}
	if c.AllowPrivateEgress, err = strconv.ParseBool(pick("", "HERALD_ALLOW_PRIVATE_EGRESS", strconv.FormatBool(c.Embedded()))); err != nil {
		errs = append(errs, fmt.Errorf("HERALD_ALLOW_PRIVATE_EGRESS: %q is not true or false", env("HERALD_ALLOW_PRIVATE_EGRESS")))
	}
	if v := pick("", "HERALD_TENANT_CONCURRENCY", ""); v != "" {
		if c.TenantConcurrency, err = strconv.Atoi(v); err != nil {
			errs = append(errs, fmt.Errorf("HERALD_TENANT_CONCURRENCY: %q is not an integer", v))
		} else if c.TenantConcurrency == 0 {
			errs = append(errs, errors.New("HERALD_TENANT_CONCURRENCY: must be from 1 to 4096 (unset: half of HERALD_WORKERS)"))
		}
	}
	if c.RateLimit, err = strconv.ParseFloat(pick("", "HERALD_RATE_LIMIT", "200"), 64); err != nil {
		errs = append(errs, fmt.Errorf("HERALD_RATE_LIMIT: %q is not a number", env("HERALD_RATE_LIMIT")))
	}
	if c.InboundRate, err = strconv.ParseFloat(pick("", "HERALD_INBOUND_RATE", "100"), 64); err != nil {
		errs = append(errs, fmt.Errorf("HERALD_INBOUND_RATE: %q is not a number", env("HERALD_INBOUND_RATE")))
	}
	if err := c.Validate(); err != nil {
		errs = append(errs, err)
	}
	return c, errors.Join(errs...)
}

// Validate reports every problem of the configuration at once.
func (c Config) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
		errs = append(errs, fmt.Errorf("HERALD_HTTP_ADDR: %q is not host:port", c.HTTPAddr))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("HERALD_DATA_DIR: must not be empty"))
	}
	if c.Replicas < 1 || c.Replicas > 5 {
		errs = append(errs, fmt.Errorf("HERALD_REPLICAS: %d is not from 1 to 5", c.Replicas))
	}
	if c.Embedded() && c.Replicas > 1 {
		errs = append(errs, errors.New("HERALD_REPLICAS: more than 1 needs HERALD_NATS_URL (a cluster)"))
	}
	if c.Sync != SyncInterval && c.Sync != SyncAlways {
		errs = append(errs, fmt.Errorf("HERALD_SYNC: %q is neither %q nor %q", c.Sync, SyncInterval, SyncAlways))
	}
	if c.RetryBase <= 0 {
		errs = append(errs, errors.New("HERALD_RETRY_BASE: must be positive"))
	}
	if c.WebhookRetryBase <= 0 || c.WebhookRetryBase > time.Hour {
		errs = append(errs, errors.New("HERALD_WEBHOOK_RETRY_BASE: must be positive and at most 1h"))
	}
	if c.MaxAttempts < 1 {
		errs = append(errs, errors.New("HERALD_MAX_ATTEMPTS: must be at least 1"))
	}
	if c.Workers < 0 || c.Workers > 4096 { // zero: the engine's default
		errs = append(errs, fmt.Errorf("HERALD_WORKERS: %d is not from 1 to 4096", c.Workers))
	}
	if _, _, err := net.SplitHostPort(c.InternalAddr); c.InternalAddr != "" && err != nil {
		errs = append(errs, fmt.Errorf("HERALD_INTERNAL_ADDR: %q is not host:port", c.InternalAddr))
	}
	if err := checkPublicURL(c.PublicURL); err != nil {
		errs = append(errs, err)
	}
	if c.MaxConns < 0 {
		errs = append(errs, fmt.Errorf("HERALD_MAX_CONNS: %d is not at least 1", c.MaxConns))
	}
	if c.HTTPReadTimeout < 0 || c.HTTPWriteTimeout < 0 || c.HTTPIdleTimeout < 0 || c.HTTPHeaderTimeout < 0 || c.HTTPCapHeaderTimeout < 0 {
		errs = append(errs, errors.New("HERALD_HTTP_READ_TIMEOUT, HERALD_HTTP_WRITE_TIMEOUT, HERALD_HTTP_IDLE_TIMEOUT, "+
			"HERALD_HTTP_HEADER_TIMEOUT, HERALD_HTTP_CAP_HEADER_TIMEOUT: must be positive"))
	}
	if c.CacheMiB < 0 || c.CacheMiB > 1<<20 { // zero: the engine's default
		errs = append(errs, fmt.Errorf("HERALD_CACHE_MIB: %d is not from 1 to %d", c.CacheMiB, 1<<20))
	}
	if c.CronMinInterval < 0 {
		errs = append(errs, errors.New("HERALD_CRON_MIN_INTERVAL: must not be negative"))
	}
	if c.TenantConcurrency < 0 || c.TenantConcurrency > 4096 { // zero: the engine's default
		errs = append(errs, fmt.Errorf("HERALD_TENANT_CONCURRENCY: %d is not from 1 to 4096", c.TenantConcurrency))
	}
	if !(c.RateLimit >= 0 && c.RateLimit <= 1e6) { // NaN fails too
		errs = append(errs, fmt.Errorf("HERALD_RATE_LIMIT: %v is not from 0 (off) to 1000000 requests per second", c.RateLimit))
	}
	if !(c.InboundRate >= 0 && c.InboundRate <= 1e6) {
		errs = append(errs, fmt.Errorf("HERALD_INBOUND_RATE: %v is not from 0 (off) to 1000000 requests per second", c.InboundRate))
	}
	for _, o := range c.InboxOrigins {
		if !validOrigin(o) {
			errs = append(errs, fmt.Errorf("HERALD_INBOX_ORIGINS: %q is neither * nor an origin (scheme://host[:port])", o))
		}
	}
	if c.Env != nil {
		if v := strings.TrimSpace(c.Env(secrets.EnvMasterKey)); v != "" {
			if _, err := secrets.ParseKey(v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", secrets.EnvMasterKey, err))
			}
		} else if !c.Embedded() {
			errs = append(errs, fmt.Errorf("%s: required with HERALD_NATS_URL (every process must share it)", secrets.EnvMasterKey))
		}
	}
	return errors.Join(errs...)
}

// checkPublicURL reports what is wrong with a HERALD_PUBLIC_URL ("" is
// allowed: none).
func checkPublicURL(v string) error {
	if v == "" {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(v, " <>\"\r\n") {
		return fmt.Errorf("HERALD_PUBLIC_URL: %q is not an absolute http(s) URL without query or fragment", v)
	}
	return nil
}

// validOrigin reports whether o is "*" or a browser origin: an http or
// https URL with a host and nothing after it.
func validOrigin(o string) bool {
	if o == "*" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" &&
		u.Path == "" && u.RawQuery == "" && u.Fragment == "" && u.User == nil
}
