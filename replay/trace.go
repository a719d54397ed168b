package replay

import (
	"fmt"
	"math"
	"slices"
)

// request is one request the stats lines imply. Times are seconds on the
// log's clock (Line.At).
type request struct {
	arrive float64
	prompt float64
	out    float64 // tokens generated so far
	depart float64 // when it left; NaN while it runs
}

// rebuild reconstructs the requests behind the stats lines: the state
// before the first line, then, interval by interval, the admissions,
// arrivals and departures the prompt tokens and the running and waiting
// counts imply, placed in the interval by the generation throughput.
type rebuild struct {
	lines     []Line
	cost      cost
	kv        *kvModel
	budget    int
	promptLen float64 // the typical prompt, for admissions whose prompt the log does not show
	running   []*request
	waiting   []*request
	all       []*request
	notes     []string
	unknown   []string
}

// defaultPrompt is the prompt length assumed when the log shows no prompt
// and no KV-cache usage to tell one from.
const defaultPrompt = 1024

func (b *rebuild) run() {
	var note string
	b.promptLen, note = estimatePrompt(b.lines)
	if note != "" {
		b.notes = append(b.notes, note)
	}
	b.start()
	for k := range b.lines {
		if k > 0 {
			b.gap(k)
		}
		b.interval(k)
	}
	b.finish()
}

// estimatePrompt is the typical prompt length: prompt tokens per request
// added to the running count, over the intervals that added some; NaN when
// no line counts prompt tokens. The note says how, when it is a guess.
func estimatePrompt(lines []Line) (float64, string) {
	var per, loose []float64
	for k, l := range lines {
		pt := l.Prompt * l.Interval
		if pt < 0.5 {
			continue
		}
		prev := 0.0 // a first line with prompt tokens follows an idle time (see start)
		if k > 0 {
			prev = lines[k-1].Running
		}
		if added := l.Running - prev; added >= 1 {
			per = append(per, pt/added)
		} else {
			loose = append(loose, pt)
		}
	}
	switch {
	case len(per) > 0:
		slices.Sort(per)
		return per[len(per)/2], ""
	case len(loose) > 0:
		slices.Sort(loose)
		v := loose[len(loose)/2]
		return v, fmt.Sprintf("no interval added running requests beside its prompt tokens, so the prompt length is taken as one interval's prompt tokens (%.0f): each interval with prompt tokens admitted one request, as far as the replay knows", v)
	}
	return math.NaN(), ""
}

// start sets the state before the first line's interval. A first line with
// prompt tokens follows an idle time (vLLM prints no line while idle);
// one without had its requests running already: they arrive just before
// it, their context (from KV usage) as their prompt.
func (b *rebuild) start() {
	l := b.lines[0]
	if l.Prompt > 0 || l.Running+l.Waiting == 0 {
		b.notes = append(b.notes, fmt.Sprintf("the first stats line (%s) counts prompt tokens, so its requests arrived in its interval after an idle time (vLLM prints no line while idle)", l.Time))
		return
	}
	s0 := l.At - l.Interval
	n := l.Running
	ctx := math.NaN()
	if c := b.kv.contextAt(l.KVPerc, n); !math.IsNaN(c) && n > 0 {
		ctx = max(c-l.Gen*l.Interval, n) / n
		b.notes = append(b.notes, fmt.Sprintf("%g request(s) were running before the first stats line (%s shows no prompt tokens): they arrive just before its interval with %.0f tokens of context each as their prompt, the context KV usage (%.1f %%) implies less what the interval generated; how long they had run and how their context split between prompt and output the log does not tell",
			n, l.Time, ctx, l.KVPerc))
	} else if n > 0 {
		ctx = b.promptLen
		if math.IsNaN(ctx) {
			ctx = defaultPrompt
		}
		b.unknown = append(b.unknown, fmt.Sprintf("the context of the %g request(s) running at the first stats line (no KV figures to tell it): taken as %.0f tokens", n, ctx))
	}
	// Whole seconds, so that the log's times fall on whole seconds of the
	// replay (Check reads the simulator's counters every second then).
	lead := math.Ceil(b.prefillTime(n, ctx) + 0.2)
	for range int(n) {
		r := &request{arrive: s0 - lead, prompt: ctx, depart: math.NaN()}
		r.out = 1 + (lead-b.prefillTime(n, ctx))*b.cost.rate(n, ctx, b.kv)
		b.running = append(b.running, r)
		b.all = append(b.all, r)
	}
	for range int(l.Waiting) {
		r := &request{arrive: s0 - lead, prompt: b.typicalPrompt(), depart: math.NaN()}
		b.waiting = append(b.waiting, r)
		b.all = append(b.all, r)
	}
	if l.Waiting > 0 {
		b.notes = append(b.notes, fmt.Sprintf("%g request(s) were waiting before the first stats line: they arrive with the running ones and wait as long as the simulator's capacity keeps them waiting", l.Waiting))
	}
}

