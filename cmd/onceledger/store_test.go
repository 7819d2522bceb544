package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/protocol"
)

// A command stream at its bound refuses new commands at publishing, and
// /readyz says so, naming the stream; /metrics shows the store's use.
func TestFullCommandStreamIsNotReady(t *testing.T) {
	t.Parallel()
	_, natsURL, httpAddr := runWorker(t, "-cmd-stream-max-bytes", "1048576", "-max-message-size", "2048")
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Commands for a company that does not exist: refused by the worker,
	// but stored first, which is what fills the stream.
	body := `{"pad": "` + strings.Repeat("x", 1500) + `"}`
	var refused error
	for i := 0; i < 2000 && refused == nil; i++ {
		msg := nats.NewMsg(protocol.CommandSubject("nobody", "invoice.create"))
		msg.Header.Set(protocol.HeaderIdempotencyKey, fmt.Sprintf("fill-%d", i))
		msg.Data = []byte(body)
		_, refused = js.PublishMsg(ctx, msg)
	}
	if refused == nil || !strings.Contains(refused.Error(), "maximum bytes") {
		t.Fatalf("publishing into a full command stream: %v, want a refusal", refused)
	}

	if status, body := httpGetAny(t, "http://"+httpAddr+"/readyz"); status != http.StatusServiceUnavailable || !strings.Contains(body, "LEDGER_CMD is full") {
		t.Fatalf("/readyz with the command stream full: %d %s", status, body)
	}
	metrics := httpGet(t, "http://"+httpAddr+"/metrics")
	for _, want := range []string{`onceledger_stream_max_bytes{stream="LEDGER_CMD"} 1.048576e+06`, `onceledger_stream_bytes{stream="LEDGER_DLQ"}`, "onceledger_jetstream_store_bytes "} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
