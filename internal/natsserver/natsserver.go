package natsserver

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

const readyTimeout = 10 * time.Second

// Config describes the embedded server.
type Config struct {
	// Host to listen on; empty means 127.0.0.1.
	Host string
	// Port for clients; 0 picks a free port.
	Port int
	// StoreDir holds JetStream data. Required.
	StoreDir string
	// ServerName is the server's name; empty lets the server use its ID.
	ServerName string
	// Logger receives the server's log; nil silences it.
	Logger *slog.Logger
	// SyncAlways fsyncs every JetStream write before acknowledging it
	// (sync_interval: always). The server's default syncs every two minutes,
	// so an acknowledged publish can be lost on power loss.
	SyncAlways bool
	// Cluster, when its Port is set, makes the server a node of a JetStream
	// cluster: it listens for routes on 127.0.0.1:Port and dials Routes.
	Cluster Cluster
	// ConfigFile, when set, is a nats-server configuration file the server
	// starts from: its users, permissions, accounts and TLS apply, so tests
	// run against the configuration that is shipped. Host, Port, StoreDir,
	// ServerName (when set) and Cluster above still win, SyncAlways adds to
	// the file's sync_interval, and the file's monitoring port is not
	// opened, so that servers of parallel tests do not clash.
	ConfigFile string
}

// Cluster configures clustering.
type Cluster struct {
	Name   string   // the same on every node
	Port   int      // route port on Host
	Routes []string // nats-route://host:port of the other nodes
}

// Server is a running embedded NATS server with JetStream.
type Server struct {
	ns  *server.Server
	cfg Config
}

// Start launches the server and waits until it accepts connections.
func Start(cfg Config) (*Server, error) {
	if cfg.StoreDir == "" {
		return nil, errors.New("natsserver: Config.StoreDir is required for JetStream")
	}
	if cfg.Host == "" {
		cfg.Host = "127.0.0.1"
	}
	port := cfg.Port
	switch {
	case port == 0:
		port = server.RANDOM_PORT
	case port > 0:
		// The server only reports a taken port through its logger, after
		// which it would sit there unready; probing first gives a direct,
		// clear error.
		if err := probePort(cfg.Host, port); err != nil {
			return nil, err
		}
	}

	opts := &server.Options{}
	if cfg.ConfigFile != "" {
		var err error
		if opts, err = server.ProcessConfigFile(cfg.ConfigFile); err != nil {
			return nil, fmt.Errorf("natsserver: %w", err)
		}
		opts.HTTPPort, opts.HTTPSPort = 0, 0
	}
	if cfg.ServerName != "" || cfg.ConfigFile == "" {
		opts.ServerName = cfg.ServerName
	}
	opts.Host, opts.Port = cfg.Host, port
	opts.JetStream, opts.StoreDir = true, cfg.StoreDir
	opts.SyncAlways = opts.SyncAlways || cfg.SyncAlways
	// Signal handling belongs to the embedding program, not the library.
	opts.NoSigs = true
	if cfg.Cluster.Port > 0 {
		opts.Cluster = server.ClusterOpts{Name: cfg.Cluster.Name, Host: cfg.Host, Port: cfg.Cluster.Port}
		for _, r := range cfg.Cluster.Routes {
			u, err := url.Parse(r)
			if err != nil {
				return nil, fmt.Errorf("natsserver: route %q: %w", r, err)
			}
			opts.Routes = append(opts.Routes, u)
		}
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("natsserver: configure server: %w", err)
	}
	logs := newLogAdapter(cfg.Logger)
	ns.SetLoggerV2(logs, logs.enabled(slog.LevelDebug), logs.enabled(levelTrace), false)

	go ns.Start()

	if err := waitReady(ns, logs, cfg.Host, cfg.Port); err != nil {
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil, err
	}
	addr, ok := ns.Addr().(*net.TCPAddr)
	if !ok {
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil, fmt.Errorf("natsserver: server has no TCP listener")
	}
	cfg.Port = addr.Port
	return &Server{ns: ns, cfg: cfg}, nil
}

// ClientURL is the nats:// URL clients connect to.
func (s *Server) ClientURL() string {
	return s.ns.ClientURL()
}

// Config returns the configuration in effect, with the actual port, so a
// test can shut the server down and Start it again on the same port and
// store directory.
func (s *Server) Config() Config {
	return s.cfg
}

// Shutdown stops the server and waits until it has fully stopped. It is safe
// to call more than once.
func (s *Server) Shutdown() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
}

func waitReady(ns *server.Server, logs *logAdapter, host string, port int) error {
	deadline := time.Now().Add(readyTimeout)
	for time.Now().Before(deadline) {
		if fatal, ok := logs.fatalMessage(); ok {
			return startError(host, port, fatal)
		}
		if ns.ReadyForConnections(50 * time.Millisecond) {
			if !ns.JetStreamEnabled() {
				if fatal, ok := logs.fatalMessage(); ok {
					return startError(host, port, fatal)
				}
				return errors.New("natsserver: server started without JetStream")
			}
			return nil
		}
	}
	if fatal, ok := logs.fatalMessage(); ok {
		return startError(host, port, fatal)
	}
	return fmt.Errorf("natsserver: server on %s not ready for connections after %s", net.JoinHostPort(host, strconv.Itoa(port)), readyTimeout)
}

func startError(host string, port int, fatal string) error {
	if strings.Contains(fatal, "address already in use") {
		return fmt.Errorf("natsserver: port %d on %s is already in use: %s", port, host, fatal)
	}
	return fmt.Errorf("natsserver: server failed to start: %s", fatal)
}

func probePort(host string, port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("natsserver: port %d on %s is already in use: %w", port, host, err)
		}
		return fmt.Errorf("natsserver: cannot listen on port %d on %s: %w", port, host, err)
	}
	if err := l.Close(); err != nil {
		return fmt.Errorf("natsserver: release probed port %d: %w", port, err)
	}
	return nil
}
