package scrape

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scrape/profile"
)

// Sampler defaults.
const (
	DefaultSMICommand  = "nvidia-smi"     // SamplerConfig.Command when empty, for nvidia-smi
	DefaultStopTimeout = 2 * time.Second  // SamplerConfig.StopTimeout when zero
	DefaultPollTimeout = 30 * time.Second // SamplerConfig.PollTimeout when zero
	maxSMIStderr       = 4 << 10          // bytes of the sampler's error output kept for messages
	maxAMDSMIOutput    = 16 << 20         // bytes of one amd-smi run's output read
)

// SamplerConfig configures a Sampler.
type SamplerConfig struct {
	// Tool is what the sampler runs: profile.NvidiaSMI (when empty), a
	// loop that nvidia-smi keeps itself (-lms), or profile.AMDSMI,
	// `amd-smi metric … --json` run once per Interval.
	Tool string
	// Command is the program run: a name looked up in Path, or a path.
	// Tool's name when empty.
	Command string
	// Path is the list of directories searched for Command, as the PATH
	// variable writes it; empty searches this process's PATH.
	Path string
	// Interval is the time between samples (nvidia-smi's -lms):
	// DefaultInterval when zero, at least MinInterval.
	Interval time.Duration
	// Epoch is the run's epoch: a sample's offset is its timestamp minus
	// the epoch, on the wall clock (nvidia-smi stamps its rows itself).
	// Required.
	Epoch time.Time
	// Location is the time zone of nvidia-smi's timestamps; nil is this
	// machine's, where the sampler runs. amd-smi's samples are stamped
	// by the sampler: the middle of each run of amd-smi.
	Location *time.Location
	// GPUs restricts sampling to these GPU indexes (nvidia-smi's -i);
	// empty samples every GPU.
	GPUs []string
	// MaxSamples bounds the samples taken: DefaultMaxScrapes when zero.
	MaxSamples int
	// StopTimeout is how long the sampler may take to exit after it is
	// interrupted before it is killed: DefaultStopTimeout when zero.
	StopTimeout time.Duration
	// PollTimeout bounds one run of amd-smi: past it, the run is
	// interrupted (and killed StopTimeout later) and counted as failed.
	// DefaultPollTimeout when zero.
	PollTimeout time.Duration
}

// Sampler runs `nvidia-smi --query-gpu=… --format=csv,nounits -lms N` for
// the length of a run, on the machine the run runs on (the server's, when
// it is local), and turns its rows into GPU samples, as a Scraper turns
// pages; or, for AMD GPUs, runs `amd-smi metric --power --usage
// --mem-usage --json` once per interval (polls never overlap). The
// processes are bounded: interrupted when the run's context ends or
// after MaxSamples samples (an amd-smi run also after PollTimeout),
// killed (with everything they started) when they have not exited
// StopTimeout later, and waited for. Run must be called at most once;
// Warnings is safe to call concurrently with it.
type Sampler struct {
	cfg     SamplerConfig
	path    string // the resolved program
	started atomic.Bool

	mu       sync.Mutex
	warnings []error
}

// NewSampler validates cfg, applies its defaults and finds the program.
// A missing program fails here, so the run can say so at its start.
func NewSampler(cfg SamplerConfig) (*Sampler, error) {
	switch cfg.Tool {
	case "":
		cfg.Tool = profile.NvidiaSMI
	case profile.NvidiaSMI, profile.AMDSMI:
	default:
		return nil, fmt.Errorf("gpu sampler: want %s or %s, got %q", profile.NvidiaSMI, profile.AMDSMI, cfg.Tool)
	}
	if cfg.Command == "" {
		cfg.Command = cfg.Tool
	}
	if cfg.PollTimeout <= 0 {
		cfg.PollTimeout = DefaultPollTimeout
	}
	switch {
	case cfg.Interval == 0:
		cfg.Interval = DefaultInterval
	case cfg.Interval < MinInterval:
		return nil, fmt.Errorf("gpu sampler: interval %v is shorter than %v", cfg.Interval, MinInterval)
	}
	if cfg.Epoch.IsZero() {
		return nil, errors.New("gpu sampler: Epoch is required")
	}
	if cfg.MaxSamples <= 0 {
		cfg.MaxSamples = DefaultMaxScrapes
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = DefaultStopTimeout
	}
	for _, g := range cfg.GPUs {
		if _, err := strconv.Atoi(g); err != nil {
			return nil, fmt.Errorf("gpu sampler: GPU %q is not an index", g)
		}
	}
	path, err := lookPath(cfg.Command, cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("gpu sampler: %w", err)
	}
	return &Sampler{cfg: cfg, path: path}, nil
}

// lookPath finds name in the directories of pathList (this process's
// PATH when empty), or checks a name holding a slash as a path.
func lookPath(name, pathList string) (string, error) {
	if strings.ContainsRune(name, filepath.Separator) || strings.ContainsRune(name, '/') {
		if isExecutable(name) {
			return name, nil
		}
		return "", fmt.Errorf("%s is not an executable file", name)
	}
	if pathList == "" {
		pathList = os.Getenv("PATH")
	}
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" {
			continue
		}
		if p := filepath.Join(dir, name); isExecutable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found on PATH (is this the GPU server's machine? write its output to a file there and give scrape.gpu.file)", name)
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// Warnings returns the non-fatal problems seen so far: the program's
// failure, rows it could not read.
func (s *Sampler) Warnings() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.warnings...)
}

