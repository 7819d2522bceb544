package pgcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Superuser is the database superuser of every cluster started here. It is
// fixed (initdb -U) so URLs do not depend on which OS user ran the tests.
const Superuser = "postgres"

const (
	// osUserWhenRoot is the account the server runs as when this process is
	// root, because initdb and postgres refuse to run as root.
	osUserWhenRoot = "postgres"
	logFileName    = "pgcluster.log"
	pgCtlTimeout   = 60 * time.Second
	readyTimeout   = 30 * time.Second
	// An auto-picked port can be grabbed by someone else between probing and
	// binding; a few fresh picks make that race practically irrelevant.
	portAttempts = 3
)

// Config describes the cluster to start.
type Config struct {
	// Dir is the data directory. It is created and initialised when missing
	// or empty, and reused when it already holds a cluster.
	Dir string
	// Port is the TCP port on 127.0.0.1; 0 picks a free one.
	Port int
	// FirstPort, when Port is 0, makes the pick the first free port from
	// FirstPort upwards, so that a cluster restarted on the same machine
	// usually gets the same port back and URLs handed out earlier stay
	// good. Defaults to 0: any free port.
	FirstPort int
	// Fast turns off fsync, synchronous_commit and full_page_writes. Only for
	// tests: a crash may lose or corrupt data.
	Fast bool
	// Settings are more server settings, each "name=value", given on the
	// server's command line (shared_preload_libraries=pg_stat_statements).
	Settings []string
	// Logger receives lifecycle messages; nil discards them.
	Logger *slog.Logger
}

// Cluster is a running local PostgreSQL cluster.
type Cluster struct {
	Dir  string
	Port int
	// User is the database superuser name, always Superuser.
	User string

	binDir string
	owner  *osAccount
	logger *slog.Logger
}

// osAccount is the OS user the server processes run as when it differs from
// the current one.
type osAccount struct {
	name string
	uid  uint32
	gid  uint32
	gids []uint32
}

// Start brings up a cluster on cfg.Dir and returns once it accepts
// connections. If a server is already running on that directory it is
// adopted as is (its port and settings win over cfg).
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if cfg.Dir == "" {
		return nil, errors.New("pgcluster: Config.Dir is required")
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: resolve data dir: %w", err)
	}
	binDir, err := Find()
	if err != nil {
		return nil, err
	}
	owner, err := serverAccount()
	if err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Cluster{Dir: dir, User: Superuser, binDir: binDir, owner: owner, logger: logger}

	fresh, err := c.prepareDir()
	if err != nil {
		return nil, err
	}
	if fresh {
		if err := c.initdb(ctx, cfg.Fast); err != nil {
			return nil, err
		}
	} else {
		running, err := c.running(ctx)
		if err != nil {
			return nil, err
		}
		if running {
			return c.adopt(ctx, cfg.Port)
		}
	}

	attempts := 1
	if cfg.Port == 0 {
		attempts = portAttempts
	}
	for i := 1; ; i++ {
		port := cfg.Port
		if port == 0 {
			if port, err = freePort(cfg.FirstPort); err != nil {
				return nil, err
			}
		}
		c.Port = port
		err = c.start(ctx, cfg.Fast, cfg.Settings)
		if err == nil {
			break
		}
		var inUse *portInUseError
		if i >= attempts || !errors.As(err, &inUse) {
			return nil, err
		}
		logger.Warn("pgcluster: picked port was taken, retrying", "port", port)
	}

	if err := c.waitReady(ctx); err != nil {
		// A server that never became reachable is useless; do not leave it behind.
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pgCtlTimeout)
		defer cancel()
		if stopErr := c.Stop(stopCtx); stopErr != nil {
			logger.Error("pgcluster: stop after failed start", "err", stopErr)
		}
		return nil, err
	}
	return c, nil
}

// URL returns a connection URL for dbname as the superuser over TCP.
func (c *Cluster) URL(dbname string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User(c.User),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(c.Port)),
		Path:     "/" + dbname,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// Stop shuts the server down with pg_ctl's fast mode (active sessions are
