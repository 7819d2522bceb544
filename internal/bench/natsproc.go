package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/onceledger/onceledger/internal/natsserver"
)

// ServeNATS runs a JetStream server for a benchmark run in a process of its
// own, so that its CPU time can be told apart from the worker's: it parses
// -port (0 picks a free one), -store (required) and -sync-always, prints
// the client URL as one line on stdout once the server accepts
// connections, and serves until ctx ends. It is what Config.NATSCommand
// starts.
func ServeNATS(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench-nats", flag.ContinueOnError)
	fs.SetOutput(stderr)
	port := fs.Int("port", 0, "client port on 127.0.0.1; 0 picks a free one")
	store := fs.String("store", "", "JetStream store directory (required)")
	syncAlways := fs.Bool("sync-always", false, "fsync every JetStream write before acknowledging it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *store == "" || fs.NArg() > 0 {
		return errors.New("bench-nats: -store DIR is required, and nothing else")
	}
	ns, err := natsserver.Start(natsserver.Config{Port: *port, StoreDir: *store, ServerName: "onceledger-bench", SyncAlways: *syncAlways})
	if err != nil {
		return err
	}
	defer ns.Shutdown()
	if _, err := fmt.Fprintln(stdout, ns.ClientURL()); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// natsProcess is a NATS server ServeNATS runs in a child process.
type natsProcess struct {
	cmd    *exec.Cmd
	url    string
	store  string
	stderr *lockedBuffer
	done   chan struct{} // closed when the process has exited
}

// startNATSProcess starts argv with ServeNATS's flags appended and waits
// for the URL it prints. The process is killed with the bench (on Linux,
// also when the bench itself is killed).
func startNATSProcess(argv []string, store string, syncAlways bool) (*natsProcess, error) {
	args := append(append([]string{}, argv[1:]...), "-port", "0", "-store", store)
	if syncAlways {
		args = append(args, "-sync-always")
	}
	cmd := exec.Command(argv[0], args...)
	setDeathSignal(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &natsProcess{cmd: cmd, store: store, stderr: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start NATS process %q: %w", strings.Join(argv, " "), err)
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, out)
	}()
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	select {
	case p.url = <-lines:
	case <-time.After(30 * time.Second):
	}
	if !strings.HasPrefix(p.url, "nats://") {
		err := fmt.Errorf("NATS process %q did not print its URL (got %q): %s", strings.Join(argv, " "), p.url, strings.TrimSpace(p.stderr.String()))
		return nil, errors.Join(err, p.stop())
	}
	return p, nil
}

func (p *natsProcess) pid() int { return p.cmd.Process.Pid }

// stop kills the process, waits for it to exit and removes its store.
func (p *natsProcess) stop() error {
	_ = p.cmd.Process.Kill()
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		return fmt.Errorf("NATS process %d did not exit after SIGKILL", p.pid())
	}
	return os.RemoveAll(p.store)
}

// lockedBuffer keeps what a child writes to stderr, for the error that
// says why it failed.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 64<<10 {
		return len(p), nil
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
