package testenv

import (
	"testing"

	"github.com/onceledger/onceledger/internal/natsserver"
)

// NATSCluster starts a JetStream cluster of n embedded servers named
// <name>-0 ... <name>-<n-1>, routed to each other on 127.0.0.1, stopped when
// the test ends. It returns once the cluster has a meta leader: before
// that, a JetStream API request may go unanswered until its timeout.
func NATSCluster(t testing.TB, name string, n int) []*natsserver.Server {
	t.Helper()
	nodes, err := natsserver.StartCluster(natsserver.ClusterConfig{Name: name, Nodes: n, Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	for _, srv := range nodes {
		t.Cleanup(srv.Shutdown)
	}
	return nodes
}
