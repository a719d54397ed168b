package report

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/servebench/servebench/internal/stats"
	"github.com/servebench/servebench/results"
)

// NoTelemetry is what a stage's energy says when the run read no GPU
// telemetry: never a zero.
const NoTelemetry = "not measured (no GPU telemetry source)"

// Efficiency is what a stage's output cost: the GPUs' energy over its
// window (GPU telemetry), its price (the scenario's cost block) and the
// server's speculative decoding. Per-token and per-request figures count
// what the window holds, as the stage's rates do: output tokens received,
// prompt tokens prefilled and requests completed in it.
type Efficiency struct {
	// Energy is the GPUs' energy over the stage's window; nil when it
	// could not be measured, and EnergyNote then says why.
	Energy     *results.Energy `json:"energy,omitempty"`
	EnergyNote string          `json:"energy_note,omitempty"`
	// JoulesPerToken is joules per output token, TokensPerJoule its
	// inverse (tokens per second per watt), JoulesPerRequest joules per
	// request completed.
	JoulesPerToken   float64 `json:"joules_per_token,omitempty"`
	TokensPerJoule   float64 `json:"output_tokens_per_j,omitempty"`
	JoulesPerRequest float64 `json:"joules_per_request,omitempty"`
	// JoulesPerTokenCI is the 95 % interval of JoulesPerToken by batch
	// means over the stage's full scrape windows; nil with fewer than five.
	JoulesPerTokenCI *[2]float64 `json:"joules_per_token_ci,omitempty"`

	// Cost is the stage's price; nil without a cost block (CostNote says
	// why).
	Cost     *CostFigures `json:"cost,omitempty"`
	CostNote string       `json:"cost_note,omitempty"`

	// SpecDecode is the server's speculative decoding over the window;
	// nil when it exports none.
	SpecDecode *results.SpecDecode `json:"spec_decode,omitempty"`
	// SpecDecodeRequests is the speculative decoding the stage's requests
	// returned with their answers (llama.cpp's timings); nil when none
	// did. The terminal shows it when the server exports no counters,
	// or beside them when the two disagree.
	SpecDecodeRequests *RequestSpecDecode `json:"spec_decode_requests,omitempty"`

	// Goodput is the share of finished requests meeting every objective
	// of the scenario's slo (vLLM's definition); nil without an slo, when
	// every output token counts as good. GoodTokensPerJoule and
	// GoodTokensPerUSD are the output tokens times that share, per joule
	// and per dollar: what a sweep ranks by (sweep.rank_by).
	Goodput            *float64 `json:"goodput,omitempty"`
	GoodTokensPerJoule float64  `json:"good_output_tokens_per_j,omitempty"`
	GoodTokensPerUSD   float64  `json:"good_output_tokens_per_usd,omitempty"`
}

// CostFigures is a stage's price and what it bought.
type CostFigures struct {
	USD   float64 `json:"usd"`
	Basis string  `json:"basis"`
	// USDPerMTok is dollars per million output tokens; USDPerMTokTotal
	// per million prompt and output tokens; USDPerRequest per request
	// completed.
	USDPerMTok      float64 `json:"usd_per_mtok"`
	USDPerMTokTotal float64 `json:"usd_per_mtok_total"`
	USDPerRequest   float64 `json:"usd_per_request,omitempty"`
	// USDPerMTokCI is the 95 % interval of USDPerMTok for an hourly
	// price (from the output rate's batch-means interval); nil for
	// per-token prices, which are exact, or too few windows.
	USDPerMTokCI *[2]float64 `json:"usd_per_mtok_ci,omitempty"`

	hourly bool // priced by the GPU-hour (else by the token)
}

// window is what a stage's measured window [from, to] holds: output
// tokens received, prompt tokens prefilled, requests completed.
type window struct {
	from, to                 time.Duration
	output, prompt, requests float64
	drafts                   *draftTally // the requests' own draft counts; nil for none
}