// rolled back, no waiting for clients) and waits until it is gone. Stopping
// a cluster that is not running is not an error.
func (c *Cluster) Stop(ctx context.Context) error {
	running, err := c.running(ctx)
	if err != nil {
		return err
	}
	if !running {
		return nil
	}
	out, err := c.pgCtl(ctx, "stop", "-D", c.Dir, "-m", "fast", "-w", "-t", seconds(pgCtlTimeout))
	if err != nil {
		return fmt.Errorf("pgcluster: pg_ctl stop %s: %w: %s", c.Dir, err, bytes.TrimSpace(out))
	}
	c.logger.Info("pgcluster: stopped", "dir", c.Dir, "port", c.Port)
	return nil
}

// portInUseError marks a start that failed only because the port was taken,
// which is worth retrying when the port was picked automatically.
type portInUseError struct {
	port int
	log  string
}

func (e *portInUseError) Error() string {
	return fmt.Sprintf("pgcluster: port %d on 127.0.0.1 is already in use: %s", e.port, e.log)
}

func serverAccount() (*osAccount, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(osUserWhenRoot)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: running as root, and PostgreSQL refuses to run as root, but there is no system user %q to run it as (%w); "+
			"create it (Debian: apt-get install postgresql creates it), run as a non-root user, "+
			"or set DATABASE_URL to an existing PostgreSQL (e.g. postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable)",
			osUserWhenRoot, err)
	}
	acc := &osAccount{name: u.Username}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: uid of %s: %w", u.Username, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: gid of %s: %w", u.Username, err)
	}
	acc.uid, acc.gid = uint32(uid), uint32(gid)
	acc.gids = []uint32{acc.gid}
	if ids, err := u.GroupIds(); err == nil {
		for _, id := range ids {
			if g, err := strconv.ParseUint(id, 10, 32); err == nil && uint32(g) != acc.gid {
				acc.gids = append(acc.gids, uint32(g))
			}
		}
	}
	return acc, nil
}

// prepareDir makes sure c.Dir exists and is usable by the server account.
// It reports whether the directory is fresh and needs initdb.
func (c *Cluster) prepareDir() (fresh bool, err error) {
	fi, err := os.Stat(c.Dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := c.mkdirAll(c.Dir); err != nil {
			return false, err
		}
		fresh = true
	case err != nil:
		return false, fmt.Errorf("pgcluster: data dir: %w", err)
	case !fi.IsDir():
		return false, fmt.Errorf("pgcluster: data dir %s is not a directory", c.Dir)
	default:
		if _, err := os.Stat(filepath.Join(c.Dir, "PG_VERSION")); err == nil {
			break
		}
		entries, err := os.ReadDir(c.Dir)
		if err != nil {
			return false, fmt.Errorf("pgcluster: data dir: %w", err)
		}
		if len(entries) > 0 {
			return false, fmt.Errorf("pgcluster: data dir %s is not empty and holds no PostgreSQL cluster (no PG_VERSION); use an empty or new directory", c.Dir)
		}
		fresh = true
		if c.owner != nil {
			if err := os.Chown(c.Dir, int(c.owner.uid), int(c.owner.gid)); err != nil {
				return false, fmt.Errorf("pgcluster: hand data dir to %s: %w", c.owner.name, err)
			}
		}
	}
	if c.owner != nil {
		if err := c.checkReachable(filepath.Dir(c.Dir)); err != nil {
			return false, err
		}
	}
	return fresh, nil
}

// mkdirAll creates dir and missing parents; those it creates belong to the
// server account, because the server must be able to reach its data.
func (c *Cluster) mkdirAll(dir string) error {
	var missing []string
	for p := dir; ; p = filepath.Dir(p) {
		if _, err := os.Stat(p); err == nil {
			break
		} else if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("pgcluster: create data dir: %w", err)
		}
		missing = append(missing, p)
		if filepath.Dir(p) == p {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		p := missing[i]
		if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("pgcluster: create data dir: %w", err)
		}
		if c.owner != nil {
			if err := os.Chown(p, int(c.owner.uid), int(c.owner.gid)); err != nil {
				return fmt.Errorf("pgcluster: hand %s to %s: %w", p, c.owner.name, err)
			}
		}
	}
	return nil
}

