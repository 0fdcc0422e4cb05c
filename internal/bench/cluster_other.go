//go:build !linux

package bench

import "os/exec"

// dieWithParent does nothing where the kernel has no parent-death signal:
// the servers and agents of a run are stopped when it ends or is
// interrupted.
func dieWithParent(cmd *exec.Cmd) {}
