package report

import "github.com/servebench/servebench/results"

// SpecSourceRequests names the per-request source of speculative-decoding
// figures: the draft counts a server returns with each answer
// (llama.cpp's timings.draft_n and draft_n_accepted).
const SpecSourceRequests = "per-request (llama.cpp timings)"

// RequestSpecDecode is a stage's speculative decoding from the draft
// counts its completed measured requests returned, summed over them (a
// ratio of sums, so a long answer weighs as its tokens do).
type RequestSpecDecode struct {
	Source string `json:"source"` // SpecSourceRequests
	// Requests is how many of the stage's OfRequests completed requests
	// returned draft counts.
	Requests   int64 `json:"requests"`
	OfRequests int64 `json:"of_requests"`
	// DraftTokens and Accepted are the draft tokens the server tested
	// and accepted for those requests.
	DraftTokens int64 `json:"draft_tokens"`
	Accepted    int64 `json:"accepted_tokens"`
	// AcceptanceRate is Accepted ÷ DraftTokens. It falls as drafts grow
	// longer whatever the drafter: compare TokensPerStep across draft
	// lengths instead.
	AcceptanceRate float64 `json:"acceptance_rate"`
	// TokensPerStep is the output tokens per target step, the per-request
	// counterpart of the counters' mean acceptance length: each step
	// yields one token of the target plus the drafts it accepted, so it
	// is output ÷ (output − accepted), over the requests whose output
	// count came from the server's usage (StepRequests of them). A step
	// without a draft counts as a step of one token, so it equals the
	// counters' 1 + accepted ÷ drafts when every step drafted and is
	// lower otherwise. 0 when no request's count was the server's.
	TokensPerStep float64 `json:"tokens_per_step,omitempty"`
	StepRequests  int64   `json:"tokens_per_step_requests,omitempty"`
}

// draftTally sums the per-request draft counts of a stage's completed
// measured requests.
type draftTally struct {
	ok                int64 // completed requests
	requests          int64 // of which returned draft counts
	drafted, accepted int64
	// Of those, the ones whose output count is the server's: their
	// output and accepted tokens.
	stepRequests, stepOutput, stepAccepted int64
}

func (d *draftTally) add(r *results.Result) {
	d.ok++
	if r.DraftTokens <= 0 {
		return
	}
	d.requests++
	d.drafted += int64(r.DraftTokens)
	d.accepted += int64(r.DraftAccepted)
	if !r.Estimated && r.OutputTokens > r.DraftAccepted {
		d.stepRequests++
		d.stepOutput += int64(r.OutputTokens)
		d.stepAccepted += int64(r.DraftAccepted)
	}
}

func (d *draftTally) merge(o *draftTally) {
	d.ok += o.ok
	d.requests += o.requests
	d.drafted += o.drafted
	d.accepted += o.accepted
	d.stepRequests += o.stepRequests
	d.stepOutput += o.stepOutput
	d.stepAccepted += o.stepAccepted
}

// figures is the tally's speculative decoding; nil when no request
// returned draft counts.
func (d *draftTally) figures() *RequestSpecDecode {
	if d.requests == 0 || d.drafted <= 0 {
		return nil
	}
	sd := &RequestSpecDecode{Source: SpecSourceRequests, Requests: d.requests, OfRequests: d.ok,
		DraftTokens: d.drafted, Accepted: d.accepted, AcceptanceRate: round(float64(d.accepted)/float64(d.drafted), 6)}
	if d.stepRequests > 0 {
		sd.TokensPerStep = round(float64(d.stepOutput)/float64(d.stepOutput-d.stepAccepted), 6)
		sd.StepRequests = d.stepRequests
	}
	return sd
}

// specDisagree reports whether the server's counters and the requests'
// own counts differ on the acceptance rate by more than two points: then
// both are shown. The counters count every request the server ran in the
// window (warmup and other clients included), so small differences are
// expected.
func specDisagree(c *results.SpecDecode, r *RequestSpecDecode) bool {
	return c != nil && r != nil && c.AcceptanceRate > 0 && (c.AcceptanceRate-r.AcceptanceRate > 0.02 || r.AcceptanceRate-c.AcceptanceRate > 0.02)
}

// ShowRequestSpec reports whether the requests' own speculative decoding
// is shown: when the server exports no series of its own, or when the
// two disagree on the acceptance rate (the series are preferred
// otherwise).
func (e *Efficiency) ShowRequestSpec() bool {
	return e != nil && e.SpecDecodeRequests != nil && (e.SpecDecode == nil || specDisagree(e.SpecDecode, e.SpecDecodeRequests))
}