// typicalPrompt is the prompt of a request whose prompt the log does not
// show.
func (b *rebuild) typicalPrompt() float64 { return orDefaultPrompt(b.promptLen) }

func orDefaultPrompt(p float64) float64 {
	if math.IsNaN(p) {
		return defaultPrompt
	}
	return p
}

// prefillTime is how long the simulator takes to prefill n prompts of ctx
// tokens: budget-sized steps.
func (b *rebuild) prefillTime(n, ctx float64) float64 {
	total := n * ctx
	if total <= 0 {
		return 0
	}
	steps := math.Ceil(total / float64(b.budget))
	return steps*b.cost.step(n, 0) + b.cost.perPrefillUS*total*1e-6
}

// gap accounts for the time between line k−1 and line k's interval that
// no line covers: the requests running at k−1 keep running, at a speed
// between the two lines'.
func (b *rebuild) gap(k int) {
	p, l := b.lines[k-1], b.lines[k]
	u := (l.At - l.Interval) - p.At
	if u < 0.5 || len(b.running) == 0 {
		return
	}
	n := float64(len(b.running))
	a := p.Gen / max(p.Running, 1)
	z := l.Gen / max(l.Running, n)
	for _, r := range b.running {
		r.out += (a + z) / 2 * u
	}
}

// flows are what one interval implies: requests admitted (their first
// token out: their prompt counted), arrived and departed, and the prompt
// of each admitted one.
type flows struct {
	admitted, arrivals, departs int
	prompt                      float64
}

// flows reads an interval's flows from its line and the state before it:
// waiting = arrivals − admitted, running = admitted − departed, and the
// prompt tokens are the admitted requests' prompts.
func (b *rebuild) flows(l Line) flows {
	rp, wp := len(b.running), len(b.waiting)
	dR, dW := int(l.Running)-rp, int(l.Waiting)-wp
	pt := l.Prompt * l.Interval
	m := max(0, dR, -dW)
	if pt >= 0.5 {
		m = max(m, int(math.Max(1, math.Round(pt/b.typicalPrompt()))))
	}
	if l.Gen > 0 && rp == 0 && l.Running == 0 {
		m = max(m, 1) // tokens with nobody running at either end: a request came and went
	}
	f := flows{admitted: m, arrivals: dW + m, departs: m - dR, prompt: b.typicalPrompt()}
	if pt >= 0.5 {
		f.prompt = pt / float64(m)
	}
	return f
}

// interval applies line k: who was admitted, arrived and left in its
// interval, and the tokens each running request generated.
func (b *rebuild) interval(k int) {
	l := b.lines[k]
	d, s := l.Interval, l.At-l.Interval
	f := b.flows(l)
	rp := len(b.running)
	oldGone := min(f.departs, rp)
	newGone := f.departs - oldGone

	// The stream-seconds the interval's tokens took at the decode speed,
	// less those of the requests that ran throughout, shared by the
	// requests that ran part of it.
	n := math.Max(float64(max(rp, int(l.Running))), 1)
	rho := b.cost.rate(n, b.meanContext(f.prompt), b.kv)
	partial := f.admitted - newGone + oldGone
	x := math.Min(math.Max(l.Gen*d/rho-float64(rp-oldGone)*d, 0), float64(partial)*d)
	each := 0.0
	if partial > 0 {
		each = x / float64(partial)
	}
	admitted, runNew := b.admit(s, d, f, each)

	// Tokens, by the time each request ran in the interval.
	runOld := spread(oldGone, each, d)
	slices.Reverse(runOld) // the oldest leaves first
	var who []*request
	var ran []float64
	for i, r := range b.running {
		t := d
		if i < oldGone {
			t = runOld[i]
			r.depart = s + t
		}
		who, ran = append(who, r), append(ran, t)
	}
	for i, r := range admitted {
		t := runNew[i]
		if i >= f.admitted-newGone {
			t = math.Min(t, d/2)
			r.depart = s + d - runNew[i] + t
		}
		who, ran = append(who, r), append(ran, t)
	}
	share(who, ran, l.Gen*d)
	b.running = append(b.running[oldGone:], admitted[:f.admitted-newGone]...)
}

