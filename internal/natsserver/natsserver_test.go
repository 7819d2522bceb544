package natsserver_test

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/internal/natsserver"
)

func TestJetStreamRoundTrip(t *testing.T) {
	srv := start(t, natsserver.Config{StoreDir: t.TempDir(), ServerName: "roundtrip"})
	if !strings.HasPrefix(srv.ClientURL(), "nats://127.0.0.1:") {
		t.Fatalf("ClientURL = %q, want nats://127.0.0.1:<port>", srv.ClientURL())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	js := connect(t, srv.ClientURL())
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:     "COMMANDS",
		Subjects: []string{"commands.>"},
		Storage:  jetstream.FileStorage,
	})
	if err != nil {
		t.Fatalf("CreateStream: %v", err)
	}
	ack, err := js.Publish(ctx, "commands.post", []byte("hello ledger"))
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if ack.Stream != "COMMANDS" || ack.Sequence != 1 {
		t.Fatalf("ack = %+v, want stream COMMANDS seq 1", ack)
	}

	cons, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:   "reader",
		AckPolicy: jetstream.AckExplicitPolicy,
	})
	if err != nil {
		t.Fatalf("CreateOrUpdateConsumer: %v", err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	var got []string
	for msg := range batch.Messages() {
		got = append(got, string(msg.Data()))
		if err := msg.Ack(); err != nil {
			t.Fatalf("Ack: %v", err)
		}
	}
	if err := batch.Error(); err != nil {
		t.Fatalf("fetch batch: %v", err)
	}
	if len(got) != 1 || got[0] != "hello ledger" {
		t.Fatalf("fetched %q, want [\"hello ledger\"]", got)
	}
}

func TestRestartKeepsStreamOnSamePort(t *testing.T) {
	first := start(t, natsserver.Config{StoreDir: t.TempDir()})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	js := connect(t, first.ClientURL())
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "KEEP", Subjects: []string{"keep"}}); err != nil {
		t.Fatalf("CreateStream: %v", err)
	}
	if _, err := js.Publish(ctx, "keep", []byte("durable")); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	first.Shutdown()

	second := start(t, first.Config())
	if second.ClientURL() != first.ClientURL() {
		t.Fatalf("restarted on %s, want %s", second.ClientURL(), first.ClientURL())
	}
	js = connect(t, second.ClientURL())
	stream, err := js.Stream(ctx, "KEEP")
	if err != nil {
		t.Fatalf("stream lost across restart: %v", err)
	}
	msg, err := stream.GetMsg(ctx, 1)
	if err != nil {
		t.Fatalf("GetMsg: %v", err)
	}
	if string(msg.Data) != "durable" {
		t.Fatalf("message = %q, want %q", msg.Data, "durable")
	}
}

func TestSecondServerOnSamePortFailsClearly(t *testing.T) {
	first := start(t, natsserver.Config{StoreDir: t.TempDir()})
	port := first.Config().Port

	began := time.Now()
	second, err := natsserver.Start(natsserver.Config{Port: port, StoreDir: t.TempDir()})
	if err == nil {
		second.Shutdown()
		t.Fatalf("second server on port %d started; want an error", port)
	}
	msg := err.Error()
	if !strings.Contains(msg, strconv.Itoa(port)) || !strings.Contains(msg, "in use") {
		t.Fatalf("error %q should name port %d and say it is in use", msg, port)
	}
	if elapsed := time.Since(began); elapsed > 5*time.Second {
		t.Fatalf("failure took %s; a taken port should be reported at once", elapsed)
	}
}

func TestServerLogsReachSlog(t *testing.T) {
	rec := &recorder{}
	start(t, natsserver.Config{StoreDir: t.TempDir(), Logger: slog.New(rec)})
	if !rec.contains("Server is ready") {
		t.Fatalf("no 'Server is ready' notice among %d records", rec.count())
	}
}

func TestStoreDirRequired(t *testing.T) {
	if _, err := natsserver.Start(natsserver.Config{}); err == nil || !strings.Contains(err.Error(), "StoreDir") {
		t.Fatalf("err = %v, want a StoreDir error", err)
	}
}

func TestPortTakenByOtherProgram(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	_, err = natsserver.Start(natsserver.Config{Port: port, StoreDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), strconv.Itoa(port)) || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("err = %v, want port %d in use", err, port)
	}
}

func start(t *testing.T, cfg natsserver.Config) *natsserver.Server {
	t.Helper()
	srv, err := natsserver.Start(cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(srv.Shutdown)
	return srv
}

func connect(t *testing.T, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("jetstream.New: %v", err)
	}
	return js
}

// recorder is a slog.Handler that keeps messages for assertions.
type recorder struct {
	mu   sync.Mutex
	msgs []string
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, rec.Message)
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

func (r *recorder) contains(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.msgs {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.msgs)
}

func TestUnusableStoreDirFailsFast(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	srv, err := natsserver.Start(natsserver.Config{StoreDir: file})
	if err == nil {
		srv.Shutdown()
		t.Fatal("Start succeeded with a regular file as StoreDir")
	}
	if elapsed := time.Since(began); elapsed > 5*time.Second {
		t.Fatalf("failure took %s; server fatal errors should end Start at once", elapsed)
	}
	t.Logf("error: %v", err)
}

// A configuration file brings its users and its fsync setting; the port,
// store and host of Config win, and its monitoring port stays closed, so
// the shipped file (4222, 8222) can run in parallel tests.
func TestConfigFile(t *testing.T) {
	t.Parallel()
	conf := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(conf, []byte(`port: 4222
http_port: 8222
jetstream { store_dir: "/nonexistent", sync_interval: always }
authorization { users = [ {user: a, password: "pw-a"} ] }
`), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := start(t, natsserver.Config{StoreDir: t.TempDir(), ConfigFile: conf})
	u := srv.ClientURL()
	if strings.HasSuffix(u, ":4222") {
		t.Fatalf("ClientURL = %q, want a port of its own", u)
	}
	if _, err := nats.Connect(u); err == nil || !strings.Contains(err.Error(), "Authorization Violation") {
		t.Fatalf("connect without credentials: %v", err)
	}
	nc, err := nats.Connect(u, nats.UserInfo("a", "pw-a"))
	if err != nil {
		t.Fatalf("connect as a: %v", err)
	}
	nc.Close()
	// A second server from the same file starts too: neither took 4222 or 8222.
	start(t, natsserver.Config{StoreDir: t.TempDir(), ConfigFile: conf})
	if _, err := natsserver.Start(natsserver.Config{StoreDir: t.TempDir(), ConfigFile: filepath.Join(t.TempDir(), "none.conf")}); err == nil {
		t.Fatal("started from a configuration file that does not exist")
	}
}
