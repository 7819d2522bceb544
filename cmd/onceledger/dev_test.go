package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"

	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/internal/pgcluster"
)

// asBinaryEnv makes the test binary run as onceledger itself, so that tests
// can start dev as separate processes, as a user in two shells would.
const asBinaryEnv = "ONCELEDGER_TEST_AS_BINARY"

// A second dev on the same data dir refuses and names the first; one on
// its own data dir runs apart; neither stopping takes the first one's
// Postgres or NATS with it, and no directory of the user changes mode.
func TestDevTwice(t *testing.T) {
	t.Parallel()
	if _, err := pgcluster.Find(); err != nil {
		t.Fatalf("dev's own cluster needs the PostgreSQL server binaries: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	home, _ := os.UserHomeDir()
	modesBefore := modes(t, home, os.TempDir())

	dirA := devTempDir(t)
	a := startDevProcess(ctx, t, dirA)

	// The second shell: same data dir, other ports.
	// Bounded apart from the test: a second dev that does not refuse runs
	// until it is stopped, as Ctrl-C would.
	bctx, bcancel := context.WithTimeout(ctx, 30*time.Second)
	defer bcancel()
	b := exec.CommandContext(bctx, os.Args[0], "dev", "-data-dir", dirA, "-nats-port", freePort(t), "-http", freeAddr(t), "-health", freeAddr(t))
	b.Env = devEnv()
	b.Cancel = func() error { return b.Process.Signal(os.Interrupt) }
	b.WaitDelay = 30 * time.Second
	out, err := b.CombinedOutput()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 1 {
		t.Fatalf("second dev on the same data dir: %v, want exit 1\n%s", err, out)
	}
	for _, want := range []string{"another onceledger dev is running", fmt.Sprintf("pid %d", a.pid), a.state.NATSURL, a.state.HTTPURL, a.state.HealthURL} {
		if !strings.Contains(string(out), want) {
			t.Errorf("refusal does not say %q:\n%s", want, out)
		}
	}
	a.alive(ctx, t)

	c := startDevProcess(ctx, t, devTempDir(t))
	if c.state.DatabaseURL == a.state.DatabaseURL || c.state.NATSURL == a.state.NATSURL {
		t.Errorf("the dev apart shares a server: %+v and %+v", a.state, c.state)
	}
	c.stop(t)
	a.alive(ctx, t)
	if devClusterRunning(ctx, t, c.state) {
		t.Error("the dev apart left its Postgres running")
	}
	a.stop(t)
	if devClusterRunning(ctx, t, a.state) {
		t.Error("dev left its Postgres running")
	}
	if got := modes(t, home, os.TempDir()); got != modesBefore {
		t.Errorf("modes changed: %s, were %s", got, modesBefore)
	}
}

// With DATABASE_URL, dev creates a database of its own next to the one the
// URL names and leaves that one alone; while it runs, the CLI finds dev's
// database without DATABASE_URL, and the README's HTTP recipe works.
func TestDevUsesADatabaseOfItsOwn(t *testing.T) {
	named := testenv.Postgres(t)
	ownDB := "onceledger_t_dev_" + fmt.Sprint(time.Now().UnixNano())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, named)
		if err != nil {
			t.Errorf("drop %s: %v", ownDB, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{ownDB}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("drop %s: %v", ownDB, err)
		}
	})
	t.Setenv("DATABASE_URL", named)
	dir := devTempDir(t)
	t.Setenv("ONCELEDGER_DEV_DIR", dir)
	httpAddr, healthAddr, natsPort := freeAddr(t), freeAddr(t), freePort(t)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	devCtx, stopDev := context.WithCancel(ctx)
	defer stopDev()
	var banner, devErr string
	done := make(chan int, 1)
	go func() {
		code, out, errOut := invoke(devCtx, "", "dev", "-database", ownDB, "-nats-port", natsPort, "-http", httpAddr, "-health", healthAddr, "-log-level", "error")
		banner, devErr = out, errOut
		done <- code
		close(done) // a wait that took the code leaves 0 to the next
	}()
	st := waitDevState(ctx, t, dir, os.Getpid(), done, func() string { return banner + devErr })
	waitHTTP(t, st.HealthURL+"/readyz")

	if !strings.HasSuffix(strings.SplitN(st.DatabaseURL, "?", 2)[0], "/"+ownDB) {
		t.Errorf("dev's database URL %s is not database %s", st.DatabaseURL, ownDB)
	}
	if n := countTables(ctx, t, named); n != 0 {
		t.Errorf("the database DATABASE_URL names got %d tables", n)
	}
	if n := countTables(ctx, t, st.DatabaseURL); n == 0 {
		t.Error("dev's own database has no tables")
	}

	// Another data dir, the same database on the same server.
	code, _, errOut := invoke(ctx, "", "dev", "-data-dir", devTempDir(t), "-database", ownDB,
		"-nats-port", freePort(t), "-http", freeAddr(t), "-health", freeAddr(t), "-log-level", "error")
	if code != 1 || !strings.Contains(errOut, "another onceledger dev is using database "+ownDB) {
		t.Errorf("second dev on the same database: exit %d: %s", code, errOut)
	}

	t.Setenv("DATABASE_URL", "")
	code, token, errOut := invoke(ctx, "", "tokens", "create", "-company", "acme", "-name", "dev")
	token = strings.TrimSpace(token)
	if code != 0 || !strings.HasPrefix(token, "olt_") || !strings.Contains(errOut, "using the database of onceledger dev") {
		t.Fatalf("tokens create without DATABASE_URL: exit %d %q %s", code, token, errOut)
	}
	for _, step := range []struct{ path, key, file string }{
		{"/v1/companies/create", "acme-setup", "company.json"},
		{"/v1/sales/invoices/create", "order-1041-invoice", "invoice.json"},
	} {
		body, err := os.ReadFile(filepath.Join("..", "..", "examples", step.file))
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, st.HTTPURL+step.path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Idempotency-Key", step.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("POST %s: %s", step.path, resp.Status)
		}
	}

	code, out, errOut := invoke(ctx, "", "healthcheck", "-health", healthAddr)
	if code != 0 || strings.TrimSpace(out) != "ok" {
		t.Errorf("healthcheck: exit %d %q %s", code, out, errOut)
	}

	stopDev()
	if code := <-done; code != 0 {
		t.Fatalf("dev exited %d: %s", code, devErr)
	}
	for _, want := range []string{"/v1/companies/create", "DATABASE_URL's database is not touched", buildVersion(), "/console/", "tokens create -operator"} {
		if !strings.Contains(banner, want) {
			t.Errorf("banner does not say %q:\n%s", want, banner)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, devStateFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file left after dev stopped: %v", err)
	}
	if code, _, errOut := invoke(ctx, "", "tokens", "list"); code != 2 || !strings.Contains(errOut, "DATABASE_URL") {
		t.Errorf("tokens list after dev stopped: exit %d %s", code, errOut)
	}
}

