package replay

import (
	"cmp"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/servebench/servebench/internal/kvcapacity"
	"github.com/servebench/servebench/sim"
	"github.com/servebench/servebench/twin"
	"github.com/servebench/servebench/vllmlog"
)

// preset builds the simulator configuration of the log's server: capacity
// from the log (twin.FromLog), the KV-cache layout from its KV check, the
// step cost fitted to its stats lines. It returns the configuration, the
// KV model that matches it, and notes: what was read, what was assumed.
func preset(run *vllmlog.Run, lines []Line) (sim.Config, *kvModel, cost, []string) {
	cfg := sim.Defaults()
	cfg.Name = "replay"
	c := &run.Config
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
		notes = append(notes, fmt.Sprintf("max_num_seqs = %d: the log does not state it (vLLM's default)", cfg.MaxNumSeqs))
	}
	cfg.MaxNumBatchedTokens = opts.MaxNumBatchedTokens
	if cfg.MaxNumBatchedTokens == 0 {
		cfg.MaxNumBatchedTokens = twin.DefaultBudget
		notes = append(notes, fmt.Sprintf("max_num_batched_tokens = %d: the log does not state it (vLLM's default on most GPUs)", cfg.MaxNumBatchedTokens))
	}
	cfg.MaxNumBatchedTokens = max(cfg.MaxNumBatchedTokens, cfg.MaxNumSeqs)
	if opts.BlockSize > 0 {
		cfg.BlockSize = opts.BlockSize
	}
	cfg.MaxModelLen = opts.MaxModelLen
	if cfg.MaxModelLen == 0 {
		cfg.MaxModelLen = twin.DefaultMaxModelLen
		notes = append(notes, fmt.Sprintf("max_model_len = %s: the log does not state it (assumed; the replay's requests fit in it)", kvcapacity.Thousands(cfg.MaxModelLen)))
	}
	if !cfg.EnableChunkedPrefill {
		cfg.MaxNumBatchedTokens = max(cfg.MaxNumBatchedTokens, cfg.MaxModelLen)
	}
	kv, kvNotes := layout(&cfg, run, opts.KVBlocks)
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
	return cfg, kv, fitted, notes
}

// round3 keeps three decimals: what a preset file needs to reproduce a fit.
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
