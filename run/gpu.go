package run

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/servebench/servebench/internal/simurl"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
	"github.com/servebench/servebench/scrape"
	"github.com/servebench/servebench/scrape/profile"
	"github.com/servebench/servebench/sim"
)

// gpuSources returns the DCGM pages a run scrapes: scrape.gpu's urls, or,
// for a sim:// target whose power model is on and without scrape.gpu,
// the simulator's own page.
func gpuSources(sc *scenario.Scenario, baseURL string) []string {
	if g := sc.Scrape.GPU; g != nil {
		return g.Targets()
	}
	if !simurl.Is(sc.Target.URL) {
		return nil
	}
	cfg, err := sim.ConfigFromURL(sc.SimTarget())
	if err != nil || !cfg.PowerModel() {
		return nil
	}
	return []string{strings.TrimSuffix(strings.TrimSuffix(baseURL, "/"), "/v1") + sim.PathDCGM}
}

// gpuInterval is scrape.gpu.interval, else scrape.interval.
func gpuInterval(sc *scenario.Scenario) time.Duration {
	if g := sc.Scrape.GPU; g != nil && g.Interval > 0 {
		return g.Interval.D()
	}
	return sc.Scrape.Interval.D()
}

func gpuIndexes(sc *scenario.Scenario) []string {
	if sc.Scrape.GPU == nil {
		return nil
	}
	var out []string
	for _, n := range sc.Scrape.GPU.GPUs {
		out = append(out, strconv.Itoa(n))
	}
	return out
}

// startGPU starts the run's GPU telemetry, if it has any: a scraper per
// DCGM page, or the nvidia-smi or amd-smi sampler. It returns a function that stops
// them, waits for their last sample and records their warnings; a
// scrape.gpu.file is read then. A GPU source that fails is never fatal.
func startGPU(sc *scenario.Scenario, baseURL string, epoch time.Time, records chan<- results.Record,
	warn func(source, msg string)) (stop func()) {
	if sc.Scrape.Enabled != nil && !*sc.Scrape.Enabled {
		return func() {}
	}
	type runner interface {
		Run(context.Context, func(results.Sample)) error
		Warnings() []error
	}
	var runners []runner
	only := map[string][]string{}
	if g := sc.Scrape.GPU; g != nil && g.Pod != "" {
		only["pod"] = []string{g.Pod}
	}
	if idx := gpuIndexes(sc); len(idx) > 0 {
		only["gpu"] = idx
	}
	for _, u := range gpuSources(sc, baseURL) {
		s, err := scrape.New(scrape.Config{URL: u, Interval: gpuInterval(sc), Profile: profile.DCGM, Epoch: epoch,
			AllowRemote: sc.Target.AllowRemote, Only: only})
		if err != nil {
			warn("gpu", err.Error())
			continue
		}
		runners = append(runners, s)
	}
	if g := sc.Scrape.GPU; g != nil && g.Sampler != "" {
		s, err := scrape.NewSampler(scrape.SamplerConfig{Tool: g.Sampler, Interval: gpuInterval(sc), Epoch: epoch, GPUs: gpuIndexes(sc)})
		if err != nil {
			warn("gpu", err.Error())
		} else {
			runners = append(runners, s)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, r := range runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.Run(ctx, func(x results.Sample) { records <- results.SampleRecord(&x) }); err != nil {
				warn("gpu", err.Error())
			}
		}()
	}
	return func() {
		cancel()
		wg.Wait()
		for _, r := range runners {
			for _, w := range r.Warnings() {
				warn("gpu", w.Error())
			}
		}
		if g := sc.Scrape.GPU; g != nil && g.File != "" {
			if err := readGPUFile(sc.Path(g.File), epoch, gpuIndexes(sc), records); err != nil {
				warn("gpu", err.Error())
			}
		}
	}
}

// gpuFileReader reads a GPU sampler's output: an nvidia-smi CSV or
// amd-smi's JSON.
type gpuFileReader interface {
	Next() (time.Time, results.Reading, error)
}

// openGPUFile returns a reader of what a sampler wrote to r: amd-smi's
// JSON when a line of its start opens a JSON document and its first line
// is no CSV header (amd-smi may print a banner or warnings first), else
// an nvidia-smi CSV, its timestamps taken in this machine's time zone.
func openGPUFile(r io.Reader, gpus []string) (gpuFileReader, error) {
	br := bufio.NewReaderSize(r, 4096)
	head, _ := br.Peek(4096)
	head = bytes.TrimLeft(head, " \t\r\n")
	first, _, _ := bytes.Cut(head, []byte("\n"))
	opens := func(b []byte) bool { return len(b) > 0 && (b[0] == '[' || b[0] == '{') }
	if opens(first) || (!bytes.Contains(first, []byte(",")) &&
		(bytes.Contains(head, []byte("\n[")) || bytes.Contains(head, []byte("\n{")))) {
		a := scrape.NewAMDSMIReader(br)
		a.Only(gpus...)
		return a, nil
	}
	sr, err := scrape.NewSMIReader(br, time.Local)
	if err != nil {
		return nil, err
	}
	sr.Only(gpus...)
	return sr, nil
}

// readGPUFile reads the output a GPU sampler wrote during the run into
// GPU samples.
func readGPUFile(path string, epoch time.Time, gpus []string, records chan<- results.Record) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("scrape.gpu.file: %w", err)
	}
	defer f.Close()
	sr, err := openGPUFile(f, gpus)
	if err != nil {
		return fmt.Errorf("scrape.gpu.file %s: %w", path, err)
	}
	var index uint64
	for ; index < scrape.DefaultMaxScrapes; index++ {
		at, rd, err := sr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("scrape.gpu.file %s: %w", path, err)
		}
		off := at.Sub(epoch)
		smp := results.Sample{Index: index, Target: path, Start: off, At: off, OK: true, Reading: rd}
		records <- results.SampleRecord(&smp)
	}
	if index == 0 {
		return fmt.Errorf("scrape.gpu.file %s: no sample in it", path)
	}
	return nil
}
