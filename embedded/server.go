package embedded

import (
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// ErrNotReady is returned by Start when the server did not accept
// connections within Config.ReadyTimeout.
var ErrNotReady = errors.New("embedded: nats server not ready")

// ErrListen is returned by Start, at once, when the server could not
// listen on one of its ports (another process holds it).
var ErrListen = errors.New("embedded: nats server cannot listen")

// Config describes one embedded server. The zero value of each field is
// documented next to it.
type Config struct {
	// StoreDir is the JetStream store directory. Required.
	StoreDir string
	// ServerName names the server; it must be unique inside a cluster.
	// Zero: NATS picks one.
	ServerName string
	// Listen makes the server accept TCP clients on Host:Port.
	// Zero (false): in-process clients only, unless Cluster is set.
	Listen bool
	// Host is the client listen address. Zero: 127.0.0.1.
	Host string
	// Port is the client port. Zero with Listen: a random free port.
	Port int
	// SyncAlways fsyncs every JetStream write before acknowledging it.
	// Zero (false): JetStream's periodic sync.
	SyncAlways bool
	// Cluster, when set, makes the server a member of a route cluster.
	Cluster *Cluster
	// ReadyTimeout bounds the wait for readiness. Zero: 10s.
	ReadyTimeout time.Duration
	// Logs forwards the server's own logs to stderr. Zero (false): silent.
	Logs bool
}

// Cluster places a server into a NATS route cluster.
type Cluster struct {
	// Name is the cluster name, the same on every member. Required.
	Name string
	// Host is the route listen host. Zero: 127.0.0.1.
	Host string
	// Port is the route listen port. Required (routes must be known ahead).
	Port int
	// Routes are the route URLs of the other members, nats-route://host:port.
	Routes []string
}

// Server is a running embedded NATS server.
type Server struct {
	ns *server.Server
}

// Start starts a server and waits until it accepts connections and
// JetStream is enabled.
func Start(cfg Config) (*Server, error) {
	if cfg.StoreDir == "" {
		return nil, errors.New("embedded: StoreDir is required")
	}
	if cfg.ReadyTimeout == 0 {
		cfg.ReadyTimeout = 10 * time.Second
	}
	opts := &server.Options{
		ServerName:         cfg.ServerName,
		JetStream:          true,
		StoreDir:           cfg.StoreDir,
		SyncAlways:         cfg.SyncAlways,
		NoSigs:             true,
		NoLog:              !cfg.Logs,
		MaxPayload:         8 << 20,
		JetStreamMaxMemory: -1,
		JetStreamMaxStore:  -1,
	}
	opts.Host = orDefault(cfg.Host, "127.0.0.1")
	opts.Port = cfg.Port
	if cfg.Listen || cfg.Cluster != nil {
		if cfg.Port == 0 {
			opts.Port = server.RANDOM_PORT
		}
	} else {
		opts.DontListen = true
	}
	if c := cfg.Cluster; c != nil {
		opts.Cluster = server.ClusterOpts{
			Name: c.Name,
			Host: orDefault(c.Host, "127.0.0.1"),
			Port: c.Port,
		}
		for _, r := range c.Routes {
			u, err := url.Parse(r)
			if err != nil {
				return nil, fmt.Errorf("embedded: route %q: %w", r, err)
			}
			opts.Routes = append(opts.Routes, u)
		}
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded: %w", err)
	}
	fatal := &fatalLogger{}
	if cfg.Logs {
		ns.ConfigureLogger()
	} else {
		// The server reports a port it cannot listen on as a fatal log
		// and goes on without the listener: heard here, Start fails at
		// once instead of waiting ReadyTimeout for a listener that never
		// comes.
		ns.SetLoggerV2(fatal, false, false, false)
	}
	go ns.Start()
	deadline := time.Now().Add(cfg.ReadyTimeout)
	for !ns.ReadyForConnections(min(readyPoll, time.Until(deadline))) {
		if msg := fatal.message(); msg != "" {
			ns.Shutdown()
			return nil, fmt.Errorf("%w: %s", ErrListen, msg)
		}
		if !time.Now().Before(deadline) {
			ns.Shutdown()
			return nil, ErrNotReady
		}
	}
	return &Server{ns: ns}, nil
}

// readyPoll is how often Start looks for a fatal log while it waits.
const readyPoll = 100 * time.Millisecond

// fatalLogger keeps the first fatal log of a server whose logs are off,
// and drops the rest.
type fatalLogger struct {
	mu    sync.Mutex
	fatal string
}

func (l *fatalLogger) Fatalf(format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fatal == "" {
		l.fatal = fmt.Sprintf(format, v...)
	}
}

func (l *fatalLogger) message() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fatal
}

func (*fatalLogger) Noticef(string, ...any) {}
func (*fatalLogger) Warnf(string, ...any)   {}
func (*fatalLogger) Errorf(string, ...any)  {}
func (*fatalLogger) Debugf(string, ...any)  {}
func (*fatalLogger) Tracef(string, ...any)  {}

// Connect opens a client connection to the server. Without a listener it is
// an in-process connection. Extra options are applied after the defaults.
func (s *Server) Connect(opts ...nats.Option) (*nats.Conn, error) {
	all := append([]nats.Option{nats.Name("herald"), nats.MaxReconnects(-1)}, opts...)
	if s.ns.ClientURL() == "" || s.ns.Addr() == nil {
		all = append(all, nats.InProcessServer(s.ns))
		return nats.Connect("", all...)
	}
	return nats.Connect(s.ns.ClientURL(), all...)
}

// ClientURL returns the nats:// URL clients can dial, or "" when the server
// does not listen.
func (s *Server) ClientURL() string {
	if s.ns.Addr() == nil {
		return ""
	}
	return s.ns.ClientURL()
}

// Name returns the server name.
func (s *Server) Name() string { return s.ns.Name() }

// JetStreamReady reports whether JetStream is enabled and, in a cluster,
// whether the meta group has a leader.
func (s *Server) JetStreamReady() bool {
	return s.ns.JetStreamEnabled() && s.ns.JetStreamIsCurrent()
}

// Shutdown stops the server and waits until it has stopped. It is safe to
// call more than once.
func (s *Server) Shutdown() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
