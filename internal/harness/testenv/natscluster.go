package testenv

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/internal/natsserver"
)

// NATSCluster starts a JetStream cluster of n embedded servers named
// <name>-0 ... <name>-<n-1>, routed to each other on 127.0.0.1, stopped when
// the test ends. It returns once the cluster has a meta leader: before
// that, a JetStream API request may go unanswered until its timeout.
func NATSCluster(t testing.TB, name string, n int) []*natsserver.Server {
	t.Helper()
	ports := make([]int, n)
	routes := make([]string, n)
	for i := range ports {
		p, err := freePort()
		if err != nil {
			t.Fatalf("testenv: a route port: %v", err)
		}
		ports[i], routes[i] = p, fmt.Sprintf("nats-route://127.0.0.1:%d", p)
	}
	nodes := make([]*natsserver.Server, n)
	for i := range nodes {
		srv, err := natsserver.Start(natsserver.Config{StoreDir: t.TempDir(), ServerName: fmt.Sprintf("%s-%d", name, i),
			Cluster: natsserver.Cluster{Name: name, Port: ports[i], Routes: routes}})
		if err != nil {
			t.Fatalf("testenv: start NATS cluster node %d: %v", i, err)
		}
		t.Cleanup(srv.Shutdown)
		nodes[i] = srv
	}
	nc, err := nats.Connect(nodes[0].ClientURL())
	if err != nil {
		t.Fatalf("testenv: connect to the NATS cluster: %v", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// The meta leader answers the account's JetStream information.
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := js.AccountInfo(ctx)
		cancel()
		if err == nil {
			return nodes
		}
		if time.Now().After(deadline) {
			t.Fatalf("testenv: the NATS cluster %s has no JetStream meta leader after a minute: %v", name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