// checkReachable refuses a data dir the server account cannot reach rather
// than loosening the permissions of directories that are not ours: the
// usual blocker is the user's 0700 home directory, and opening it to every
// account on the machine is not a side effect anyone asked for.
func (c *Cluster) checkReachable(dir string) error {
	for p := dir; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("pgcluster: check access to %s: %w", p, err)
		}
		if !c.owner.canSearch(fi) {
			return fmt.Errorf("pgcluster: PostgreSQL refuses to run as root, so the cluster runs as %s, which cannot enter %s (mode %04o) on the way to %s; "+
				"pgcluster changes no permissions of directories it did not create: choose a data directory %s can reach "+
				"(e.g. one made by pgcluster.MkdirTemp, or under %s), or run as a non-root user",
				c.owner.name, p, fi.Mode().Perm(), c.Dir, c.owner.name, os.TempDir())
		}
		if filepath.Dir(p) == p {
			return nil
		}
	}
}

// MkdirTemp is os.MkdirTemp for a directory meant to hold a data dir: when
// the server will run as another account (this process is root), the new
// directory lets that account pass through it (search, not read), which
// os.MkdirTemp's 0700 does not.
func MkdirTemp(pattern string) (string, error) {
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", err
	}
	if os.Geteuid() == 0 {
		if err := os.Chmod(dir, 0o711); err != nil {
			os.Remove(dir)
			return "", err
		}
	}
	return dir, nil
}

func (a *osAccount) inGroup(gid uint32) bool {
	for _, g := range a.gids {
		if g == gid {
			return true
		}
	}
	return false
}

func (a *osAccount) canSearch(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	perm := fi.Mode().Perm()
	switch {
	case st.Uid == a.uid:
		return perm&0o100 != 0
	case a.inGroup(st.Gid):
		return perm&0o010 != 0
	default:
		return perm&0o001 != 0
	}
}

func (c *Cluster) initdb(ctx context.Context, fast bool) error {
	args := []string{"-D", c.Dir, "-U", Superuser, "-A", "trust", "-E", "UTF8", "--locale=C"}
	if fast {
		args = append(args, "--no-sync")
	}
	c.logger.Info("pgcluster: initdb", "dir", c.Dir)
	out, err := c.command(ctx, "initdb", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pgcluster: initdb %s: %w: %s", c.Dir, err, bytes.TrimSpace(out))
	}
	return nil
}

func (c *Cluster) start(ctx context.Context, fast bool, settings []string) error {
	// No Unix socket: its path would collide with a system cluster on the same
	// port and can exceed the 107-byte limit for deep temp dirs.
	opts := []string{
		"-c listen_addresses=127.0.0.1",
		"-c port=" + strconv.Itoa(c.Port),
		"-c unix_socket_directories=''",
		"-c max_connections=200",
	}
	if fast {
		opts = append(opts, "-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off")
	}
	for _, set := range settings {
		opts = append(opts, "-c "+set)
	}
	logPath := filepath.Join(c.Dir, logFileName)
	var logStart int64
	if fi, err := os.Stat(logPath); err == nil {
		logStart = fi.Size()
	}

	c.logger.Info("pgcluster: starting", "dir", c.Dir, "port", c.Port, "fast", fast)
	out, err := c.pgCtl(ctx, "start", "-D", c.Dir, "-w", "-t", seconds(pgCtlTimeout),
		"-l", logPath, "-o", strings.Join(opts, " "))
	if err == nil {
		return nil
	}
	serverLog := readFrom(logPath, logStart)
	if strings.Contains(serverLog, "could not bind") || strings.Contains(serverLog, "Address already in use") {
		return &portInUseError{port: c.Port, log: serverLog}
	}
	return fmt.Errorf("pgcluster: pg_ctl start %s: %w: %s\nserver log:\n%s", c.Dir, err, bytes.TrimSpace(out), serverLog)
}

