package chaos

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/consumer"
	"github.com/onceledger/onceledger/outbox"
)

// natsClusterName is the cluster name every node of a cluster shares.
const natsClusterName = "onceledger-chaos"

// natsServers is the NATS of a run: one server, or the nodes of a
// JetStream cluster on 127.0.0.1, each with its own name, ports and store,
// all with the shipped configuration and the same passwords.
type natsServers struct {
	nodes []*natsd
	// faultMu holds one node fault at a time: a cluster of three keeps
	// its quorum through the loss of one node, and the faults are about
	// that loss, not about an outage.
	faultMu sync.Mutex
}

// newNATSServers prepares n servers (not started) under workDir, their
// logs in logDir.
func newNATSServers(bin, workDir, logDir string, n int) (*natsServers, error) {
	passwords := map[string]string{}
	for user := range natsUsers {
		b := make([]byte, 12)
		_, _ = rand.Read(b)
		passwords[user] = hex.EncodeToString(b)
	}
	s := &natsServers{}
	for i := range n {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		node := &natsd{bin: bin, port: port, passwords: passwords, name: "chaos-nats",
			store: filepath.Join(workDir, "nats")}
		logName := "natsd.log"
		if n > 1 {
			node.name = fmt.Sprintf("chaos-nats-%d", i+1)
			node.store = filepath.Join(workDir, "nats", node.name)
			logName = fmt.Sprintf("natsd-%d.log", i+1)
			node.clusterName = natsClusterName
			if node.clusterPort, err = freePort(); err != nil {
				return nil, err
			}
		}
		if node.log, err = os.OpenFile(filepath.Join(logDir, logName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			return nil, err
		}
		s.nodes = append(s.nodes, node)
	}
	for _, node := range s.nodes {
		for _, other := range s.nodes {
			if other != node {
				node.routes = append(node.routes, fmt.Sprintf("nats-route://127.0.0.1:%d", other.clusterPort))
			}
		}
	}
	return s, nil
}

func (s *natsServers) clustered() bool { return len(s.nodes) > 1 }

// url is every server's URL with user's credentials, comma-separated, as
// the clients take a list of servers.
func (s *natsServers) url(user string) string {
	urls := make([]string, len(s.nodes))
	for i, n := range s.nodes {
		urls[i] = n.url(user)
	}
	return strings.Join(urls, ",")
}

func (s *natsServers) start() error {
	for _, n := range s.nodes {
		if err := n.start(); err != nil {
			return err
		}
	}
	return nil
}

func (s *natsServers) close() {
	var wg sync.WaitGroup
	for _, n := range s.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.close()
		}()
	}
	wg.Wait()
}

// byName returns the node named name.
func (s *natsServers) byName(name string) (int, bool) {
	for i, n := range s.nodes {
		if n.name == name {
			return i, true
		}
	}
	return 0, false
}

// byPort returns the node whose client port is port.
func (s *natsServers) byPort(port int) (int, bool) {
	for i, n := range s.nodes {
		if n.port == port {
			return i, true
		}
	}
	return 0, false
}

