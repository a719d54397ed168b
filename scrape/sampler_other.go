//go:build !unix

package scrape

import "os/exec"

// setProcessGroup does nothing where there are no process groups.
func setProcessGroup(*exec.Cmd) {}

// interruptGroup kills the process: there is no interrupt to send it.
func interruptGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() }

// killGroup kills the process.
func killGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