// efficiency computes st's efficiency over its window.
func (a *Aggregate) efficiency(st *Stage, w window) *Efficiency {
	if st.Duration <= 0 || st.Requests.Inputs > 0 {
		return nil
	}
	e := &Efficiency{}
	samples := a.corr.Samples()
	from, to, output, prompt, requests := w.from, w.to, w.output, w.prompt, w.requests
	gpus := 0
	if en, ok := results.EnergyOver(samples, from, to); ok {
		e.Energy = &en
		gpus = en.GPUs
		if output > 0 {
			e.JoulesPerToken = round(en.Joules/output, 6)
			e.TokensPerJoule = round(output/en.Joules, 6)
			e.JoulesPerTokenCI = a.joulesPerTokenCI(st, e.JoulesPerToken)
		}
		if requests > 0 {
			e.JoulesPerRequest = round(en.Joules/requests, 6)
		}
	} else {
		e.EnergyNote = NoTelemetry
		if hasGPUSamples(samples) {
			e.EnergyNote = "not measured (the GPU telemetry has no two samples with power or energy over this window)"
		}
	}
	var cost *results.Cost
	if a.spec != nil {
		cost = a.spec.Cost
	}
	switch p, ok := cost.Of((to - from).Seconds(), gpus, prompt, output); {
	case cost == nil:
		e.CostNote = "not priced (no cost block in the scenario)"
	case !ok:
		e.CostNote = "not priced (per_gpu_hour without cost.gpus needs GPU telemetry to count the GPUs)"
	default:
		c := &CostFigures{USD: round(p.USD, 9), Basis: p.Basis, hourly: cost.Hourly()}
		if output > 0 {
			c.USDPerMTok = round(p.USD/output*1e6, 6)
			if lo, hi, ok := a.RateInterval(st, ciLevel); ok && cost.Hourly() && lo > 0 {
				// The price of the window is fixed: per token it
				// moves inversely with the rate.
				c.USDPerMTokCI = &[2]float64{round(c.USDPerMTok*st.OutputTokensPerSec/hi, 6), round(c.USDPerMTok*st.OutputTokensPerSec/lo, 6)}
			}
		}
		if output+prompt > 0 {
			c.USDPerMTokTotal = round(p.USD/(output+prompt)*1e6, 6)
		}
		if requests > 0 {
			c.USDPerRequest = round(p.USD/requests, 9)
		}
		e.Cost = c
	}
	if sd, ok := results.SpecDecodeOver(samples, from, to); ok {
		e.SpecDecode = &sd
	}
	if w.drafts != nil {
		e.SpecDecodeRequests = w.drafts.figures()
	}
	a.goodPer(st, e, output)
	return e
}

// goodPer fills the goodput share and the good tokens per joule and per
// dollar.
func (a *Aggregate) goodPer(st *Stage, e *Efficiency, output float64) {
	share := 1.0
	if a.spec != nil && a.spec.SLO.Set() {
		var stages []int
		if st.Index >= 0 {
			stages = []int{st.Index}
		}
		sc := a.log.scopeOf(stages)
		g, _, ok := sc.goodput(a.spec.SLO.TTFTMs, a.spec.SLO.TPOTMs, a.spec.SLO.E2EMs)
		if !ok {
			return
		}
		share = g
		e.Goodput = &g
	}
	if en := e.Energy; en != nil && en.Joules > 0 {
		e.GoodTokensPerJoule = round(share*output/en.Joules, 6)
	}
	if c := e.Cost; c != nil && c.USD > 0 {
		e.GoodTokensPerUSD = round(share*output/c.USD, 3)
	}
}

func hasGPUSamples(samples []results.Sample) bool {
	for i := range samples {
		if samples[i].GPU {
			return true
		}
	}
	return false
}

// joulesPerTokenCI is the 95 % interval of a stage's joules per output
// token by batch means: each full scrape window's energy over its tokens,
// a Student-t interval over them, scaled to the stage's own figure. None
// with fewer than five windows with energy and tokens.
func (a *Aggregate) joulesPerTokenCI(st *Stage, value float64) *[2]float64 {
	samples := a.corr.Samples()
	var per []float64
	for _, w := range a.Windows() {
		if !w.Full || (st.Index >= 0 && w.Stage != st.Index) || w.OutputTokens <= 0 {
			continue
		}
		if en, ok := results.EnergyOver(samples, w.From, w.To); ok && en.Coverage >= 0.99 {
			per = append(per, en.Joules/w.OutputTokens)
		}
	}
	if len(per) < 5 {
		return nil
	}
	iv := stats.Mean(per, ciLevel)
	if !iv.OK || iv.Estimate <= 0 {
		return nil
	}
	scale := value / iv.Estimate
	return &[2]float64{round(iv.Lo*scale, 6), round(iv.Hi*scale, 6)}
}

// writeEfficiency writes the energy, cost and speculative-decoding lines
// of a stage (the whole run's, in the terminal summary; pooled when it
// pools several stages).
func writeEfficiency(b *strings.Builder, pooled bool, e *Efficiency) {
	if e == nil {
		return
	}
	scope := ""
	if pooled {
		scope = ", all stages"
	}
	if en := e.Energy; en != nil {
		fmt.Fprintf(b, "energy%s: %s J over the load, %s; mean %s W, peak %s W on %d GPU(s): %s J per output token%s, %s output tokens per J, %s J per request\n",
			scope, num(en.Joules), en.Method+" ("+en.Source+")", num(en.AvgPowerW), num(en.PeakPowerW), en.GPUs,
			sig(e.JoulesPerToken), ciText(e.JoulesPerTokenCI), sig(e.TokensPerJoule), sig(e.JoulesPerRequest))
		if en.Coverage < 0.95 {
			fmt.Fprintf(b, "  the GPU samples bracket %s of the load; the rest is taken at the nearest interval's power\n", pct(en.Coverage))
		}
	} else {
		fmt.Fprintf(b, "energy: %s\n", e.EnergyNote)
	}
	if c := e.Cost; c != nil {
		fmt.Fprintf(b, "cost%s: $%s (%s): $%s per 1M output tokens%s, $%s per 1M tokens, $%s per request\n",
			scope, sig(c.USD), c.Basis, sig(c.USDPerMTok), ciText(c.USDPerMTokCI), sig(c.USDPerMTokTotal), sig(c.USDPerRequest))
	}
	writeSpecDecode(b, scope, e)
}