func TestDevDataDirIsOutsideRootsHome(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root's cluster runs as another account")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	if dir := defaultDevDir(); strings.HasPrefix(dir, home+string(filepath.Separator)) {
		t.Fatalf("default data dir %s is under %s, which the postgres account cannot enter", dir, home)
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	code, out, errOut := invoke(context.Background(), "", "version")
	if code != 0 || !strings.HasPrefix(out, "onceledger ") || !strings.Contains(out, runtime.Version()) {
		t.Fatalf("version: exit %d %q %s", code, out, errOut)
	}
	if code, out, errOut := invoke(context.Background(), "", "healthcheck", "-h"); code != 0 || out != "" || !strings.HasPrefix(errOut, "Usage: onceledger healthcheck") {
		t.Errorf("healthcheck -h: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

type devProcess struct {
	pid   int
	state devState
	cmd   *exec.Cmd
	out   *lockedBuffer
	done  chan int
}

// startDevProcess runs dev on dir in a process of its own, without
// DATABASE_URL, so it starts a cluster of its own, and waits until it is up.
func startDevProcess(ctx context.Context, t *testing.T, dir string) *devProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "dev", "-data-dir", dir, "-nats-port", freePort(t), "-http", freeAddr(t), "-health", freeAddr(t), "-log-level", "warn")
	cmd.Env = devEnv()
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &devProcess{pid: cmd.Process.Pid, cmd: cmd, out: out, done: make(chan int, 1)}
	go func() {
		err := cmd.Wait()
		code := 0
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			code = exitErr.ExitCode()
		} else if err != nil {
			code = -1
		}
		p.done <- code
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop(t)
		// A dev that could not stop its cluster must not leave it running.
		if _, err := os.Stat(filepath.Join(dir, "postgres", "postmaster.pid")); err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if c, err := pgcluster.Start(ctx, pgcluster.Config{Dir: filepath.Join(dir, "postgres")}); err == nil {
				_ = c.Stop(ctx)
			}
		}
	})
	p.state = waitDevState(ctx, t, dir, p.pid, p.done, p.out.String)
	return p
}

// stop ends dev as Ctrl-C would and waits for it; stopping twice is fine.
func (p *devProcess) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case code, ok := <-p.done:
		if ok && code != 0 {
			t.Errorf("dev (pid %d) exited %d:\n%s", p.pid, code, p.out)
		}
	case <-time.After(time.Minute):
		_ = p.cmd.Process.Kill()
		t.Errorf("dev (pid %d) did not stop within a minute:\n%s", p.pid, p.out)
	}
}

func (p *devProcess) alive(ctx context.Context, t *testing.T) {
	t.Helper()
	if err := pingDB(ctx, p.state.DatabaseURL); err != nil {
		t.Fatalf("the first dev's Postgres is gone: %v", err)
	}
	nc, err := nats.Connect(p.state.NATSURL, nats.Timeout(5*time.Second))
	if err != nil {
		t.Fatalf("the first dev's NATS is gone: %v", err)
	}
	nc.Close()
	resp, err := http.Get(p.state.HealthURL + "/readyz")
	if err != nil {
		t.Fatalf("the first dev's HTTP is gone: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the first dev is not ready: %s", resp.Status)
	}
}

