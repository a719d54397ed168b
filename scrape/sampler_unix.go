//go:build unix

package scrape

import (
	"os/exec"
	"syscall"
)

// setProcessGroup starts cmd as the leader of a new process group, so
// the sampler and whatever it starts are signalled together.
func setProcessGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// interruptGroup sends SIGINT to cmd's group: nvidia-smi's loop ends on
// Ctrl+C.
func interruptGroup(cmd *exec.Cmd) { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) }

// killGroup sends SIGKILL to cmd's group.
func killGroup(cmd *exec.Cmd) { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
