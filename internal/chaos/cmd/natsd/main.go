// Command natsd runs a NATS server with JetStream as a process of its own,
// so the fault-injection suite can stop, kill and restart it like any
// broker. It listens on 127.0.0.1 on a fixed port and keeps JetStream data
// in a fixed directory, so a restarted server has the same streams,
// messages and consumer state. It prints "ready <url>" once clients can
// connect and shuts down cleanly on SIGTERM or SIGINT.
//
//	natsd -port 4333 -store /tmp/chaos/nats [-config deploy/nats/nats-server.conf]
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/onceledger/onceledger/internal/natsserver"
)

func main() {
	port := flag.Int("port", 0, "client port on 127.0.0.1 (required: restarts must find the server again)")
	store := flag.String("store", "", "JetStream store directory (required)")
	name := flag.String("name", "chaos-nats", "server name")
	verbose := flag.Bool("v", false, "log the server's notices to stderr")
	clusterName := flag.String("cluster-name", "", "cluster name, the same on every node (clustered when -cluster-port is set)")
	clusterPort := flag.Int("cluster-port", 0, "route port on 127.0.0.1; 0: not clustered")
	routes := flag.String("routes", "", "comma-separated nats-route://127.0.0.1:PORT of the other nodes")
	syncAlways := flag.Bool("sync-always", false, "fsync every JetStream write before acknowledging it (sync_interval: always)")
	config := flag.String("config", "", "nats-server configuration file (users, permissions); -port and -store still win")
	flag.Parse()
	if *port <= 0 || *store == "" {
		fmt.Fprintln(os.Stderr, "natsd: -port and -store are required")
		os.Exit(2)
	}
	var logger *slog.Logger
	if *verbose {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	cluster := natsserver.Cluster{Name: *clusterName, Port: *clusterPort}
	if *routes != "" {
		cluster.Routes = strings.Split(*routes, ",")
	}
	srv, err := natsserver.Start(natsserver.Config{Port: *port, StoreDir: *store, ServerName: *name, Logger: logger, Cluster: cluster, SyncAlways: *syncAlways, ConfigFile: *config})
	if err != nil {
		fmt.Fprintf(os.Stderr, "natsd: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("ready %s\n", srv.ClientURL())
	<-sigs
	srv.Shutdown()
}