// writeSpecDecode writes the speculative-decoding line: the server's
// series when it exports them, the requests' own counts otherwise, and
// both when they disagree.
func writeSpecDecode(b *strings.Builder, scope string, e *Efficiency) {
	rq := e.SpecDecodeRequests
	if sd := e.SpecDecode; sd != nil {
		fmt.Fprintf(b, "speculative decoding%s: mean acceptance length %s tokens per step", scope, trimFloat(sd.AcceptLength, 3))
		if sd.DraftLength > 0 {
			fmt.Fprintf(b, " (drafts of %s), acceptance rate %s", trimFloat(sd.DraftLength, 2), pct(sd.AcceptanceRate))
		} else if sd.AcceptanceRate > 0 {
			fmt.Fprintf(b, ", acceptance rate %s", pct(sd.AcceptanceRate))
		}
		if len(sd.PerPosition) > 0 {
			parts := make([]string, len(sd.PerPosition))
			for i, p := range sd.PerPosition {
				parts[i] = trimFloat(p, 3)
			}
			fmt.Fprintf(b, "; accepted by position %s", strings.Join(parts, " "))
		}
		fmt.Fprintf(b, " (from the server's %s)\n", sd.Source)
		if !e.ShowRequestSpec() {
			return
		}
		fmt.Fprintf(b, "  the requests' own counts differ: ")
	} else if rq != nil {
		fmt.Fprintf(b, "speculative decoding%s: ", scope)
	}
	if rq == nil {
		return
	}
	fmt.Fprintf(b, "acceptance rate %s (%d of %d draft tokens accepted)", pct(rq.AcceptanceRate), rq.Accepted, rq.DraftTokens)
	if rq.TokensPerStep > 0 {
		fmt.Fprintf(b, ", %s tokens per step (output ÷ (output − accepted) over %s)", trimFloat(rq.TokensPerStep, 3), FormatCount(rq.StepRequests, "request", "requests"))
	}
	fmt.Fprintf(b, "; %s: %d of %s returned draft counts\n", rq.Source, rq.Requests, FormatCount(rq.OfRequests, "completed request", "completed requests"))
}

// sig formats a positive figure with four significant digits.
func sig(x float64) string {
	if x == 0 || math.IsNaN(x) {
		return "0"
	}
	return trimFloat(x, max(0, 3-int(math.Floor(math.Log10(math.Abs(x))))))
}

func ciText(ci *[2]float64) string {
	if ci == nil {
		return ""
	}
	return fmt.Sprintf(" (95 %% %s–%s)", sig(ci[0]), sig(ci[1]))
}

// measureEfficiency reads a stage's joules_per_token or usd_per_mtok for
// a budget, with the interval it has (batch means over the scrape
// windows); a per-token price has none and is judged on its value, which
// is exact.
func measureEfficiency(st *Stage, metric string) measure {
	e := st.Efficiency
	if e == nil {
		return measure{note: "no request completed in the window"}
	}
	tokens := int64(st.OutputTokensPerSec*st.Duration + 0.5)
	var value float64
	var ci *[2]float64
	switch metric {
	case "joules_per_token":
		if e.Energy == nil {
			return measure{note: "energy " + e.EnergyNote}
		}
		value, ci = e.JoulesPerToken, e.JoulesPerTokenCI
	case "usd_per_mtok":
		if e.Cost == nil {
			return measure{note: e.CostNote}
		}
		value, ci = e.Cost.USDPerMTok, e.Cost.USDPerMTokCI
	}
	if tokens <= 0 {
		return measure{note: "no output token in the window"}
	}
	m := measure{value: value, samples: tokens, ok: true}
	switch {
	case ci != nil:
		m.lo, m.hi, m.loOK, m.hiOK = ci[0], ci[1], true, true
	case metric == "usd_per_mtok" && !e.Cost.hourly:
		m.note = "judged on the value: a price per token is exact"
	default:
		m.note = "judged on the value: fewer than five full scrape windows for a 95 % interval"
	}
	return m
}

// specChunkWarning warns, when speculative decoding made chunks carry
// several tokens and the client could not count them (no continuous
// usage), that per-token ITL spreads them evenly; "" otherwise.
func (a *Aggregate) specChunkWarning(st *Stage) string {
	e := st.Efficiency
	if e == nil || e.SpecDecode == nil || e.SpecDecode.AcceptLength <= 1.05 || a.spec == nil || a.spec.Request.ContinuousUsage || st.ITLChunk.Count == 0 {
		return ""
	}
	return fmt.Sprintf("speculative decoding gained %.3g tokens a step, so chunks carry several tokens; without request.continuous_usage the client cannot tell how many each carried and spreads a response's tokens evenly over its chunks: per-token ITL is then an average, and itl_chunk_ms keeps the gaps as they came",
		e.SpecDecode.AcceptLength)
}
