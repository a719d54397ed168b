//go:build linux

package sweep

import "syscall"

// setDeathSignal asks the kernel to send the server SIGTERM if the harness
// dies without stopping it (a second Ctrl-C aborts at once), so a GPU
// server is not left running. It reaches the launched process only: a
// shell command should exec the server ("exec vllm serve …").
func setDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGTERM }
