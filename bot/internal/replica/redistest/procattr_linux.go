package redistest

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill the server when the test process
// dies, so a test binary that panics or times out leaves no server behind.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