func (s *Sampler) warn(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.warnings = append(s.warnings, err)
}

// Run samples until ctx ends, MaxSamples samples were taken or the
// program exits, and calls emit with each sample from one goroutine. It
// returns when the program has exited and its output is read. A program
// that fails is a warning, not an error; when it refuses the newer
// clocks_event_reasons field names (drivers before 535), it is run again
// with the older ones. Run returns an error only when called twice.
func (s *Sampler) Run(ctx context.Context, emit func(results.Sample)) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("gpu sampler: Run called twice")
	}
	if s.cfg.Tool == profile.AMDSMI {
		s.poll(ctx, emit)
		return nil
	}
	var index uint64
	for _, query := range []string{profile.SMIQuery, profile.SMIQueryOld} {
		out, err := s.once(ctx, query, &index, emit)
		if err == nil || ctx.Err() != nil {
			return nil
		}
		if index == 0 && strings.Contains(out, "is not a valid field") && query == profile.SMIQuery {
			continue
		}
		s.warn(err)
		return nil
	}
	return nil
}

// once runs the program with one query; it returns the start of its
// error output and the reason it stopped early, or nil when it stopped
// because the run ended or the samples ran out.
func (s *Sampler) once(ctx context.Context, query string, index *uint64, emit func(results.Sample)) (string, error) {
	args := []string{"--query-gpu=" + query, "--format=csv,nounits", "-lms", strconv.FormatInt(s.cfg.Interval.Milliseconds(), 10)}
	if len(s.cfg.GPUs) > 0 {
		args = append(args, "-i", strings.Join(s.cfg.GPUs, ","))
	}
	cmd := exec.Command(s.path, args...)
	// Our own pipe rather than StdoutPipe: the read may outlive Wait
	// by a deadline, which StdoutPipe's documented use forbids.
	pr, pw, err := os.Pipe()
	if err != nil {
		return "", fmt.Errorf("gpu sampler: %w", err)
	}
	defer pr.Close()
	cmd.Stdout = pw
	var stderr limitedBuffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = s.cfg.StopTimeout
	setProcessGroup(cmd)
	err = cmd.Start()
	pw.Close()
	if err != nil {
		return "", fmt.Errorf("gpu sampler: start %s: %w", s.path, err)
	}
	full := make(chan struct{})
	read := make(chan error, 1)
	var head limitedBuffer
	go func() { read <- s.read(io.TeeReader(pr, &head), index, full, emit) }()

	stopped, done := false, false
	var readErr error
	select {
	case <-ctx.Done():
		stopped = true
	case <-full:
		stopped = true
	case readErr = <-read:
		done = true
	}
	// Interrupt the program (and whatever it started), and kill them if
	// they have not gone StopTimeout later; both are no-ops once it exited.
	interruptGroup(cmd)
	kill := time.AfterFunc(s.cfg.StopTimeout, func() { killGroup(cmd) })
	waitErr := cmd.Wait()
	kill.Stop()
	// What it started and left behind (a child that ignores the
	// interrupt, as a background job of a shell does) goes with it.
	killGroup(cmd)
	if !done {
		// A process it started and that left its group may hold the pipe
		// open: the read is bounded too.
		_ = pr.SetReadDeadline(time.Now().Add(s.cfg.StopTimeout))
		readErr = <-read
	}
	if stopped {
		return "", nil
	}
	msg := strings.TrimSpace(stderr.String() + " " + head.String())
	name := filepath.Base(s.path)
	switch {
	case readErr != nil:
		return msg, fmt.Errorf("gpu sampler %s: %w%s", name, readErr, excerpt([]byte(msg)))
	case waitErr != nil:
		return msg, fmt.Errorf("gpu sampler %s: %w%s", name, waitErr, excerpt([]byte(msg)))
	}
	return msg, fmt.Errorf("gpu sampler %s: exited before the run ended", name)
}

// read turns the program's rows into samples until its output ends or
// MaxSamples samples were emitted (then it closes full and drains the rest,
// so the program never blocks on a full pipe).
func (s *Sampler) read(r io.Reader, index *uint64, full chan<- struct{}, emit func(results.Sample)) error {
	br := bufio.NewReader(r)
	defer io.Copy(io.Discard, br) //nolint:errcheck // draining only
	sr, err := NewSMIReader(br, s.cfg.Location)
	if err != nil {
		return err
	}
	for {
		at, rd, err := sr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		off := at.Sub(s.cfg.Epoch)
		emit(results.Sample{Index: *index, Target: filepath.Base(s.path), Start: off, At: off, OK: true, Reading: rd})
		*index++
		if *index >= uint64(s.cfg.MaxSamples) {
			s.warn(fmt.Errorf("gpu sampler: stopped after %d samples", s.cfg.MaxSamples))
			close(full)
			return nil
		}
	}
}

// limitedBuffer keeps the first max bytes written to it (maxSMIStderr
// when max is zero), and whether more came.
type limitedBuffer struct {
	mu   sync.Mutex
	b    bytes.Buffer
	max  int
	over bool
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	limit := l.max
	if limit == 0 {
		limit = maxSMIStderr
	}
	room := limit - l.b.Len()
	if room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	if len(p) > room {
		l.over = true
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
