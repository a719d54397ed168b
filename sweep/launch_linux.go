//go:build linux

package sweep

import "syscall"

// setDeathSignal asks the kernel to send the server SIGTERM if the harness
// dies without stopping it (killed with SIGKILL, or crashed), so a GPU
// server is not left running. (An abort, a second Ctrl-C, kills the
// process group itself: see Servers.) The signal reaches the launched
// process only, and survives exec: a string command that is one command
// is exec'd by the shell (scenario.SweepServer.Render), so the launched
// process is the server; one of several commands should exec its server
// ("cd /m && exec vllm serve …").
func setDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGTERM }
