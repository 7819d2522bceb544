package composecheck

import (
	"flag"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"
	natsserver "github.com/nats-io/nats-server/v2/server"
)

// The profile of a JetStream cluster of three NATS servers and the worker
// on it.
const clusterProfile = "cluster"

var (
	clusterNodes  = []string{"nats-1", "nats-2", "nats-3"}
	clusterWorker = "worker-cluster"
)

// clusterProject is the compose file with profile "cluster" enabled, in the
// environment of defaultProject. Read-only, as defaultProject.
var clusterProject = sync.OnceValues(func() (*types.Project, error) {
	dir, err := repoRoot()
	if err != nil {
		return nil, err
	}
	return load(dir, filepath.Join(dir, composeFile), nil, map[string]string{"ONCELEDGER_SECRETS_KEY": testSecretsKey}, clusterProfile)
})

func cluster(t *testing.T) *types.Project {
	t.Helper()
	p, err := clusterProject()
	if err != nil {
		t.Fatalf("loading %s with profile %s: %v", composeFile, clusterProfile, err)
	}
	return p
}

// The profile's services are the profile's only: a plain `docker compose
// up` starts what it started before.
func TestClusterProfileIsOptIn(t *testing.T) {
	t.Parallel()
	p := project(t)
	for _, name := range append(slices.Clone(clusterNodes), clusterWorker) {
		if _, ok := p.Services[name]; ok {
			t.Errorf("service %s runs without profile %s", name, clusterProfile)
		}
		s := service(t, cluster(t), name)
		if !slices.Equal(s.Profiles, []string{clusterProfile}) {
			t.Errorf("service %s has profiles %q, want [%s]", name, s.Profiles, clusterProfile)
		}
	}
}

// The rules every service of the default deployment keeps hold for the
// profile's: a health check, pinned images, ports on 127.0.0.1 only, its
// own named volume for each server's store.
func TestClusterProfileServices(t *testing.T) {
	t.Parallel()
	p := cluster(t)
	stores := map[string]string{}
	for _, name := range append(slices.Clone(clusterNodes), clusterWorker) {
		s := service(t, p, name)
		if hc := s.HealthCheck; hc == nil || hc.Disable || len(hc.Test) < 2 {
			t.Errorf("service %s has no health check", name)
		}
		if s.Image != "" {
			if why := checkPinned(s.Image); why != "" {
				t.Errorf("service %s image %q is not pinned: %s", name, s.Image, why)
			}
		}
		for _, port := range s.Ports {
			if port.HostIP != "127.0.0.1" {
				t.Errorf("service %s publishes %d on %q, want 127.0.0.1 only", name, port.Target, port.HostIP)
			}
		}
	}
	for _, name := range clusterNodes {
		for _, v := range service(t, p, name).Volumes {
			if v.Target != "/data" {
				continue
			}
			if v.Type != types.VolumeTypeVolume {
				t.Errorf("%s keeps its store in a %s, want a named volume", name, v.Type)
			}
			if other, ok := stores[v.Source]; ok {
				t.Errorf("%s and %s share the volume %s", name, other, v.Source)
			}
			stores[v.Source] = name
		}
	}
	if len(stores) != len(clusterNodes) {
		t.Errorf("the servers' stores are %v, want one named volume at /data for each of %v", stores, clusterNodes)
	}
}

// clusterNodeOptions parses node's command as nats-server does, its flags
// over the mounted configuration file (read from the repository).
func clusterNodeOptions(t *testing.T, p *types.Project, node string) *natsserver.Options {
	t.Helper()
	s := service(t, p, node)
	if len(s.Command) == 0 || s.Command[0] != "nats-server" {
		t.Fatalf("%s command %q does not run nats-server", node, s.Command)
	}
	args := slices.Clone([]string(s.Command[1:]))
	for _, v := range s.Volumes {
		if v.Target != natsConfTarget {
			continue
		}
		if v.Type != types.VolumeTypeBind || !v.ReadOnly {
			t.Errorf("%s mounts %s as %s (read-only %v), want a read-only bind mount", node, natsConfTarget, v.Type, v.ReadOnly)
		}
		if want := filepath.Join(root(t), "deploy", "nats", "nats-server.conf"); v.Source != want {
			t.Errorf("%s mounts %s as its configuration, want the shipped %s", node, v.Source, want)
		}
		for i, a := range args {
			if a == natsConfTarget {
				args[i] = v.Source
			}
		}
	}
	for k, v := range s.Environment {
		if v != nil {
			t.Setenv(k, *v)
		}
	}
	fs := flag.NewFlagSet("nats-server", flag.ContinueOnError)
	opts, err := natsserver.ConfigureOptions(fs, args, func() {}, func() {}, func() {})
	if err != nil {
		t.Fatalf("nats-server rejects the command of %s (%q): %v", node, s.Command, err)
	}
	return opts
}

// The three servers are one JetStream cluster: one cluster name, a name of
// their own each, each routed to the other two on the port they listen
// for routes on, with the shipped configuration's users and durability.
func TestClusterProfileNodesRouteToEachOther(t *testing.T) {
	p := cluster(t)
	names := map[string]string{}
	clusterNames := map[string]bool{}
	for _, node := range clusterNodes {
		opts := clusterNodeOptions(t, p, node)
		clusterNames[opts.Cluster.Name] = true
		if other, ok := names[opts.ServerName]; ok || opts.ServerName == "" {
			t.Errorf("%s is named %q, as %s is", node, opts.ServerName, other)
		}
		names[opts.ServerName] = node
		if opts.Cluster.Port != 6222 {
			t.Errorf("%s listens for routes on %d, want 6222", node, opts.Cluster.Port)
		}
		routes := map[string]bool{}
		for _, r := range opts.Routes {
			routes[r.Host] = true
		}
		for _, other := range clusterNodes {
			if other != node && !routes[fmt.Sprintf("%s:%d", other, 6222)] {
				t.Errorf("%s has no route to %s:6222 (routes %v)", node, other, opts.Routes)
			}
		}
		if !opts.JetStream || !opts.SyncAlways || opts.StoreDir != "/data" {
			t.Errorf("%s: JetStream %v, sync always %v, store %q; want JetStream syncing every write to /data", node, opts.JetStream, opts.SyncAlways, opts.StoreDir)
		}
		users := map[string]bool{}
		for _, u := range opts.Users {
			users[u.Username] = u.Password != "" && u.Permissions != nil
		}
		for _, u := range []string{"worker", "admin", "acme", "acme-events"} {
			if !users[u] {
				t.Errorf("%s has no user %s with a password and permissions", node, u)
			}
		}
	}
	if len(clusterNames) != 1 || clusterNames[""] {
		t.Errorf("the servers name their cluster %v, want one name", clusterNames)
	}
}

// The profile's worker connects to all three servers as the worker user,
// puts its streams on three of them, and starts once all three are
// healthy.
func TestClusterProfileWorker(t *testing.T) {
	t.Parallel()
	p := cluster(t)
	w := service(t, p, clusterWorker)
	if !slices.Equal(w.Command, types.ShellCommand{"run"}) {
		t.Errorf("%s command %q, want [run]", clusterWorker, w.Command)
	}
	if v := w.Environment["ONCELEDGER_STREAM_REPLICAS"]; v == nil {
		t.Errorf("%s does not set ONCELEDGER_STREAM_REPLICAS, want 3", clusterWorker)
	} else if *v != "3" {
		t.Errorf("%s ONCELEDGER_STREAM_REPLICAS = %q, want 3", clusterWorker, *v)
	}
	natsURL := w.Environment["NATS_URL"]
	if natsURL == nil {
		t.Fatalf("%s has no NATS_URL", clusterWorker)
	}
	var password string
	if pw := service(t, p, clusterNodes[0]).Environment["ONCELEDGER_NATS_WORKER_PASSWORD"]; pw != nil {
		password = *pw
	}
	var hosts []string
	for _, raw := range strings.Split(*natsURL, ",") {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("%s NATS_URL: %v", clusterWorker, err)
		}
		if pw, _ := u.User.Password(); u.User.Username() != "worker" || pw != password {
			t.Errorf("%s NATS_URL %s: not the worker user with the servers' worker password", clusterWorker, u.Redacted())
		}
		hosts = append(hosts, u.Host)
	}
	if want := []string{"nats-1:4222", "nats-2:4222", "nats-3:4222"}; !slices.Equal(hosts, want) {
		t.Errorf("%s connects to %v, want %v", clusterWorker, hosts, want)
	}
	for _, dep := range append(slices.Clone(clusterNodes), "postgres") {
		if d, ok := w.DependsOn[dep]; !ok || d.Condition != types.ServiceConditionHealthy {
			t.Errorf("%s does not wait for %s to be healthy", clusterWorker, dep)
		}
	}
	if d, ok := w.DependsOn["migrate"]; !ok || d.Condition != types.ServiceConditionCompletedSuccessfully {
		t.Errorf("%s does not wait for migrate", clusterWorker)
	}
	if _, ok := w.DependsOn["nats"]; ok {
		t.Errorf("%s waits for the single server nats", clusterWorker)
	}
	if e := w.Environment["DATABASE_URL"]; e == nil || *e != *service(t, p, "worker").Environment["DATABASE_URL"] {
		t.Errorf("%s does not have the worker's DATABASE_URL", clusterWorker)
	}
}
