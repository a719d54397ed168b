//go:build linux

package sweep

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// TestIssue11ParentDeath (issue 11, item 10): when bench itself is killed
// (SIGKILL, so nothing of it runs), the kernel's parent-death signal went
// to the shell running a string command, which died and left the server
// running with its GPU and port. The shell now execs the server, so the
// signal reaches the server. The test binary stands in for bench ("parent"
// mode), launching another as the server.
func TestIssue11ParentDeath(t *testing.T) {
	t.Parallel()
	parent := exec.Command(os.Args[0], t.TempDir())
	parent.Env = append(os.Environ(), testServerEnv+"=parent")
	parent.Stderr = os.Stderr
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	defer parent.Process.Kill()
	var server int
	sc := bufio.NewScanner(out)
	if !sc.Scan() {
		t.Fatalf("the parent printed nothing: %v", sc.Err())
	}
	if _, err := fmt.Sscanf(sc.Text(), "server pid %d", &server); err != nil {
		t.Fatalf("parent said %q", sc.Text())
	}
	defer syscall.Kill(-server, syscall.SIGKILL) // the server's group, if the test fails
	if err := parent.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	if !eventually(func() bool { return !groupAlive(server) }) {
		t.Fatalf("the server (process group %d) outlived its killed parent", server)
	}
}
