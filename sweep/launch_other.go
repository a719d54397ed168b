//go:build !unix

package sweep

import "os/exec"

// setProcessGroup does nothing where process groups do not exist.
func setProcessGroup(*exec.Cmd) {}

// signalGroup kills the process itself where process groups do not exist.
func signalGroup(cmd *exec.Cmd, _ bool) error { return cmd.Process.Kill() }
