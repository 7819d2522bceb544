package testenv

import (
	"bytes"
	"context"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/internal/freeport"
)

// SystemNATSBinary is the nats-server executable SystemNATS looks for on
// PATH: the one an operating system packages, often older than the embedded
// server (Debian 12 ships 2.9).
const SystemNATSBinary = "nats-server"

// SystemNATS starts the nats-server found on PATH with JetStream, on a free
// port of 127.0.0.1 and a store of its own, stopped when the test ends, and
// returns its client URL. ok is false, with the reason, when there is no
// such binary: it is optional, so the caller says in the test log what did
// not run instead of failing. A binary that is there but does not start
// fails the test.
func SystemNATS(t testing.TB) (url string, ok bool, why string) {
	t.Helper()
	path, err := exec.LookPath(SystemNATSBinary)
	if err != nil {
		return "", false, SystemNATSBinary + " is not on PATH: " + err.Error()
	}
	port, err := freePort()
	if err != nil {
		t.Fatalf("testenv: a free port for %s: %v", path, err)
	}
	cmd := exec.Command(path, "-js", "-sd", t.TempDir(), "-a", "127.0.0.1", "-p", strconv.Itoa(port))
	var out LockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("testenv: start %s: %v", path, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	url = "nats://127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(15 * time.Second)
	for {
		if err = jetStreamReady(url); err == nil {
			return url, true, ""
		}
		select {
		case <-exited:
			t.Fatalf("testenv: %s exited before it was ready: %v\n%s", path, err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("testenv: %s not ready on %s within 15s: %v\n%s", path, url, err, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func jetStreamReady(url string) error {
	nc, err := nats.Connect(url, nats.Timeout(time.Second))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = js.AccountInfo(ctx)
	return err
}

// freePort picks a port that is free now, out of the range outgoing
// connections take theirs from (see freeport); another process may still
// take it before the server binds, in which case the server exits and the
// test fails saying so.
func freePort() (int, error) { return freeport.Pick() }

// LockedBuffer collects output written by one goroutine (a server's, a
// logger's) and read by the test.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
