package jsstream

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The JetStream API's error codes for replicas the servers cannot place.
const (
	// codeNoPeers is "no suitable peers for placement": the cluster has
	// fewer servers able to hold the stream than its replicas.
	codeNoPeers jetstream.ErrorCode = 10005
	// codeNotClustered is "replicas > 1 not supported in non-clustered
	// mode": a single server.
	codeNotClustered jetstream.ErrorCode = 10074
)

// ReplicasError is Ensure's error when the servers refuse a stream its
// replicas: it names the count asked for and, where it is known, the size of
// the cluster asked.
type ReplicasError struct {
	// Replicas is the count asked for.
	Replicas int
	// Clustered is false when the server is not part of a JetStream
	// cluster.
	Clustered bool
	// Cluster is the name of the cluster of the server the request went
	// to.
	Cluster string
	// Servers is the number of servers of the cluster that are up, as the
	// server the worker is connected to lists them to its clients; 0 when
	// it lists none (a cluster with no_advertise), and then the message
	// gives the server's own words instead.
	Servers int
	// Err is the server's refusal.
	Err error
}

func (e *ReplicasError) Error() string {
	switch {
	case !e.Clustered:
		return fmt.Sprintf("%d replicas need a JetStream cluster of at least %d servers; the server is not part of a cluster", e.Replicas, e.Replicas)
	case e.Servers > 0 && e.Servers < e.Replicas:
		return fmt.Sprintf("%d replicas need a JetStream cluster of at least %d servers; the cluster %q has %d", e.Replicas, e.Replicas, e.Cluster, e.Servers)
	default:
		reason := e.Err.Error()
		var apiErr *jetstream.APIError
		if errors.As(e.Err, &apiErr) && apiErr.Description != "" {
			reason = apiErr.Description
		}
		return fmt.Sprintf("the cluster %q could not place %d replicas: %s", e.Cluster, e.Replicas, reason)
	}
}

func (e *ReplicasError) Unwrap() error { return e.Err }

// explainReplicas turns the server's refusal of want.Replicas into a
// ReplicasError, and returns any other error as it is.
//
// The size of the cluster is learned from the INFO line a server sends to
// every client that connects: its connect_urls list the client address of
// every server of the cluster that is routed to it right now (the one
// connected to included). The JetStream API, which the worker may use, has
// no request that lists the cluster's servers (that needs the system
// account), and nats.Conn's server pool mixes the addresses it was given
// (nats-1:4222) with those the servers advertise (172.18.0.3:4222), which
// would count a server twice. So a second, plain connection reads the
// INFO of the server the worker is connected to, and closes without
// logging in. Where that INFO lists no server (no_advertise), or cannot be
// read (TLS before INFO, a websocket), the size is unknown and the error
// says what was asked and the server's words.
func explainReplicas(ctx context.Context, nc *nats.Conn, want jetstream.StreamConfig, err error) error {
	var apiErr *jetstream.APIError
	if want.Replicas <= 1 || !errors.As(err, &apiErr) {
		return err
	}
	switch apiErr.ErrorCode {
	case codeNotClustered:
		return &ReplicasError{Replicas: want.Replicas, Err: err}
	case codeNoPeers:
		e := &ReplicasError{Replicas: want.Replicas, Clustered: true, Err: err}
		if nc != nil {
			e.Cluster = nc.ConnectedClusterName()
			if addr := nc.ConnectedAddr(); addr != "" {
				e.Servers, _ = clusterServers(ctx, addr)
			}
		}
		return e
	}
	return err
}

// clusterServers counts the distinct client addresses in the INFO of the
// server at addr.
func clusterServers(ctx context.Context, addr string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	if err := conn.SetReadDeadline(deadline); err != nil {
		return 0, err
	}
	line, err := bufio.NewReaderSize(conn, 64<<10).ReadString('\n')
	if err != nil {
		return 0, err
	}
	body, ok := strings.CutPrefix(line, "INFO ")
	if !ok {
		return 0, fmt.Errorf("%s did not begin with INFO", addr)
	}
	var info struct {
		ConnectURLs []string `json:"connect_urls"`
	}
	if err := json.Unmarshal([]byte(body), &info); err != nil {
		return 0, err
	}
	seen := map[string]bool{}
	for _, u := range info.ConnectURLs {
		seen[u] = true
	}
	return len(seen), nil
}