// attempt runs fn with a short timeout until it succeeds or ctx ends: a
// JetStream API request made while the cluster has no meta leader (or a
// stream no leader) may go unanswered.
func attempt(ctx context.Context, fn func(ctx context.Context) error) error {
	for {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := fn(actx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// connectAdmin connects as the operator's user, which may use the
// JetStream API.
func (s *natsServers) connectAdmin(name string) (*nats.Conn, jetstream.JetStream, error) {
	nc, err := nats.Connect(s.url("admin"), nats.Name(name), nats.MaxReconnects(-1),
		nats.ReconnectWait(200*time.Millisecond), nats.RetryOnFailedConnect(true))
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}

// waitMetaLeader waits until the cluster's JetStream answers API requests,
// which needs a meta leader.
func waitMetaLeader(ctx context.Context, js jetstream.JetStream) error {
	err := attempt(ctx, func(ctx context.Context) error {
		_, err := js.AccountInfo(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("the NATS cluster has no JetStream meta leader: %w", err)
	}
	return nil
}

// checkedStreams are the streams the workers create: the commands', the
// dead letters' and the events'.
var checkedStreams = []string{consumer.DefaultStream, consumer.DefaultDeadLetterStream, outbox.StreamName}

// streamsReplicated checks, once, that every stream exists with replicas
// replicas, has a leader and every other replica current, and returns the
// leaders by stream.
func streamsReplicated(ctx context.Context, js jetstream.JetStream, replicas int) (map[string]string, error) {
	leaders := map[string]string{}
	for _, name := range checkedStreams {
		st, err := js.Stream(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("stream %s: %w", name, err)
		}
		info, err := st.Info(ctx)
		if err != nil {
			return nil, fmt.Errorf("stream %s: %w", name, err)
		}
		if info.Config.Replicas != replicas {
			return nil, fmt.Errorf("stream %s has %d replicas, want %d", name, info.Config.Replicas, replicas)
		}
		if replicas == 1 {
			continue
		}
		if info.Cluster == nil || info.Cluster.Leader == "" {
			return nil, fmt.Errorf("stream %s has no leader", name)
		}
		if len(info.Cluster.Replicas) != replicas-1 {
			return nil, fmt.Errorf("stream %s: leader %s and %d other replicas, want %d", name, info.Cluster.Leader, len(info.Cluster.Replicas), replicas-1)
		}
		for _, p := range info.Cluster.Replicas {
			if !p.Current || p.Offline {
				return nil, fmt.Errorf("stream %s: replica %s is not current", name, p.Name)
			}
		}
		leaders[name] = info.Cluster.Leader
	}
	return leaders, nil
}

// waitReplicated waits until streamsReplicated holds.
func waitReplicated(ctx context.Context, js jetstream.JetStream, replicas int) (map[string]string, error) {
	var leaders map[string]string
	err := attempt(ctx, func(ctx context.Context) error {
		var err error
		leaders, err = streamsReplicated(ctx, js, replicas)
		return err
	})
	return leaders, err
}

// streamLeader returns the node that leads stream.
func (s *natsServers) streamLeader(ctx context.Context, js jetstream.JetStream, stream string) (int, string, error) {
	var leader string
	err := attempt(ctx, func(ctx context.Context) error {
		st, err := js.Stream(ctx, stream)
		if err != nil {
			return err
		}
		info, err := st.Info(ctx)
		if err != nil {
			return err
		}
		if info.Cluster == nil || info.Cluster.Leader == "" {
			return errors.New("no leader")
		}
		leader = info.Cluster.Leader
		return nil
	})
	if err != nil {
		return 0, "", fmt.Errorf("leader of %s: %w", stream, err)
	}
	i, ok := s.byName(leader)
	if !ok {
		return 0, "", fmt.Errorf("leader of %s is %q, which is no node of the suite's", stream, leader)
	}
	return i, leader, nil
}

// connectedPorts returns the remote ports of pid's established TCP
// connections to 127.0.0.1, read from /proc: which server a process is
// connected to, seen from outside it.
func connectedPorts(pid int) ([]int, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/net/tcp", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ports []int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[3] != "01" || !inodes[fields[9]] {
			continue
		}
		host, port, ok := strings.Cut(fields[2], ":")
		if !ok || host != "0100007F" {
			continue
		}
		if p, err := strconv.ParseUint(port, 16, 16); err == nil {
			ports = append(ports, int(p))
		}
	}
	return ports, sc.Err()
}

// connectedNode returns the node pid is connected to, if one.
func (s *natsServers) connectedNode(pid int) (int, bool) {
	ports, err := connectedPorts(pid)
	if err != nil {
		return 0, false
	}
	for _, p := range ports {
		if i, ok := s.byPort(p); ok {
			return i, true
		}
	}
	return 0, false
}
