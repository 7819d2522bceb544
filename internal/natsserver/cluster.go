package natsserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ClusterConfig configures a JetStream cluster of embedded servers on one
// host, for tests and the benchmark.
type ClusterConfig struct {
	// Name is the cluster's name; node i is the server <Name>-<i>.
	Name string
	// Nodes is how many servers; 3 unless set.
	Nodes int
	// Dir holds each node's store, in <Dir>/<server name>. Required.
	Dir string
	// SyncAlways, Host and Logger are each node's (see Config).
	SyncAlways bool
	Host       string
	// Ready bounds the wait for the cluster's JetStream meta leader;
	// a minute unless set.
	Ready time.Duration
}

// StartCluster starts cfg.Nodes servers routed to each other on free
// ports and returns once the cluster has a JetStream meta leader: before
// that, a JetStream API request may go unanswered until its timeout. On
// error, the servers started are shut down.
func StartCluster(cfg ClusterConfig) (nodes []*Server, err error) {
	if cfg.Dir == "" {
		return nil, errors.New("natsserver: ClusterConfig.Dir is required")
	}
	if cfg.Nodes == 0 {
		cfg.Nodes = 3
	}
	if cfg.Host == "" {
		cfg.Host = "127.0.0.1"
	}
	if cfg.Ready == 0 {
		cfg.Ready = time.Minute
	}
	ports := make([]int, cfg.Nodes)
	routes := make([]string, cfg.Nodes)
	for i := range ports {
		l, err := net.Listen("tcp", net.JoinHostPort(cfg.Host, "0"))
		if err != nil {
			return nil, fmt.Errorf("natsserver: a route port: %w", err)
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		l.Close()
		routes[i] = fmt.Sprintf("nats-route://%s", net.JoinHostPort(cfg.Host, fmt.Sprint(ports[i])))
	}
	defer func() {
		if err != nil {
			for _, n := range nodes {
				n.Shutdown()
			}
			nodes = nil
		}
	}()
	for i := range cfg.Nodes {
		name := fmt.Sprintf("%s-%d", cfg.Name, i)
		srv, err := Start(Config{Host: cfg.Host, StoreDir: filepath.Join(cfg.Dir, name), ServerName: name, SyncAlways: cfg.SyncAlways,
			Cluster: Cluster{Name: cfg.Name, Port: ports[i], Routes: routes}})
		if err != nil {
			return nodes, fmt.Errorf("natsserver: start node %d of cluster %s: %w", i, cfg.Name, err)
		}
		nodes = append(nodes, srv)
	}
	return nodes, waitMetaLeader(nodes[0].ClientURL(), cfg.Name, cfg.Ready)
}

// ClusterURL lists the client URLs of nodes, comma-separated, as a
// client's server list.
func ClusterURL(nodes []*Server) string {
	urls := make([]string, len(nodes))
	for i, n := range nodes {
		urls[i] = n.ClientURL()
	}
	return strings.Join(urls, ",")
}

// waitMetaLeader waits until the cluster answers the account's JetStream
// information, which its meta leader does.
func waitMetaLeader(url, name string, within time.Duration) error {
	nc, err := nats.Connect(url)
	if err != nil {
		return fmt.Errorf("natsserver: connect to cluster %s: %w", name, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := js.AccountInfo(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("natsserver: cluster %s has no JetStream meta leader after %s: %w", name, within, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