func (c *Cluster) adopt(ctx context.Context, wantPort int) (*Cluster, error) {
	port, err := c.runningPort()
	if err != nil {
		return nil, err
	}
	if wantPort != 0 && wantPort != port {
		return nil, fmt.Errorf("pgcluster: cluster in %s is already running on port %d, not the requested %d", c.Dir, port, wantPort)
	}
	c.Port = port
	c.logger.Info("pgcluster: adopting running cluster", "dir", c.Dir, "port", port)
	if err := c.waitReady(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// running asks pg_ctl, which checks that the postmaster.pid process is alive
// rather than trusting a possibly stale file.
func (c *Cluster) running(ctx context.Context) (bool, error) {
	out, err := c.pgCtl(ctx, "status", "-D", c.Dir)
	if err == nil {
		return true, nil
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) && exitErr.ExitCode() == 3 {
		return false, nil
	}
	return false, fmt.Errorf("pgcluster: pg_ctl status %s: %w: %s", c.Dir, err, bytes.TrimSpace(out))
}

// runningPort reads the fourth line of postmaster.pid, where the server
// records the port it actually listens on.
func (c *Cluster) runningPort() (int, error) {
	data, err := os.ReadFile(filepath.Join(c.Dir, "postmaster.pid"))
	if err != nil {
		return 0, fmt.Errorf("pgcluster: read port of running cluster: %w", err)
	}
	lines := strings.Split(string(data), "\n")
	if len(lines) < 4 {
		return 0, fmt.Errorf("pgcluster: postmaster.pid in %s is incomplete", c.Dir)
	}
	port, err := strconv.Atoi(strings.TrimSpace(lines[3]))
	if err != nil {
		return 0, fmt.Errorf("pgcluster: port in postmaster.pid of %s: %w", c.Dir, err)
	}
	return port, nil
}

// waitReady confirms with a real connection what pg_ctl -w inferred from
// postmaster.pid, so callers never see a transient refusal.
func (c *Cluster) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	var lastErr error
	for {
		lastErr = c.ping(ctx)
		if lastErr == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pgcluster: server on 127.0.0.1:%d not accepting connections: %w", c.Port, lastErr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *Cluster) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return conn.Ping(ctx)
}

func (c *Cluster) pgCtl(ctx context.Context, args ...string) ([]byte, error) {
	return c.command(ctx, "pg_ctl", args...).CombinedOutput()
}

func (c *Cluster) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(c.binDir, name), args...)
	// The server account may not be able to enter our working directory.
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), "LC_ALL=C", "LANG=C")
	// pg_ctl's daemonised postgres redirects its output, but guard against
	// an inherited pipe keeping CombinedOutput waiting forever.
	cmd.WaitDelay = 5 * time.Second
	if c.owner != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{
			Uid:    c.owner.uid,
			Gid:    c.owner.gid,
			Groups: c.owner.gids,
		}}
	}
	return cmd
}

// freePort returns the first port from first upwards that is free on
// 127.0.0.1, or any free port when first is 0 or nothing near it is free.
func freePort(first int) (int, error) {
	if first > 0 {
		for p := first; p < first+100 && p <= 65535; p++ {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err == nil {
				l.Close()
				return p, nil
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgcluster: pick a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// readFrom returns what the server logged since offset, capped so an error
// message stays readable.
func readFrom(path string, offset int64) string {
	const maxTail = 4096
	f, err := os.Open(path)
	if err != nil {
		return "(no server log: " + err.Error() + ")"
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size()-offset > maxTail {
		offset = fi.Size() - maxTail
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return "(server log unreadable: " + err.Error() + ")"
	}
	data, _ := io.ReadAll(f)
	return strings.TrimSpace(string(data))
}

func seconds(d time.Duration) string {
	return strconv.Itoa(int(d / time.Second))
}
