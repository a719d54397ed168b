package scrape

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scrape/profile"
)

// maxPollFailures is how many amd-smi runs in a row may fail before the
// sampler gives up.
const maxPollFailures = 3

// poll runs amd-smi once per interval until ctx ends, MaxSamples samples
// were taken or maxPollFailures runs in a row failed. A run that takes
// longer than the interval delays the next: runs never overlap. Failed
// runs are warnings: the first one's error, and how many failed.
func (s *Sampler) poll(ctx context.Context, emit func(results.Sample)) {
	name := filepath.Base(s.path)
	tick := time.NewTicker(s.cfg.Interval)
	defer tick.Stop()
	var index uint64
	var failed, inRow, runs int
	var first error
	defer func() {
		if failed > 0 {
			s.warn(fmt.Errorf("gpu sampler %s: %d of %d runs failed, the first: %w", name, failed, runs, first))
		}
	}()
	for index < uint64(s.cfg.MaxSamples) {
		runs++
		t0, t1, rd, err := s.pollOnce(ctx)
		if ctx.Err() != nil {
			runs-- // stopped with the run: neither a sample nor a failure
			return
		}
		if err != nil {
			failed, inRow = failed+1, inRow+1
			if first == nil {
				first = err
			}
			if inRow >= maxPollFailures {
				s.warn(fmt.Errorf("gpu sampler %s: stopped after %d failed runs in a row", name, inRow))
				return
			}
		} else {
			inRow = 0
			// amd-smi reads the GPUs somewhere in its run: the sample
			// is placed at the middle.
			start, took := t0.Sub(s.cfg.Epoch), t1.Sub(t0)
			emit(results.Sample{Index: index, Target: name, Start: start, At: start + took/2, Duration: took, OK: true, Reading: rd})
			index++
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
	s.warn(fmt.Errorf("gpu sampler: stopped after %d samples", s.cfg.MaxSamples))
}

// pollOnce runs amd-smi once and reads its output; it returns when the
// run started and ended. The run is interrupted when ctx ends or after
// PollTimeout, killed StopTimeout later, and whatever it started is
// killed when it has exited.
func (s *Sampler) pollOnce(ctx context.Context) (start, end time.Time, _ results.Reading, _ error) {
	pctx, cancel := context.WithTimeout(ctx, s.cfg.PollTimeout)
	defer cancel()
	cmd := exec.CommandContext(pctx, s.path, profile.AMDSMIArgs()...)
	setProcessGroup(cmd)
	cmd.Cancel = func() error { interruptGroup(cmd); return nil }
	cmd.WaitDelay = s.cfg.StopTimeout
	out := &limitedBuffer{max: maxAMDSMIOutput}
	var stderr limitedBuffer
	cmd.Stdout, cmd.Stderr = out, &stderr
	t0 := time.Now()
	err := cmd.Run()
	t1 := time.Now()
	if cmd.Process != nil {
		killGroup(cmd)
	}
	switch {
	case ctx.Err() != nil:
		err = ctx.Err()
	case errors.Is(pctx.Err(), context.DeadlineExceeded):
		err = fmt.Errorf("amd-smi ran longer than %v", s.cfg.PollTimeout)
	case err != nil:
		err = fmt.Errorf("amd-smi: %w%s", err, excerpt([]byte(stderr.String()+" "+out.String())))
	case out.over:
		err = fmt.Errorf("amd-smi wrote more than %d bytes", maxAMDSMIOutput)
	}
	if err != nil {
		return t0, t1, results.Reading{}, err
	}
	rd, err := ParseAMDSMI([]byte(out.String()), s.cfg.GPUs...)
	return t0, t1, rd, err
}
