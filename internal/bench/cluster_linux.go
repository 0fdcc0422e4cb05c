package bench

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes a server or agent started for a run get SIGTERM when
// the benchmark process dies (killed, or crashed), so that none is left
// listening or reconnecting.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
