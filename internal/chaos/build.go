package chaos

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// Build compiles the two binaries the suite runs into dir: `onceledger`
// with the fault points compiled in (-tags faults) and the natsd helper.
// It needs the Go toolchain and runs from the module that holds this
// package, found with `go env GOMOD` from the working directory.
func Build(ctx context.Context, dir string) (worker, natsd string, err error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == "/dev/null" {
		return "", "", fmt.Errorf("build: not inside the onceledger module (go env GOMOD is %q)", gomod)
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-tags", "faults", "-o", dir+string(filepath.Separator),
		"./cmd/onceledger", "./internal/chaos/cmd/natsd")
	cmd.Dir = filepath.Dir(gomod)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("go build -tags faults: %w\n%s", err, out)
	}
	return filepath.Join(dir, "onceledger"), filepath.Join(dir, "natsd"), nil
}