// admit takes the interval's admitted requests, the oldest waiting first,
// then new arrivals (arriving as they are admitted), and queues the
// arrivals that wait, spread over the interval. It returns the admitted
// requests and how long each ran in the interval (the first admitted
// longest).
func (b *rebuild) admit(s, d float64, f flows, each float64) ([]*request, []float64) {
	fromQueue := min(f.admitted, len(b.waiting))
	admitted := append([]*request(nil), b.waiting[:fromQueue]...)
	b.waiting = b.waiting[fromQueue:]
	run := spread(f.admitted, each, d)
	// New arrivals reach the engine a prefill before their first token;
	// the engine prefills one prompt after another, so going back from
	// the last admitted, each arrives a prefill before the next one's.
	fresh := make([]*request, f.admitted-fromQueue)
	t := math.Inf(1)
	for i := len(fresh) - 1; i >= 0; i-- {
		t = math.Min(t, s+d-run[fromQueue+i]) - b.prefillTime(1, f.prompt)
		fresh[i] = &request{arrive: t, depart: math.NaN()}
	}
	admitted = append(admitted, fresh...)
	b.all = append(b.all, fresh...)
	for _, r := range admitted {
		r.prompt = f.prompt
	}
	waits := f.arrivals - (f.admitted - fromQueue)
	for i := range waits {
		r := &request{arrive: s + (float64(i)+0.5)*d/float64(waits), depart: math.NaN(), prompt: f.prompt}
		b.waiting = append(b.waiting, r)
		b.all = append(b.all, r)
	}
	return admitted, run
}

// share gives tokens to the requests in proportion to the time each ran.
func share(who []*request, ran []float64, tokens float64) {
	total := 0.0
	for _, t := range ran {
		total += t
	}
	for i, r := range who {
		switch {
		case total > 0:
			r.out += tokens * ran[i] / total
		default:
			r.out += tokens / float64(len(who))
		}
	}
}

// meanContext is the mean context of the running requests, or prompt when
// none runs.
func (b *rebuild) meanContext(prompt float64) float64 {
	if len(b.running) == 0 {
		return prompt
	}
	sum := 0.0
	for _, r := range b.running {
		sum += r.prompt + r.out
	}
	return sum / float64(len(b.running))
}

// spread returns n run times in [0, d] whose mean is mean, evenly spaced,
// longest first.
func spread(n int, mean, d float64) []float64 {
	out := make([]float64, n)
	if n == 0 {
		return out
	}
	half := math.Min(mean, d-mean) * (1 - 1/float64(n))
	for i := range out {
		f := 0.0
		if n > 1 {
			f = 1 - 2*float64(i)/float64(n-1)
		}
		out[i] = math.Min(math.Max(mean+f*half, 0), d)
	}
	return out
}

// finish lets the requests still running at the last line run one
// interval more, and gives those still waiting an interval's worth of
// output: the log does not tell when they ended.
func (b *rebuild) finish() {
	l := b.lines[len(b.lines)-1]
	per := l.Gen / max(l.Running, 1)
	if per <= 0 {
		per = b.cost.rate(float64(max(len(b.running), 1)), b.meanContext(b.typicalPrompt()), b.kv)
	}
	for _, r := range b.running {
		r.out += per * l.Interval
	}
	for _, r := range b.waiting {
		r.out = max(r.out, per*l.Interval)
	}
	if n := len(b.running) + len(b.waiting); n > 0 {
		b.unknown = append(b.unknown, fmt.Sprintf("when the %d request(s) running or waiting at the last stats line (%s) ended: the replay lets them run one interval (%s) past it", n, l.Time, secs(l.Interval)))
	}
}