// output, read once dev has exited, is what it said.
func waitDevState(ctx context.Context, t *testing.T, dir string, pid int, exited <-chan int, output func() string) devState {
	t.Helper()
	for {
		if st, err := readDevState(dir); err == nil && st.PID == pid {
			return st
		}
		select {
		case code := <-exited:
			t.Fatalf("dev exited %d before it was up:\n%s", code, output())
		case <-ctx.Done():
			t.Fatalf("dev did not come up: %v", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// devEnv is the environment of a dev a user starts without DATABASE_URL.
func devEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DATABASE_URL=") && !strings.HasPrefix(kv, "ONCELEDGER_DEV_DIR=") {
			env = append(env, kv)
		}
	}
	return append(env, asBinaryEnv+"=1")
}

// devTempDir is a data dir for dev; the cluster's account must be able to
// enter it when the tests run as root.
func devTempDir(t *testing.T) string {
	t.Helper()
	dir, err := pgcluster.MkdirTemp("onceledger-devtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func freePort(t *testing.T) string {
	_, port, _ := net.SplitHostPort(freeAddr(t))
	return port
}

// devClusterRunning tells whether the Postgres cluster of the dev of st
// still runs: a server answering on its address is dev's only if its data
// directory is in dev's data dir (another dev, of a test run beside this
// one, may have started its cluster on the port since).
func devClusterRunning(ctx context.Context, t *testing.T, st devState) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, st.DatabaseURL)
	if err != nil {
		return false
	}
	defer conn.Close(ctx)
	var dir string
	if err := conn.QueryRow(ctx, "SHOW data_directory").Scan(&dir); err != nil {
		t.Fatalf("the server on %s answers but not its data directory: %v", redact(st.DatabaseURL), err)
	}
	resolved := func(p string) string {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return p
	}
	return strings.HasPrefix(resolved(dir), resolved(st.DataDir)+string(filepath.Separator))
}

func pingDB(ctx context.Context, dsn string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.Ping(ctx)
}

func countTables(ctx context.Context, t *testing.T, dsn string) int {
	t.Helper()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func modes(t *testing.T, dirs ...string) string {
	t.Helper()
	var b strings.Builder
	for _, d := range dirs {
		if d == "" {
			continue
		}
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s=%s ", d, fi.Mode())
	}
	return b.String()
}

// The banner's CLI lines work as printed from any shell: with DATABASE_URL
// set there (the CLI would use it instead of dev's database) they clear
// it, and for a dev on a data dir of its own they name that dir, where the
// CLI finds the running dev.
func TestDevBannerLinesFindDevsDatabase(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a dev dir")
	t.Setenv("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
	s := &settings{DatabaseURL: "postgres://postgres@127.0.0.1:5432/onceledger_dev", HTTPAddr: "127.0.0.1:8080"}
	var b strings.Builder
	printDevBanner(&b, s, dir, false)
	var lines []string
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.Contains(line, "tokens create") {
			lines = append(lines, strings.TrimSpace(line))
		}
	}
	if len(lines) != 2 {
		t.Fatalf("banner's tokens create lines: %q\n%s", lines, b.String())
	}
	for _, line := range lines {
		line = strings.TrimPrefix(line, "TOKEN=$(")
		env := map[string]string{}
		prefix := regexp.MustCompile(`^((?:[A-Z_]+=(?:'[^']*'|\S*) )*)go run`).FindStringSubmatch(line)
		if prefix == nil {
			t.Fatalf("%q is not a go run with environment settings", line)
		}
		for _, m := range regexp.MustCompile(`([A-Z_]+)=('[^']*'|\S*)`).FindAllStringSubmatch(prefix[1], -1) {
			env[m[1]] = strings.Trim(m[2], "'")
		}
		if v, ok := env["DATABASE_URL"]; !ok || v != "" {
			t.Errorf("%q does not clear DATABASE_URL", line)
		}
		if env["ONCELEDGER_DEV_DIR"] != dir {
			t.Errorf("%q does not name the data dir %q", line, dir)
		}
	}
}

// A dev given an address another process holds (a second dev without
// -health of its own) refuses at once, naming the flag, before it starts
// Postgres or runs a migration.
func TestDevRefusesATakenAddressFirst(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	t.Setenv("DATABASE_URL", "")
	dir := devTempDir(t)
	code, _, errOut := invoke(context.Background(), "", "dev", "-data-dir", dir, "-nats-port", freePort(t),
		"-http", freeAddr(t), "-health", taken.Addr().String())
	if code != 1 || !strings.Contains(errOut, "-health "+taken.Addr().String()+" cannot be listened on") {
		t.Fatalf("dev on a taken health address: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "postgres")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dev set up Postgres before refusing the address: %v", err)
	}
}
