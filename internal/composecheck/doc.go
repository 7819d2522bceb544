// Package composecheck holds tests that check the container deployment
// definitions at the repository root (docker-compose.yml, Dockerfile and
// deploy/nats/nats-server.conf) without needing Docker.
//
// The compose file is loaded and validated with compose-go, the same library
// the docker compose CLI uses, and the resulting model is checked against the
// operational rules of onceledger: loopback-only ports, pinned images, named
// volumes for state, health-gated startup ordering and a durable JetStream
// configuration; with profile "cluster", three servers routed to each other
// as one JetStream cluster and a worker connected to all three.
//
// The package has no non-test code.
package composecheck
