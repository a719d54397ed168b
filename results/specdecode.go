package results

import (
	"maps"
	"slices"
	"sort"
	"time"
)

// SpecDecode is what the server's speculative-decoding series say of a
// span of a run. With counters (vLLM), every figure is a ratio of their
// increases over the span; with gauges (SGLang), AcceptLength and
// AcceptanceRate are the means of the server's own averages over the
// samples in the span, and the counts are absent.
type SpecDecode struct {
	Source string `json:"source"` // "counters" or "gauges"
	// Drafts, DraftTokens and Accepted are the increases of the
	// counters: proposals, tokens proposed, tokens accepted.
	Drafts      float64 `json:"drafts,omitempty"`
	DraftTokens float64 `json:"draft_tokens,omitempty"`
	Accepted    float64 `json:"accepted_tokens,omitempty"`
	// AcceptanceRate is accepted ÷ proposed tokens. It falls as drafts
	// grow longer whatever the drafter's quality: compare AcceptLength
	// across draft lengths instead.
	AcceptanceRate float64 `json:"acceptance_rate"`
	// AcceptLength is the mean tokens a request gains per step, the
	// bonus token included: 1 + accepted ÷ drafts.
	AcceptLength float64 `json:"mean_acceptance_length"`
	// DraftLength is the mean tokens proposed per draft (vLLM's
	// num_speculative_tokens, less when a request's end cut a draft).
	DraftLength float64 `json:"draft_length,omitempty"`
	// PerPosition is, for each draft position, the share of drafts whose
	// token at that position was accepted.
	PerPosition []float64 `json:"acceptance_per_position,omitempty"`
}

// SpecDecodeOver returns the speculative decoding of the engine samples
// (not GPU ones) of the most-scraped target over [from, to]: the counters'
// increases between the last sample at or before from and the first at or
// after to (or the nearest), or the gauges' means inside the span. False
// when the server exports neither or no draft was proposed.
func SpecDecodeOver(samples []Sample, from, to time.Duration) (SpecDecode, bool) {
	count := map[string]int{}
	for _, s := range samples {
		if s.OK && !s.GPU {
			count[s.Target]++
		}
	}
	target, best := "", 0
	for _, t := range slices.Sorted(maps.Keys(count)) {
		if count[t] > best {
			target, best = t, count[t]
		}
	}
	var pts []Sample
	for _, s := range samples {
		if s.OK && !s.GPU && s.Target == target {
			pts = append(pts, s)
		}
	}
	sort.SliceStable(pts, func(i, j int) bool { return pts[i].At < pts[j].At })
	if sd, ok := specCounters(pts, from, to); ok {
		return sd, true
	}
	return specGauges(pts, from, to)
}

func specCounters(pts []Sample, from, to time.Duration) (SpecDecode, bool) {
	var with []Sample
	for _, p := range pts {
		if _, ok := p.Values[SpecDrafts]; ok {
			with = append(with, p)
		}
	}
	if len(with) < 2 {
		return SpecDecode{}, false
	}
	i0, i1 := 0, len(with)-1
	for i, p := range with {
		if p.At <= from {
			i0 = i
		}
	}
	for i := len(with) - 1; i >= 0; i-- {
		if with[i].At >= to {
			i1 = i
		}
	}
	if i1 <= i0 {
		return SpecDecode{}, false
	}
	sd := SpecDecode{Source: "counters"}
	var perPos []float64
	for _, iv := range Rates(with[i0 : i1+1]) {
		sd.Drafts += iv.Deltas[SpecDrafts]
		sd.DraftTokens += iv.Deltas[SpecDraftTokens]
		sd.Accepted += iv.Deltas[SpecAcceptedTokens]
		for k, v := range iv.AcceptedPerPos {
			if k >= len(perPos) {
				perPos = append(perPos, make([]float64, k+1-len(perPos))...)
			}
			perPos[k] += v
		}
	}
	if sd.Drafts <= 0 {
		return SpecDecode{}, false
	}
	sd.AcceptLength = 1 + sd.Accepted/sd.Drafts
	sd.DraftLength = sd.DraftTokens / sd.Drafts
	if sd.DraftTokens > 0 {
		sd.AcceptanceRate = sd.Accepted / sd.DraftTokens
	}
	for _, v := range perPos {
		sd.PerPosition = append(sd.PerPosition, v/sd.Drafts)
	}
	return sd, true
}

func specGauges(pts []Sample, from, to time.Duration) (SpecDecode, bool) {
	var length, rate []float64
	for _, p := range pts {
		if p.At < from || p.At > to {
			continue
		}
		if v, ok := p.Values[SpecAcceptLength]; ok && v > 0 {
			length = append(length, v)
		}
		if v, ok := p.Values[SpecAcceptRate]; ok && v > 0 {
			rate = append(rate, v)
		}
	}
	if len(length) == 0 {
		return SpecDecode{}, false
	}
	mean := func(v []float64) float64 {
		s := 0.0
		for _, x := range v {
			s += x
		}
		return s / float64(len(v))
	}
	sd := SpecDecode{Source: "gauges", AcceptLength: mean(length)}
	if len(rate) > 0 {
		sd.AcceptanceRate = mean(rate)
	}
	return sd, true
}
