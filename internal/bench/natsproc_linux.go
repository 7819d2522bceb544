package bench

import (
	"os/exec"
	"syscall"
)

// setDeathSignal has the kernel kill the child when the bench dies, also
// by SIGKILL, so that no NATS server outlives it.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
