package jsstream_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/jsstream"
)

// Ensure creates a missing stream, leaves one with the same settings
// untouched (the server announces no update) and updates one whose
// settings changed.
func TestEnsureWritesOnlyWhatChanged(t *testing.T) {
	t.Parallel()
	nc, err := nats.Connect(testenv.NATS(t))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	updates, err := nc.SubscribeSync("$JS.EVENT.ADVISORY.STREAM.UPDATED.S")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	want := jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Storage: jetstream.FileStorage,
		MaxAge: time.Hour, Duplicates: time.Minute, Discard: jetstream.DiscardNew, MaxMsgSize: 1 << 20}
	if _, err := jsstream.Ensure(ctx, js, want); err != nil {
		t.Fatalf("create: %v", err)
	}
	for range 3 {
		if _, err := jsstream.Ensure(ctx, js, want); err != nil {
			t.Fatalf("ensure again: %v", err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if msg, err := updates.NextMsg(300 * time.Millisecond); err == nil {
		t.Fatalf("the same settings updated the stream: %s", msg.Data)
	}
	want.MaxAge = 2 * time.Hour
	s, err := jsstream.Ensure(ctx, js, want)
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if got := s.CachedInfo().Config.MaxAge; got != 2*time.Hour {
		t.Fatalf("MaxAge %s after the update, want 2h", got)
	}
	if _, err := updates.NextMsg(5 * time.Second); err != nil {
		t.Fatalf("a changed setting: no update announced: %v", err)
	}
}

// Replicas the servers cannot hold are refused with the count and the
// cluster's size, whether the stream is new or is being moved to them: on a
// single server, and on a cluster of three asked for five.
func TestEnsureNamesAnImpossibleReplicaCount(t *testing.T) {
	t.Parallel()
	single := testenv.NATS(t)
	cluster := testenv.NATSCluster(t, "c1", 3)
	for _, c := range []struct {
		name     string
		url      string
		replicas int
		want     string
	}{
		{"single server", single, 3, "3 replicas need a JetStream cluster of at least 3 servers; the server is not part of a cluster"},
		{"cluster of three", cluster[1].ClientURL(), 5, `5 replicas need a JetStream cluster of at least 5 servers; the cluster "c1" has 3`},
	} {
		t.Run(c.name, func(t *testing.T) {
			nc, err := nats.Connect(c.url)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			js, err := jetstream.New(nc)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			fresh := jetstream.StreamConfig{Name: "FRESH", Subjects: []string{"fresh.>"}, Storage: jetstream.FileStorage, Replicas: c.replicas}
			moved := jetstream.StreamConfig{Name: "MOVED", Subjects: []string{"moved.>"}, Storage: jetstream.FileStorage, Replicas: 1}
			if _, err := jsstream.Ensure(ctx, js, moved); err != nil {
				t.Fatalf("one replica: %v", err)
			}
			moved.Replicas = c.replicas
			for _, want := range []jetstream.StreamConfig{fresh, moved} {
				_, err := jsstream.Ensure(ctx, js, want)
				var re *jsstream.ReplicasError
				if !errors.As(err, &re) {
					t.Fatalf("%s with %d replicas: %v, want a ReplicasError", want.Name, want.Replicas, err)
				}
				if err.Error() != c.want {
					t.Errorf("%s with %d replicas: %q, want %q", want.Name, want.Replicas, err, c.want)
				}
				var apiErr *jetstream.APIError
				if !errors.As(err, &apiErr) {
					t.Errorf("%s: the server's refusal is not kept: %v", want.Name, err)
				}
			}
			s, err := js.Stream(ctx, "MOVED")
			if err != nil {
				t.Fatal(err)
			}
			if got := s.CachedInfo().Config.Replicas; got != 1 {
				t.Errorf("the refused stream has %d replicas, want its 1", got)
			}
		})
	}
}

// Where the cluster lists as many servers as the replicas asked for, or
// none, its size is not the reason: the error gives the server's.
func TestReplicasErrorWithoutTheSize(t *testing.T) {
	t.Parallel()
	refusal := &jetstream.APIError{Code: 400, ErrorCode: 10005, Description: "no suitable peers for placement, insufficient storage"}
	for _, servers := range []int{0, 3} {
		err := &jsstream.ReplicasError{Replicas: 3, Clustered: true, Cluster: "c1", Servers: servers, Err: refusal}
		if got, want := err.Error(), `the cluster "c1" could not place 3 replicas: no suitable peers for placement, insufficient storage`; got != want {
			t.Errorf("%d servers listed: %q, want %q", servers, got, want)
		}
	}
}
