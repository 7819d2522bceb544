package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/onceledger/onceledger/internal/harness/testenv"
)

// readmeStep is what one command of the README's Try it must answer.
type readmeStep struct {
	// command is how the command starts, as the README writes it.
	command string
	// check looks at its exit status (or HTTP status) and output.
	check func(code int, header http.Header, out string) error
}

// The README's Try it, run as written against dev: each shell command of
// its sh blocks in order (the go run of the CLI in this process, sed with
// the shell, curl as an HTTP request), on a fresh database, each answering
// what the README says it answers. A command added to or dropped from the
// README without its step here fails the test. The block of the nats CLI,
// which is not installed for the tests, is the one not run (logged).
func TestReadmeTryIt(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := string(readme)
	start, end := strings.Index(section, "## Try it"), strings.Index(section, "Under `docker compose`")
	if start < 0 || end < start {
		t.Fatal("README.md has no Try it section ending before Under `docker compose`")
	}
	commands := shellCommands(section[start:end])

	server := testenv.Postgres(t)
	t.Setenv("DATABASE_URL", server)
	// dev keeps its database between runs, as a user's would be: the test
	// drops it (after dev stopped, before the test's own database goes).
	devDatabase := "onceledger_t_readme_" + fmt.Sprint(time.Now().UnixNano())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, server)
		if err != nil {
			t.Errorf("drop dev's database: %v", err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{devDatabase}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("drop dev's database: %v", err)
		}
	})
	dir := devTempDir(t)
	t.Setenv("ONCELEDGER_DEV_DIR", dir)
	tmp := t.TempDir()
	httpAddr, healthAddr, natsPort := freeAddr(t), freeAddr(t), freePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	devCtx, stopDev := context.WithCancel(ctx)
	done := make(chan int, 1)
	var devErr string
	go func() {
		code, _, errOut := invoke(devCtx, "", "dev", "-database", devDatabase,
			"-nats-port", natsPort, "-http", httpAddr, "-health", healthAddr, "-log-level", "error")
		devErr = errOut
		done <- code
		close(done) // a wait that took the code leaves 0 to the next
	}()
	defer func() {
		stopDev()
		if code := <-done; code != 0 {
			t.Errorf("dev exited %d: %s", code, devErr)
		}
	}()
	st := waitDevState(ctx, t, dir, os.Getpid(), done, func() string { return devErr })
	waitServing(t, st.HealthURL+"/readyz", nil, nil)
	// The README's addresses are dev's defaults; this dev has free ports.
	addresses := strings.NewReplacer("127.0.0.1:4223", "127.0.0.1:"+natsPort, "http://127.0.0.1:8080", st.HTTPURL,
		"/tmp/", tmp+"/", "@examples/", "@../../examples/", " examples/", " ../../examples/")
	// The README unsets DATABASE_URL for the CLI in the HTTP steps (or
	// points it at dev's database): dev's is found without it.
	t.Setenv("DATABASE_URL", "")

	invoice := func(number string, sequence int, replayed bool) func(int, http.Header, string) error {
		return func(code int, _ http.Header, out string) error {
			var res struct {
				Status   string `json:"status"`
				Replayed bool   `json:"replayed"`
				Result   struct {
					Number   string `json:"number"`
					Sequence int    `json:"sequence"`
					Gross    string `json:"gross"`
				} `json:"result"`
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 {
				return fmt.Errorf("exit %d, %v", code, err)
			}
			if res.Status != "ok" || res.Replayed != replayed || res.Result.Number != number || res.Result.Sequence != sequence || res.Result.Gross != "363.00" {
				return fmt.Errorf("not invoice %s (sequence %d, replayed %v, gross 363.00)", number, sequence, replayed)
			}
			return nil
		}
	}
	httpReplay := func(status int, number string) func(int, http.Header, string) error {
		return func(code int, h http.Header, out string) error {
			if code != status || h.Get("Idempotent-Replayed") != "true" || !strings.Contains(out, number) {
				return fmt.Errorf("HTTP %d, Idempotent-Replayed %q, want %d, replayed, with %q", code, h.Get("Idempotent-Replayed"), status, number)
			}
			return nil
		}
	}
	steps := []readmeStep{
		{"export NATS_URL=", nil},
		{"go run ./cmd/onceledger publish -company acme -command company.create", func(code int, _ http.Header, out string) error {
			if code != 0 || !strings.Contains(out, `"status": "ok"`) && !strings.Contains(out, `"status":"ok"`) {
				return fmt.Errorf("exit %d", code)
			}
			return nil
		}},
		{"go run ./cmd/onceledger publish -company acme -command invoice.create -key order-1041-invoice examples/invoice.json", invoice("INV-2026-000001", 1, false)},
		{"sed 's/\"100.00\"/\"120.00\"/' examples/invoice.json > /tmp/invoice-changed.json", nil},
		{"go run ./cmd/onceledger publish -company acme -command invoice.create -key order-1041-invoice /tmp/invoice-changed.json", func(code int, _ http.Header, out string) error {
			if code != 1 || !strings.Contains(out, "idempotency_key_reused") || !strings.Contains(out, "Idempotency-Key was already used with a different request payload.") {
				return fmt.Errorf("exit %d, want 1 with idempotency_key_reused", code)
			}
			return nil
		}},
		{"sed 's/order-1041/order-1042/' examples/invoice.json |", func(code int, h http.Header, out string) error {
			return invoice("INV-2026-000002", 2, false)(code, h, out)
		}},
		{"TOKEN=$(go run ./cmd/onceledger tokens create", func(code int, _ http.Header, out string) error {
			if code != 0 || !strings.HasPrefix(out, "olt_") {
				return fmt.Errorf("exit %d", code)
			}
			return nil
		}},
		{"API=", nil},
		{"curl -i $API/v1/companies/create", httpReplay(http.StatusCreated, `"id":"acme"`)},
		{"curl -i $API/v1/sales/invoices/create -H \"Authorization: Bearer $TOKEN\" -H 'Idempotency-Key: order-1041-invoice' --data-binary @examples/invoice.json", httpReplay(http.StatusCreated, `"number":"INV-2026-000001"`)},
		{"curl -i $API/v1/sales/invoices/create -H \"Authorization: Bearer $TOKEN\" -H 'Idempotency-Key: order-1041-invoice' --data-binary @/tmp/invoice-changed.json", func(code int, h http.Header, out string) error {
			if code != http.StatusUnprocessableEntity || h.Get("Content-Type") != "application/problem+json" || !strings.Contains(out, "Idempotency-Key was already used with a different request payload.") {
				return fmt.Errorf("HTTP %d %s, want 422 application/problem+json with the reused-key detail", code, h.Get("Content-Type"))
			}
			return nil
		}},
		{"curl -s \"$API/v1/sales/invoices?limit=50\"", func(code int, _ http.Header, out string) error {
			if code != http.StatusOK || !strings.Contains(out, `"number":"INV-2026-000001"`) || !strings.Contains(out, `"number":"INV-2026-000002"`) || !strings.Contains(out, `"next":null`) {
				return fmt.Errorf("HTTP %d, want both invoices on the one page", code)
			}
			return nil
		}},
	}

	vars := map[string]string{}
	ran := 0
	for _, c := range commands {
		if strings.HasPrefix(c, "nats ") {
			t.Logf("not run (the nats CLI is not installed for the tests): %s", c)
			continue
		}
		if ran == len(steps) {
			t.Fatalf("the README runs %q after the %d commands this test knows: add its step", c, len(steps))
		}
		step := steps[ran]
		ran++
		if !strings.HasPrefix(c, step.command) {
			t.Fatalf("command %d of the README is %q, this test's step is %q: bring them together", ran, c, step.command)
		}
		line := addresses.Replace(c)
		for name, v := range vars {
			line = strings.ReplaceAll(line, "$"+name, v)
		}
		code, header, out := runReadmeCommand(ctx, t, line, vars)
		if step.check != nil {
			if err := step.check(code, header, out); err != nil {
				t.Fatalf("README: %s\n%v; it answered:\n%s", c, err, out)
			}
		}
	}
	if ran != len(steps) {
		t.Fatalf("the README ran %d commands, this test has %d steps", ran, len(steps))
	}
}

