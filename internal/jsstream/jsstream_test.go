package jsstream_test

import (
	"context"
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
