package chaos

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/onceledger/onceledger/internal/freeport"
)

// proc is a child process in a process group of its own, so a signal
// reaches everything it started and nothing else.
type proc struct {
	name    string
	cmd     *exec.Cmd
	done    chan struct{}
	started time.Time
	ended   time.Time

	mu       sync.Mutex
	sent     syscall.Signal // the last signal the suite sent, 0 if none
	replaced bool           // stopped by the suite to start another in its place
}

// startProc starts path with args and env (nothing inherited but PATH and
// HOME), its output appended to log.
func startProc(name, path string, args, env []string, log io.Writer) (*proc, error) {
	cmd := exec.Command(path, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	cmd.Stdout, cmd.Stderr = log, log
	// Pdeathsig: if the suite itself dies, its children die with it instead
	// of lingering on fixed ports.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{}), started: time.Now()}
	go func() {
		_ = cmd.Wait()
		p.ended = time.Now()
		close(p.done)
	}()
	return p, nil
}

// signal sends sig to the process group.
func (p *proc) signal(sig syscall.Signal) {
	p.mu.Lock()
	p.sent = sig
	p.mu.Unlock()
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends sig and waits up to grace for the process to end, then kills
// the group.
func (p *proc) stop(sig syscall.Signal, grace time.Duration) {
	if p.exited() {
		return
	}
	p.signal(sig)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.signal(syscall.SIGKILL)
		<-p.done
	}
	// Whatever the leader left in its group goes too.
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
}

// exitReason classifies how the process ended: "killed" (SIGKILL from the
// suite), "crashed" (SIGKILL the suite did not send: a compiled-in fault
// point), "stopped" (after the suite's SIGTERM), "refused to start" (exit 1
// soon after starting: a worker does not start while Postgres or NATS is down),
// or an exit status. Call it after done is closed.
func (p *proc) exitReason() string {
	st := p.cmd.ProcessState
	if st == nil {
		return "running"
	}
	p.mu.Lock()
	sent := p.sent
	p.mu.Unlock()
	ws, _ := st.Sys().(syscall.WaitStatus)
	switch {
	case ws.Signaled() && ws.Signal() == syscall.SIGKILL && sent == syscall.SIGKILL:
		return "killed"
	case ws.Signaled() && ws.Signal() == syscall.SIGKILL:
		return "crashed"
	case sent == syscall.SIGTERM && (st.Success() || ws.Signaled()):
		return "stopped"
	case ws.Signaled():
		return "signal " + ws.Signal().String()
	case st.ExitCode() == 1 && p.ended.Sub(p.started) < 15*time.Second:
		return "refused to start"
	}
	return fmt.Sprintf("exit %d", st.ExitCode())
}

// freePort picks a port on 127.0.0.1 nothing listens on right now, out of
// the range outgoing connections take theirs from (see freeport).
func freePort() (int, error) {
	p, err := freeport.Pick()
	if err != nil {
		return 0, fmt.Errorf("pick a free port: %w", err)
	}
	return p, nil
}

// waitTCP waits until something accepts connections on addr.
func waitTCP(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing accepts connections on %s after %s: %w", addr, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
