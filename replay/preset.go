package replay

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/servebench/servebench/sim"
	"github.com/servebench/servebench/twin"
	"github.com/servebench/servebench/vllmlog"
)

// server is the simulated server a replay runs on.
type server struct {
	cfg       sim.Config
	kv        *kvModel // the KV-cache layout cfg gives the simulator
	cost      cost     // cfg's step cost
	notes     []string // what was read from the log, and what was assumed
	mmlStated bool     // the log states max_model_len
}

// preset builds the simulator configuration of the log's server: capacity
// from the log (twin.FromLog), the KV-cache layout from its KV check, the
// step cost fitted to its stats lines.
func preset(run *vllmlog.Run, lines []Line) *server {
	cfg := sim.Defaults()
	cfg.Name = "replay"
	identity(&cfg, &run.Config)
	cfg.Seed, cfg.MeanOutputTokens = 1, 0

	var notes []string
	var opts twin.Options
	if taken, err := opts.FromLog(&vllmlog.Report{Runs: []*vllmlog.Run{run}}); err == nil {
		for _, t := range taken {
			notes = append(notes, "from the log: "+t)
		}
	}
	maxRunning := 0.0
	for _, l := range lines {
		maxRunning = max(maxRunning, l.Running)
	}
	cfg.MaxNumSeqs = opts.MaxNumSeqs
	if cfg.MaxNumSeqs == 0 {
		cfg.MaxNumSeqs = max(twin.DefaultMaxNumSeqs, int(maxRunning))
		notes = append(notes, fmt.Sprintf("max_num_seqs = %d: the log does not state it (vLLM's default, or the most requests the log shows running)", cfg.MaxNumSeqs))
	}
	cfg.MaxNumBatchedTokens = opts.MaxNumBatchedTokens
	if cfg.MaxNumBatchedTokens == 0 {
		var note string
		cfg.MaxNumBatchedTokens, note = budget(lines)
		notes = append(notes, note)
	}
	cfg.MaxNumBatchedTokens = max(cfg.MaxNumBatchedTokens, cfg.MaxNumSeqs)
	if opts.BlockSize > 0 {
		cfg.BlockSize = opts.BlockSize
	}
	cfg.MaxModelLen = opts.MaxModelLen
	if cfg.MaxModelLen == 0 {
		cfg.MaxModelLen = twin.DefaultMaxModelLen // until fitRequests sees the requests
	}
	if !cfg.EnableChunkedPrefill {
		cfg.MaxNumBatchedTokens = max(cfg.MaxNumBatchedTokens, cfg.MaxModelLen)
	}
	kv, kvNotes := layout(&cfg, run, opts.KVBlocks, lines)
	notes = append(notes, kvNotes...)

	d := sim.Defaults()
	fitted, costNotes := fitCost(lines, kv, cost{d.StepOverheadUS, d.PerSeqUS, d.PerKVTokenNS, d.PerPrefillTokenUS})
	notes = append(notes, costNotes...)
	if v, pn, ok := fitPrefill(lines, fitted, kv); ok {
		fitted.perPrefillUS = v
		notes = append(notes, pn...)
	} else {
		notes = append(notes, fmt.Sprintf("prefill cost %.0f µs per prompt token (the simulator's default): no interval shows the engine busy prefilling, so the log does not tell it", fitted.perPrefillUS))
	}
	cfg.StepOverheadUS, cfg.PerSeqUS = round3(fitted.overheadUS), round3(fitted.perSeqUS)
	cfg.PerKVTokenNS, cfg.PerPrefillTokenUS = round3(fitted.perKVNS), round3(fitted.perPrefillUS)
	fitted = cost{cfg.StepOverheadUS, cfg.PerSeqUS, cfg.PerKVTokenNS, cfg.PerPrefillTokenUS}
	cfg.JitterFrac = 0.01
	cfg.LogStatsInterval = time.Duration(math.Round(lines[len(lines)-1].Interval)) * time.Second
	return &server{cfg: cfg, kv: kv, cost: fitted, notes: notes, mmlStated: opts.MaxModelLen > 0}
}

// identity sets what the simulator says it is, and the switches, as the
// log's configuration states them.
func identity(cfg *sim.Config, c *vllmlog.Config) {
	if served := cmp.Or(c.ServedModelName, c.Model); served != "" {
		cfg.Model, cfg.ServedModelName = served, served
	}
	if c.Model != "" {
		cfg.Model = c.Model
	}
	if c.Version != "" {
		cfg.VLLMVersion = strings.TrimPrefix(c.Version, "v")
	}
	if c.Architecture != "" {
		cfg.Architecture = c.Architecture
	}
	if c.PrefixCaching != nil {
		cfg.EnablePrefixCaching = *c.PrefixCaching
	}
	if c.ChunkedPrefill != nil {
		cfg.EnableChunkedPrefill = *c.ChunkedPrefill
	}
	if c.GPUMemoryUtilization > 0 {
		cfg.GPUMemoryUtilization = c.GPUMemoryUtilization
	}
}

// defaultBudgets are vLLM's defaults for max_num_batched_tokens (2048 on
// most GPUs, 8192 on large ones, 16384 offline).
var defaultBudgets = []int{2048, 8192, 16384}

// budget tells the step budget the log does not state from the intervals
// in which the engine prefilled while requests waited throughout: each
// decode step then prefilled about a budget of prompt tokens, and the
// steps are the generation tokens per running request. It takes the
// nearest of vLLM's defaults when within a third of one; vLLM's 2048
// when no interval shows it.
func budget(lines []Line) (int, string) {
	var per []float64
	for i := 1; i < len(lines); i++ {
		l, p := lines[i], lines[i-1]
		n := (l.Running + p.Running) / 2
		if l.Waiting > 0 && p.Waiting > 0 && l.Prompt > 0 && l.Gen > 0 && n >= 1 {
			per = append(per, l.Prompt*n/l.Gen)
		}
	}
	if len(per) == 0 {
		return twin.DefaultBudget, fmt.Sprintf("max_num_batched_tokens = %d: the log does not state it (vLLM's default on most GPUs)", twin.DefaultBudget)
	}
	slices.Sort(per)
	seen := per[len(per)/2]
	b := int(math.Max(256, math.Round(seen/256)*256))
	for _, d := range defaultBudgets {
		if math.Abs(seen/float64(d)-1) <= 1.0/3 {
			b = d
		}
	}
	return b, fmt.Sprintf("max_num_batched_tokens = %d: the log does not state it; in the %d interval(s) that prefilled while requests waited, each decode step prefilled about %.0f prompt tokens (prompt tokens ÷ decode steps, a step per generated token of each running request)",
		b, len(per), seen)
}

// round3 keeps three decimals: what a preset file needs to reproduce a fit.
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
