package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestBenchUsageErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, args := range [][]string{
		{"bench", "-format", "yaml"},
		{"bench", "-nats-sync", "sometimes"},
		{"bench", "-commands", "0"},
		{"bench", "-companies", "0"},
		{"bench", "-soak", "-1"},
		{"bench", "-soak-rounds", "0"},
		{"bench", "-soak", "5", "-soak-rounds", "10"},
		{"bench", "-commands", "10", "-payments", "21"}, // more than the 20 invoices to pay
		{"bench", "extra"},
		{"bench", "-sweep", "100,fast"},
		{"bench", "-sweep", "-50%"},
		{"bench", "-sweep", "100", "-sweep-duration", "10ms"},
		{"bench", "-compare", "/nonexistent/before.json"},
		{"bench", "-against", "/nonexistent/onceledger"},
		{"bench", "-against", "/bin/true", "-rounds", "0"},
	} {
		if code, _, errOut := invoke(ctx, "", args...); code != 2 || !strings.HasPrefix(errOut, "onceledger bench: ") {
			t.Errorf("%v: exit %d, want 2: %s", args, code, errOut)
		}
	}
	code, out, errOut := invoke(ctx, "", "bench", "-h")
	if code != 0 || out != "" || !strings.Contains(errOut, "-prefill") || !strings.Contains(errOut, "-soak") || !strings.Contains(errOut, "-sweep") || strings.Contains(errOut, "bench-nats") {
		t.Errorf("bench -h: exit %d: %s", code, errOut)
	}
	// bench -h and the performance doc give the same run times.
	doc, err := os.ReadFile("../../docs/performance.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, runTime := range []string{"4–5 minutes", "about 2 of them the sweep", "11–22 minutes, most of it the soak (8–10)"} {
		if !strings.Contains(strings.Join(strings.Fields(errOut), " "), runTime) || !strings.Contains(string(doc), runTime) {
			t.Errorf("bench -h and docs/performance.md do not both say %q", runTime)
		}
	}
}

// A tiny run through the CLI: the JSON report is whole and every command
// became exactly one invoice or payment. How fast is not tested.
func TestBenchReportsJSON(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// No sweep: it would run NATS as this binary, which here is the tests.
	args := []string{"bench", "-commands", "100", "-paced", "1s", "-sweep", "0", "-format", "json", "-quiet"}
	if dsn := os.Getenv("DATABASE_URL"); dsn != "" {
		args = append(args, "-database-url", dsn)
	}
	code, out, errOut := invoke(ctx, "", args...)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	var rep struct {
		Invocation   string `json:"invocation"`
		CommandsSent int    `json:"commands_sent"`
		Invoices     int    `json:"invoices"`
		PaymentsSent int    `json:"payments_sent"`
		Payments     int    `json:"payments"`
		Phases       []struct {
			Name string  `json:"name"`
			Rate float64 `json:"commands_per_second"`
		} `json:"phases"`
		Figures []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
		} `json:"figures"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, out)
	}
	// Peaks of invoices (group commit, reference), the payments paying 100
	// of them, the latency phase.
	if len(rep.Phases) != 4 || rep.CommandsSent < 200 || rep.Invoices != rep.CommandsSent || len(rep.Figures) == 0 ||
		rep.PaymentsSent != 100 || rep.Payments != 100 {
		t.Fatalf("report: %+v", rep)
	}
	for _, p := range rep.Phases {
		if p.Rate <= 0 {
			t.Errorf("phase %s: %g commands/s", p.Name, p.Rate)
		}
	}
	if !strings.HasPrefix(rep.Invocation, "onceledger bench -commands 100") {
		t.Errorf("invocation %q", rep.Invocation)
	}
}

// bench-nats, the NATS process of a sweep, serves JetStream on the URL it
// prints until it is stopped, and is not listed among the commands.
func TestBenchNATSServesUntilStopped(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, w := io.Pipe()
	done := make(chan int, 1)
	go func() {
		defer w.Close()
		done <- run(ctx, []string{"bench-nats", "-store", t.TempDir()}, strings.NewReader(""), w, io.Discard)
	}()
	url, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("bench-nats printed no URL: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	nc, err := nats.Connect(strings.TrimSpace(url))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	infoCtx, infoCancel := context.WithTimeout(ctx, 10*time.Second)
	defer infoCancel()
	if _, err := js.AccountInfo(infoCtx); err != nil {
		t.Fatalf("JetStream on %s: %v", url, err)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("bench-nats exited %d when stopped", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("bench-nats still running 30s after it was stopped")
	}
	if code, _, errOut := invoke(context.Background(), "", "bench-nats"); code == 0 {
		t.Errorf("bench-nats without -store: exit 0 %s", errOut)
	}
	if _, out, _ := invoke(context.Background(), "", "-h"); strings.Contains(out, "bench-nats") {
		t.Errorf("usage lists bench-nats:\n%s", out)
	}
}

// bench -against runs two binaries' benches alternately and prints their
// figures side by side, as a user would run it (a process of its own,
// whose runs are processes of their own): here this binary against itself
// posing as an older release that has no rate sweep (its bench -h lists
// no -sweep, and it sweeps nothing), whose latency at the sweep's rate is
// measured in a run of its own. Without a latency phase (-paced 0) the
// sweep's rate is the only paced phase of either binary.
func TestBenchAgainstAnotherBinary(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	older := filepath.Join(t.TempDir(), "onceledger-older")
	script := "#!/bin/sh\n" +
		"if [ \"$1\" = bench ] && [ \"$2\" = -h ]; then '" + os.Args[0] + "' bench -h 2>&1 | grep -v -- -sweep; exit 0; fi\n" +
		"exec '" + os.Args[0] + "' \"$@\" -sweep=0\n"
	if err := os.WriteFile(older, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"bench", "-against", older, "-rounds", "1", "-commands", "100", "-reference-commands", "50",
		"-payments", "0", "-paced", "0", "-sweep", "50%", "-sweep-duration", "1s"}
	if dsn := os.Getenv("DATABASE_URL"); dsn != "" {
		args = append(args, "-database-url", dsn)
	}
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), asBinaryEnv+"=1")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench -against: %v\n%s\n%s", err, stderr.String(), stdout.String())
	}
	out := stdout.String()
	for _, want := range []string{"1 rounds, alternately", "this ÷ against", "invoice.create end to end, group commit", "publish→result p99",
		"(against ran without -sweep -sweep-duration, which it does not know)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Each of these lines holds a value of each binary and their ratio.
	for _, figure := range []string{"invoice.create end to end, group commit", "sweep 50%: publish→result p99", "sweep 50%: commit→webhook p99", "sweep 50%: commands/s done"} {
		found := false
		for _, line := range strings.Split(out, "\n") {
			if !strings.HasPrefix(line, figure) {
				continue
			}
			found = true
			fields := strings.Fields(line)
			ratio, err := strconv.ParseFloat(fields[len(fields)-1], 64)
			if err != nil || ratio <= 0 {
				t.Errorf("%s: ratio in %q: %v", figure, line, err)
			}
		}
		if !found {
			t.Errorf("output lacks %q beside the older binary's:\n%s", figure, out)
		}
	}
	if strings.Count(stderr.String(), "bench: round 1 of 1") != 2 {
		t.Errorf("stderr does not announce both runs:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), older+" at 50%:") {
		t.Errorf("stderr does not announce the older binary's run at 50%% of its peak:\n%s", stderr.String())
	}
}
