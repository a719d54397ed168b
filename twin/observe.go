package twin

import (
	"encoding/json"
	"math"
	"slices"
	"time"

	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/sim"
)

// observations are what the fit reads from the runs: the segments, each
// with the stage instance it belongs to, and what the step reconstruction
// found, merged over the runs.
type observations struct {
	segs  []segment
	inst  []int      // per segment: its index in insts, −1 when its stage is ambiguous
	insts []instance // one per stage of each run

	steps, decodeSteps                  int
	prefillOne, prefillMany, prefillLow int
	minBatch, maxBatch, maxStepTokens   int
	tolerance                           time.Duration
	decodeBatches                       []int
	promptMin, promptMax, outputMax     int
}

// instance is one stage of one run, and the load it ran: two instances
// with the same key are repeats of one load.
type instance struct {
	run, stage int
	key        string
}

// observe reconstructs every run's steps and cuts them into segments.
func observe(runs []*runData, budget int) *observations {
	obs := &observations{minBatch: math.MaxInt, promptMin: math.MaxInt}
	for ri, rd := range runs {
		segs, st := reconstruct(rd, budget)
		spans, ids := stageSpans(rd), map[int]int{}
		for stage := range spans {
			ids[stage] = len(obs.insts)
			obs.insts = append(obs.insts, instance{run: ri, stage: stage, key: loadKey(rd.header, stage)})
		}
		for _, sg := range segs {
			obs.segs = append(obs.segs, sg)
			obs.inst = append(obs.inst, instanceOf(sg, spans, ids))
		}
		obs.decodeBatches = append(obs.decodeBatches, st.decodeBatches...)
		obs.steps += st.steps
		if st.segments > 0 {
			obs.minBatch, obs.maxBatch = min(obs.minBatch, st.minBatch), max(obs.maxBatch, st.maxBatch)
		}
		obs.decodeSteps += st.decodeSteps
		obs.prefillOne += st.prefillOne
		obs.prefillMany += st.prefillMany
		obs.prefillLow += st.prefillLow
		obs.maxStepTokens = max(obs.maxStepTokens, st.maxStepTokens)
		obs.tolerance = max(obs.tolerance, st.tolerance)
		for _, q := range rd.reqs {
			obs.promptMin, obs.promptMax = min(obs.promptMin, q.prompt), max(obs.promptMax, q.prompt)
			out := 0
			for _, k := range q.ntok {
				out += k
			}
			obs.outputMax = max(obs.outputMax, out)
		}
	}
	if len(obs.decodeBatches) > 0 {
		// The range a prediction is judged against: the batches that
		// decoded (a step that only prefilled has none).
		obs.minBatch = max(slices.Min(obs.decodeBatches), 1)
	}
	if obs.minBatch == math.MaxInt {
		obs.minBatch = 0
	}
	if obs.promptMin == math.MaxInt {
		obs.promptMin = 0
	}
	return obs
}

// stageSpans returns when each stage of a run had requests in the
// server: its first send to its last token.
func stageSpans(rd *runData) map[int][2]time.Duration {
	out := map[int][2]time.Duration{}
	for _, q := range rd.reqs {
		end := q.chunks[len(q.chunks)-1]
		sp, ok := out[q.stage]
		if !ok {
			sp = [2]time.Duration{q.sent, end}
		}
		out[q.stage] = [2]time.Duration{min(sp[0], q.sent), max(sp[1], end)}
	}
	return out
}

// instanceOf is the instance of the one stage whose span holds the
// segment's middle, or −1 when none or several do (a stage draining while
// the next begins).
func instanceOf(sg segment, spans map[int][2]time.Duration, ids map[int]int) int {
	mid := (sg.from + sg.to) / 2
	found := -1
	for stage, sp := range spans {
		if mid >= sp[0] && mid <= sp[1] {
			if found >= 0 {
				return -1
			}
			found = ids[stage]
		}
	}
	return found
}

// loadKey names the load a stage ran: its shape and the prompt and output
// lengths asked, not its name.
func loadKey(h *results.Header, stage int) string {
	if h == nil || h.Spec == nil || stage >= len(h.Spec.Load.Stages) {
		return ""
	}
	st := h.Spec.Load.Stages[stage]
	st.Name = ""
	b, _ := json.Marshal(struct {
		Stage     results.SpecStage
		In, Out   *results.SpecDist
		Prefix    int
		Target    string
		Tokenizer string
	}{st, h.Spec.Prompts.InputTokens, h.Spec.Prompts.OutputTokens, h.Spec.Prompts.SharedPrefixTokens, h.Spec.Target.API, h.Spec.Prompts.Tokenizer})
	return string(b)
}

// betweenRuns estimates the run-to-run variation of the server's speed
// from repeated loads: each stage's level is the ratio of its segments'
// measured duration to the fitted one (stalls, a third or three times the
// fit, left out), and the relative standard deviation of the levels of
// the stages that ran one load, pooled over loads, is the variation a new
// run of any load may show. It is nil when no load ran twice.
func betweenRuns(obs *observations, fit *linearFit) *sim.BetweenRuns {
	type level struct{ d, p float64 }
	per := make([]level, len(obs.insts))
	for i, sg := range obs.segs {
		g := obs.inst[i]
		if g < 0 {
			continue
		}
		p := dot(design(sg), fit.beta)
		if p <= 0 || sg.durUS <= 0 || sg.durUS > 3*p || sg.durUS < p/3 {
			continue
		}
		per[g].d += sg.durUS
		per[g].p += p
	}
	byLoad := map[string][]int{} // the instances of each load
	for g, l := range per {
		if l.p > 0 && obs.insts[g].key != "" {
			byLoad[obs.insts[g].key] = append(byLoad[obs.insts[g].key], g)
		}
	}
	// Each repeated load's instances, as deviations from the load's mean
	// level; then averaged per run: the stages of one run share its speed,
	// so they are one observation of the run-to-run variation, not several.
	perRun := map[int][]float64{}
	df, n, loads := 0, 0, 0
	for _, gs := range byLoad {
		if len(gs) < 2 {
			continue
		}
		var m float64
		for _, g := range gs {
			m += (per[g].d/per[g].p - 1) / float64(len(gs))
		}
		for _, g := range gs {
			r := obs.insts[g].run
			perRun[r] = append(perRun[r], per[g].d/per[g].p-1-m)
		}
		df, n, loads = df+len(gs)-1, n+len(gs), loads+1
	}
	if df == 0 {
		return nil
	}
	var ss float64
	for _, es := range perRun {
		var e float64
		for _, x := range es {
			e += x / float64(len(es))
		}
		ss += e * e
	}
	// Runs that ran every repeated load leave as many degrees of freedom
	// as runs less one, however many loads each ran.
	df = min(df, len(perRun)-1)
	if df <= 0 {
		return nil
	}
	return &sim.BetweenRuns{RelSD: roundSig(math.Sqrt(ss/float64(df)), 4), DF: df, Instances: n, Loads: loads}
}