// shellCommands are the commands of the sh blocks of a README section,
// continuation lines joined, comments dropped.
func shellCommands(section string) []string {
	var out []string
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(section, -1)
	for _, b := range blocks {
		var cur string
		for _, line := range strings.Split(b[1], "\n") {
			if i := strings.Index(line, "  #"); i >= 0 {
				line = line[:i]
			}
			line = strings.TrimSpace(line)
			if line == "" {
				continue
			}
			switch {
			case strings.HasSuffix(line, "\\"):
				cur += strings.TrimSuffix(line, "\\")
				continue
			case strings.HasSuffix(line, "|"):
				cur += line + " "
				continue
			}
			out = append(out, strings.Join(strings.Fields(cur+line), " "))
			cur = ""
		}
	}
	return out
}

// runReadmeCommand runs one command of the README: an assignment (of an
// address, or of a command's output), the CLI, sed through the shell, or
// curl as an HTTP request. Its code is the exit status, or the HTTP
// status of a curl.
func runReadmeCommand(ctx context.Context, t *testing.T, line string, vars map[string]string) (int, http.Header, string) {
	t.Helper()
	cli := "go run ./cmd/onceledger "
	switch {
	case strings.HasPrefix(line, "export "):
		name, value, _ := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		t.Setenv(name, value)
		return 0, nil, ""
	case regexp.MustCompile(`^[A-Z]+=\$\(`).MatchString(line):
		name, rest, _ := strings.Cut(line, "=$(")
		code, out, errOut := invoke(ctx, "", strings.Fields(strings.TrimPrefix(strings.TrimSuffix(rest, ")"), cli))...)
		vars[name] = strings.TrimSpace(out)
		return code, nil, out + errOut
	case regexp.MustCompile(`^[A-Z]+=`).MatchString(line):
		name, value, _ := strings.Cut(line, "=")
		vars[name] = value
		return 0, nil, ""
	case strings.HasPrefix(line, cli):
		code, out, errOut := invoke(ctx, "", strings.Fields(strings.TrimPrefix(line, cli))...)
		return code, nil, out + errOut
	case strings.HasPrefix(line, "sed "):
		shell, rest, piped := strings.Cut(line, " | ")
		cmd := exec.CommandContext(ctx, "bash", "-c", shell)
		var stdout bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v", shell, err)
		}
		if !piped {
			return 0, nil, stdout.String()
		}
		if !strings.HasPrefix(rest, cli) {
			t.Fatalf("%s: a pipe into something other than the CLI", line)
		}
		code, out, errOut := invoke(ctx, stdout.String(), strings.Fields(strings.TrimPrefix(rest, cli))...)
		return code, nil, out + errOut
	case strings.HasPrefix(line, "curl "):
		return curl(ctx, t, line)
	}
	t.Fatalf("README command %q: this test does not know how to run it", line)
	return 0, nil, ""
}

// curl does what the README's curl lines do: -i or -s, a URL, -H headers,
// --data-binary @file (a POST).
func curl(ctx context.Context, t *testing.T, line string) (int, http.Header, string) {
	t.Helper()
	var args []string
	for _, m := range regexp.MustCompile(`"([^"]*)"|'([^']*)'|(\S+)`).FindAllStringSubmatch(strings.TrimPrefix(line, "curl "), -1) {
		args = append(args, m[1]+m[2]+m[3])
	}
	method, url, headers := http.MethodGet, "", http.Header{}
	var body io.Reader
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-i" || a == "-s":
		case a == "-H":
			i++
			k, v, _ := strings.Cut(args[i], ":")
			headers.Add(strings.TrimSpace(k), strings.TrimSpace(v))
		case a == "--data-binary":
			i++
			b, err := os.ReadFile(strings.TrimPrefix(args[i], "@"))
			if err != nil {
				t.Fatal(err)
			}
			method, body = http.MethodPost, bytes.NewReader(b)
		case strings.HasPrefix(a, "http"):
			url = a
		default:
			t.Fatalf("curl %q: this test does not know %q", line, a)
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = headers
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}
