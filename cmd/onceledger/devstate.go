package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

const (
	// devLockFile is held (flock) by the dev that owns the data dir for as
	// long as it runs. The kernel drops the lock when the process dies, so a
	// killed dev never leaves a stale lock behind.
	devLockFile = "dev.lock"
	// devStateFile says where the running dev's servers are, for a second
	// dev's refusal and for the CLI verbs.
	devStateFile = "dev.json"
)

// devState is what a running dev publishes in its data dir.
type devState struct {
	PID         int       `json:"pid"`
	DataDir     string    `json:"data_dir"`
	NATSURL     string    `json:"nats_url"`
	HTTPURL     string    `json:"http_url,omitempty"`
	HealthURL   string    `json:"health_url,omitempty"`
	DatabaseURL string    `json:"database_url"`
	Started     time.Time `json:"started"`
}

// defaultDevDir is where dev keeps its data unless told otherwise. As root,
// Postgres runs as the postgres account, which cannot enter root's 0700
// home; rather than open the home directory up, dev's data then lives in a
// directory of its own under the temp dir.
func defaultDevDir() string {
	if os.Geteuid() == 0 {
		return filepath.Join(os.TempDir(), "onceledger-dev-"+strconv.Itoa(os.Geteuid()))
	}
	if cache, err := os.UserCacheDir(); err == nil {
		return filepath.Join(cache, "onceledger", "dev")
	}
	return filepath.Join(os.TempDir(), "onceledger-dev-"+strconv.Itoa(os.Geteuid()))
}

func devDir() string { return envOr("ONCELEDGER_DEV_DIR", defaultDevDir()) }

// makeDevDir creates dir for dev's data. A directory dev creates as root may
// be entered (not listed) by the postgres account that runs the cluster in
// it; a directory that already exists keeps its mode, and must belong to
// this user, since in a shared temp dir anyone could have made it first.
func makeDevDir(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
			return fmt.Errorf("data dir: %w", err)
		}
		mode := os.FileMode(0o700)
		if os.Geteuid() == 0 {
			mode = 0o711
		}
		if err := os.Mkdir(dir, mode); err != nil {
			return fmt.Errorf("data dir: %w", err)
		}
		// Mkdir's mode is filtered by the umask.
		return os.Chmod(dir, mode)
	}
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("data dir %s is not a directory", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("data dir %s belongs to uid %d, not to this user (uid %d); choose another with -data-dir", dir, st.Uid, os.Geteuid())
	}
	return nil
}

// lockDevDir makes this process the only dev using dir, or says which dev
// already is. The returned file holds the lock until it is closed.
func lockDevDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, devLockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data dir lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("data dir lock: %w", err)
		}
		running := "it is still starting"
		if st, err := readDevState(dir); err == nil {
			running = fmt.Sprintf("pid %d; NATS %s, HTTP %s, health %s, Postgres %s", st.PID, st.NATSURL, orNone(st.HTTPURL), orNone(st.HealthURL), redact(st.DatabaseURL))
		}
		return nil, fmt.Errorf("another onceledger dev is running on data dir %s (%s); "+
			"use that one, stop it first, or run a second one apart with its own -data-dir, -nats-port, -http and -health", dir, running)
	}
	return f, nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// writeDevState replaces the state file in one step, so a reader never sees
// half of it. It is readable by its owner only: the URL may hold a password.
func writeDevState(dir string, st devState) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, devStateFile+".*")
	if err != nil {
		return fmt.Errorf("dev state: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("dev state: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("dev state: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, devStateFile)); err != nil {
		return fmt.Errorf("dev state: %w", err)
	}
	return nil
}

func readDevState(dir string) (devState, error) {
	var st devState
	b, err := os.ReadFile(filepath.Join(dir, devStateFile))
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("%s: %w", filepath.Join(dir, devStateFile), err)
	}
	return st, nil
}

// runningDev returns the state of the dev running on the default data dir
// (or ONCELEDGER_DEV_DIR). A state file whose process is gone (dev was
// killed) does not count: its URLs point at servers that went with it.
func runningDev() (devState, bool) {
	st, err := readDevState(devDir())
	if err != nil || st.PID <= 0 || st.DatabaseURL == "" {
		return devState{}, false
	}
	if err := syscall.Kill(st.PID, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return devState{}, false
	}
	return st, true
}

// databaseNote ends the usage of the verbs that read the database through
// orDevDatabase.
const databaseNote = `Needs the database: DATABASE_URL (or -database-url), or, when neither is
set, that of the onceledger dev running on the default data dir
(ONCELEDGER_DEV_DIR).
`

// orDevDatabase is dsn, or, when no database was named, the database of
// the onceledger dev running on this machine: dev's Postgres port is not
// fixed, so a URL exported earlier may no longer be right. It says so on
// stderr, which keeps stdout (a token, a report) as it was.
func orDevDatabase(dsn string, stderr io.Writer) string {
	if dsn != "" {
		return dsn
	}
	st, ok := runningDev()
	if !ok {
		return ""
	}
	fmt.Fprintf(stderr, "onceledger: DATABASE_URL is not set; using the database of onceledger dev (pid %d, data dir %s): %s\n",
		st.PID, st.DataDir, redact(st.DatabaseURL))
	return st.DatabaseURL
}
