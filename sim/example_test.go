package sim_test

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/servebench/servebench/sim"
)

// Drive the engine in virtual time: Schedule plans a step, the clock jumps
// to its deadline, Complete applies it.
func ExampleEngine() {
	cfg, err := sim.Preset("tiny")
	if err != nil {
		panic(err)
	}
	clock := sim.NewVirtualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	start := clock.Now()
	engine, err := sim.NewEngine(cfg, clock, rand.New(rand.NewPCG(cfg.Seed, 1)))
	if err != nil {
		panic(err)
	}
	prompt := make([]uint32, 600)
	for i := range prompt {
		prompt[i] = uint32(i)
	}
	req := &sim.Request{ID: "r1", Prompt: prompt, MaxTokens: 4, IgnoreEOS: true}
	if err := engine.Submit(req); err != nil {
		panic(err)
	}
	for {
		step, err := engine.Schedule()
		if err != nil {
			panic(err)
		}
		if step == nil {
			break // idle
		}
		clock.Set(step.End)
		outs, _ := engine.Complete(step)
		fmt.Printf("step: %d prefill + %d decode tokens, %d output(s)\n", step.PrefillTokens, step.DecodeTokens, len(outs))
		for _, o := range outs {
			if o.FinishReason != "" {
				fmt.Printf("finished %s after %d tokens at +%v\n", o.FinishReason, o.Req.OutputTokens(), clock.Now().Sub(start).Round(time.Millisecond))
			}
		}
	}
	// Output:
	// step: 256 prefill + 0 decode tokens, 0 output(s)
	// step: 256 prefill + 0 decode tokens, 0 output(s)
	// step: 88 prefill + 0 decode tokens, 1 output(s)
	// step: 0 prefill + 1 decode tokens, 1 output(s)
	// step: 0 prefill + 1 decode tokens, 1 output(s)
	// step: 0 prefill + 1 decode tokens, 1 output(s)
	// finished length after 4 tokens at +14ms
}
