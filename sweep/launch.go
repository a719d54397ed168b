package sweep

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/servebench/servebench/internal/loopback"
)

// Launcher timing: how often readiness is polled and how long one poll may
// take.
const (
	readyPollInterval = 250 * time.Millisecond
	readyPollTimeout  = 2 * time.Second
	logTailBytes      = 2048 // of the server's log, quoted in a start failure
)

// ErrExited is returned (wrapped) by WaitReady when the server process
// ended before it was ready.
var ErrExited = errors.New("server exited")

// process is a launched server: a command started in its own process group
// with its output in a log file. Stop ends the whole group.
type process struct {
	cmd     *exec.Cmd
	logPath string
	log     *os.File
	done    chan struct{} // closed when the process has been waited for
	waitErr error         // the exit status; read after done is closed
}

// launch starts args (argv) with env as its whole environment, stdout and
// stderr appended to logPath, in a new process group. It does not wait for
// readiness (see WaitReady). The process is not tied to ctx: call Stop.
func launch(args, env []string, logPath string) (*process, error) {
	if len(args) == 0 || args[0] == "" {
		return nil, errors.New("start server: empty command")
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start server: %w", err)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Stdin = nil
	setProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start server %s: %w", args[0], err)
	}
	p := &process{cmd: cmd, logPath: logPath, log: logf, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Servers is the set of servers a sweep has running (Options.Servers), for
// a program that must exit at once: Kill ends them all. The zero value is
// ready to use. It is safe for concurrent use: Kill is meant to be called
// from a signal handler's goroutine while Execute runs.
type Servers struct {
	mu      sync.Mutex
	running map[*process]bool
	killed  bool // Kill was called: a server launched later is killed at once
}

func (s *Servers) add(p *process) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.killed {
		_ = signalGroup(p.cmd, true)
		return
	}
	if s.running == nil {
		s.running = map[*process]bool{}
	}
	s.running[p] = true
}

func (s *Servers) remove(p *process) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.running, p)
}

// Kill sends SIGKILL to the process group of every running server, and of
// any launched after it, and returns the number of groups it signalled. It
// does not wait: the kernel ends the processes whether or not the caller
// is still there to reap them. A server stopped by Kill gives its run no
// summary; Kill is for abandoning a sweep, not for ending one cleanly
// (cancel Execute's context for that).
func (s *Servers) Kill() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killed = true
	n := 0
	for p := range s.running {
		if signalGroup(p.cmd, true) == nil {
			n++
		}
	}
	return n
}

// Pid is the process id (and process group id) of the server.
func (p *process) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended, and how.
func (p *process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.waitErr
	default:
		return false, nil
	}
}

// WaitReady polls url until it answers 2xx, the process exits (ErrExited),
// timeout passes or ctx is done. The error quotes the end of the log. The
// URL must be one policy allows, and so must every address it resolves to;
// a redirect is an answer that is not 2xx, never followed, since it could
// lead the poll anywhere.
func (p *process) WaitReady(ctx context.Context, url string, timeout time.Duration, policy loopback.Policy) error {
	if err := policy.CheckURL(url); err != nil {
		return fmt.Errorf("ready_url %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hc := readyClient(policy)
	tick := time.NewTicker(readyPollInterval)
	defer tick.Stop()
	var last error
	for {
		if ok, err := poll(ctx, hc, url); ok {
			return nil
		} else if err != nil && ctx.Err() == nil {
			last = err
		}
		select {
		case <-p.done:
			return fmt.Errorf("%w before it was ready (%s)%s", ErrExited, exitStatus(p.waitErr), p.logTail())
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("server not ready at %s after %s (last poll: %v)%s", url, timeout, last, p.logTail())
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// readyClient is the readiness poll's client: no proxy, no kept-alive
// connection, dials only where policy allows, and no redirect followed.
func readyClient(policy loopback.Policy) *http.Client {
	dialer := &net.Dialer{Timeout: readyPollTimeout, Control: policy.DialControl()}
	return &http.Client{
		Timeout:       readyPollTimeout,
		Transport:     &http.Transport{DisableKeepAlives: true, Proxy: nil, DialContext: dialer.DialContext},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func poll(ctx context.Context, hc *http.Client, url string) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return false, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return true, nil
}

// stopped is how a server ended.
type stopped struct {
	Status string // the process's end: "exit status 1", "signal: terminated", …
	Early  bool   // it had exited on its own before Stop was called
	Forced bool   // it outlived the grace period and was killed
}

// Stop asks the process group to end (SIGTERM), waits up to grace for the
// server process, then kills the group (SIGKILL), which also removes any
// process of the group still running. The error is not nil only if the
// process survived SIGKILL. Call Stop exactly once.
func (p *process) Stop(grace time.Duration) (stopped, error) {
	defer p.log.Close()
	var st stopped
	select {
	case <-p.done:
		st.Early = true
	default:
		_ = signalGroup(p.cmd, false)
		t := time.NewTimer(grace)
		select {
		case <-p.done:
		case <-t.C:
			st.Forced = true
		}
		t.Stop()
	}
	// Stragglers of the group (children that outlived their parent) are
	// killed in every case; ESRCH (no such group) is the normal outcome.
	_ = signalGroup(p.cmd, true)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		return st, fmt.Errorf("server pid %d survived SIGKILL for 10s", p.Pid())
	}
	st.Status = exitStatus(p.waitErr)
	return st, nil
}

// logTail returns the end of the server's log, indented, for messages.
func (p *process) logTail() string {
	data, err := os.ReadFile(p.logPath)
	if err != nil || len(bytes.TrimSpace(data)) == 0 {
		return " (empty log " + p.logPath + ")"
	}
	if len(data) > logTailBytes {
		data = data[len(data)-logTailBytes:]
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return "; end of " + p.logPath + ":\n    " + strings.Join(lines, "\n    ")
}

func exitStatus(err error) string {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return "exit status 0"
	case errors.As(err, &ee):
		return ee.ProcessState.String()
	}
	return err.Error()
}

// ErrPortTaken is what errors.Is finds in checkFree's refusal.
var ErrPortTaken = errors.New("port already served")

// checkFree fails when something already accepts connections at the host
// and port of each URL (the server's base URL), before the server is
// launched: it would answer the readiness poll and take the load for the
// launched server, which would fail to bind and exit unnoticed. Only a
// connection accepted counts; a refusal or a timeout leaves the port to
// the server. (A ready_url elsewhere, a health sidecar, is not checked.)
func checkFree(policy loopback.Policy, urls ...string) error {
	seen := map[string]bool{}
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			continue
		}
		port := u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
		addr := net.JoinHostPort(u.Hostname(), port)
		if seen[addr] {
			continue
		}
		seen[addr] = true
		d := net.Dialer{Timeout: readyPollTimeout, Control: policy.DialControl()}
		if c, err := d.Dial("tcp", addr); err == nil {
			c.Close()
			return fmt.Errorf("%w: something already accepts connections at %s before the server is launched: it would answer "+
				"for the launched server, which could not bind the port (stop it, or let the sweep pick a free port: sweep.server.port: 0)",
				ErrPortTaken, addr)
		}
	}
	return nil
}

// freePort returns a TCP port that was free on 127.0.0.1 a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	return strconv.Atoi(port)
}
