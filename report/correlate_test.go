package report

import (
	"strings"

	"github.com/servebench/servebench/report/correlate"
	"github.com/servebench/servebench/results"

	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// preemptFixture is a real run of testdata/preempt.yaml against sim://tiny:
// stage "fits" (3 streams within the KV cache) then stage "overflows"
// (8 streams beyond it). The simulator's log of that run reported four
// preemptions, and the four requests that stalled for a recompute are
// seq 12, 15, 23 and 24 (their longest chunk gap is 65 to 190 times their
// median; every other request's is under 3 times).
const preemptFixture = "testdata/preempt.jsonl.gz"

func correlationOf(t *testing.T, paths ...string) *correlate.Correlation {
	t.Helper()
	a, err := FromFiles(paths...)
	if err != nil {
		t.Fatal(err)
	}
	c := a.Summary().Correlation
	if c == nil {
		t.Fatal("no correlation section")
	}
	return c
}

func TestCorrelationGolden(t *testing.T) {
	t.Parallel()
	c := correlationOf(t, preemptFixture)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(c); err != nil {
		t.Fatal(err)
	}
	goldenCheck(t, buf.Bytes())
}

func TestCorrelationPreemption(t *testing.T) {
	t.Parallel()
	c := correlationOf(t, preemptFixture)
	if c.Preemptions == nil || *c.Preemptions != 4 {
		t.Errorf("preemptions = %v, want 4", fmtPtr(c.Preemptions))
	}
	if len(c.Stages) != 2 {
		t.Fatalf("stages = %d, want 2", len(c.Stages))
	}
	fits, over := c.Stages[0], c.Stages[1]
	if fits.Preemptions == nil || *fits.Preemptions != 0 || fits.AffectedRequests != 0 {
		t.Errorf("stage fits: preemptions %v, affected %d; want none", fmtPtr(fits.Preemptions), fits.AffectedRequests)
	}
	if over.Preemptions == nil || *over.Preemptions != 4 {
		t.Errorf("stage overflows: preemptions %v, want 4", fmtPtr(over.Preemptions))
	}
	if want := []uint64{12, 15, 23, 24}; !slices.Equal(over.AffectedSeqs, want) || c.PreemptedRequests != 4 {
		t.Errorf("affected = %v (%d), want %v", over.AffectedSeqs, c.PreemptedRequests, want)
	}
	if x := c.CrossCheck; x == nil || x.Flagged {
		t.Errorf("cross-check = %+v, want agreement", x)
	}
	if c.TTFTWaitingShare == nil || *c.TTFTWaitingShare <= 0 {
		t.Errorf("TTFT waiting share = %v, want > 0 (stage overflows queues)", fmtPtr(c.TTFTWaitingShare))
	}
}

func fmtPtr(p *float64) any {
	if p == nil {
		return "nil"
	}
	return *p
}

// TestCorrelationOrderIndependent shuffles the fixture's records (requests
// and scrape samples) into two files' worth of order and checks that the
// correlation is byte-identical.
func TestCorrelationOrderIndependent(t *testing.T) {
	t.Parallel()
	want := correlationOf(t, preemptFixture)
	r, err := results.Open(preemptFixture)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var recs []results.Record
	for r.Scan() {
		recs = append(recs, r.Record())
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	rng := rand.New(rand.NewPCG(4, 4))
	body := recs[1:]
	rng.Shuffle(len(body), func(i, j int) { body[i], body[j] = body[j], body[i] })
	path := filepath.Join(t.TempDir(), "shuffled.jsonl")
	w, err := results.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := correlationOf(t, path)
	wj, _ := json.Marshal(want)
	gj, _ := json.Marshal(got)
	if !bytes.Equal(wj, gj) {
		t.Errorf("correlation depends on record order:\nwant %s\ngot  %s", wj, gj)
	}
}

// lawRun synthesises a closed-loop run that follows the memory-bound law
// exactly: every decode step gives each of n streams one token and takes
// a + b × (context in flight) seconds. The server's samples (every second)
// count the same tokens, times serverScale, and report waiting requests
// from waiting(t).
type lawRun struct {
	streams     int
	prompt      int
	output      int
	a, b        float64 // seconds; seconds per token of context
	serverScale float64
	waiting     func(t time.Duration) float64
	startAt     time.Duration
}

func (l lawRun) records() ([]results.Result, []results.Sample) {
	rs := make([]results.Result, l.streams)
	now := l.startAt
	if now == 0 {
		now = 100 * time.Millisecond // an offset of 0 means "not sent"
	}
	for i := range rs {
		rs[i] = results.Result{Seq: uint64(i), Outcome: results.OK, API: results.APICompletions,
			Stream: true, Scheduled: now, Sent: now, PromptTokens: l.prompt, OutputTokens: l.output}
	}
	type tick struct {
		at     time.Duration
		tokens float64
		ctx    float64
	}
	var ticks []tick
	ctx := float64(l.streams * l.prompt)
	var total float64
	for k := 0; k < l.output; k++ {
		now += time.Duration((l.a + l.b*ctx) * float64(time.Second))
		for i := range rs {
			rs[i].ChunkTimes = append(rs[i].ChunkTimes, now-rs[i].Sent)
		}
		ctx += float64(l.streams)
		total += float64(l.streams)
		ticks = append(ticks, tick{now, total, ctx})
	}
	for i := range rs {
		rs[i].FirstToken = rs[i].Sent + rs[i].ChunkTimes[0]
		rs[i].FirstContent = rs[i].FirstToken
		rs[i].LastToken = now
		rs[i].End = now
	}
	var ss []results.Sample
	j := 0
	var gen float64
	for at := time.Duration(0); at <= now+time.Second; at += time.Second {
		for j < len(ticks) && ticks[j].at <= at {
			gen = ticks[j].tokens
			j++
		}
		w := 0.0
		if l.waiting != nil {
			w = l.waiting(at)
		}
		ss = append(ss, results.Sample{Index: uint64(len(ss)), Target: "http://127.0.0.1:1/metrics",
			Start: at, At: at, OK: true, Reading: results.Reading{Profile: "vllm", Snapshot: results.Snapshot{Values: results.Values{
				results.KVUsage: 0.8 * float64(j) / float64(len(ticks)+1), // below the 90 % that reads as a full cache results.Running: float64(l.streams),
				results.Waiting: w, results.Preemptions: 0, results.GenerationTokens: gen * l.serverScale,
			}}}})
	}
	return rs, ss
}

func correlateRecords(rs []results.Result, ss []results.Sample) *correlate.Correlation {
	a := New()
	a.AddHeader(&results.Header{Schema: results.Schema,
		Scenario: json.RawMessage(`{"name":"law","scrape":{"interval":"1s"},"load":{"stages":[{"name":"only"}]}}`)})
	for i := range rs {
		a.Add(&rs[i])
	}
	for _, s := range ss {
		a.AddSample(s)
	}
	return a.Summary().Correlation
}

func TestCorrelationLaw(t *testing.T) {
	t.Parallel()
	base := lawRun{streams: 12, prompt: 1000, output: 3000, a: 0.010, b: 500e-9, serverScale: 1}
	tests := []struct {
		name      string
		run       lawRun
		flagged   bool
		verdict   string
		waitShare float64 // TTFT share spent waiting, ±0.01
	}{
		{name: "agreeing server", run: base, verdict: "not saturated"},
		{name: "server counts 10% more", run: func() lawRun { l := base; l.serverScale = 1.1; return l }(),
			flagged: true, verdict: "not saturated"},
		{name: "queue grows while throughput is flat",
			run: func() lawRun {
				l := base
				l.b = 0 // flat throughput
				l.startAt = 500 * time.Millisecond
				l.waiting = func(t time.Duration) float64 { return math.Floor(t.Seconds()) }
				return l
			}(),
			verdict: "saturated", waitShare: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := correlateRecords(tc.run.records())
			if c == nil || len(c.Stages) != 1 {
				t.Fatalf("correlation = %+v", c)
			}
			st := c.Stages[0]
			l := tc.run
			// Expected start and end throughput: n / (a + b·ctx) at the
			// contexts of the first and last windows.
			perStream := func(ctx float64) float64 { return 1 / (l.a + l.b*ctx) }
			if st.Start == nil || st.End == nil {
				t.Fatalf("no start/end: %+v", st)
			}
			for _, p := range []*correlate.Point{st.Start, st.End} {
				want := float64(l.streams) * perStream(p.ContextTokens)
				if rel := math.Abs(p.TokensPerSec/want - 1); rel > 0.02 {
					t.Errorf("throughput at context %.0f = %.1f tok/s, want %.1f (%.1f%% off)", p.ContextTokens, p.TokensPerSec, want, 100*rel)
				}
			}
			if l.b > 0 {
				f := c.Fit
				if f == nil {
					t.Fatal("no fit")
				}
				if math.Abs(f.InterceptMS-l.a*1e3) > 0.01*l.a*1e3 || math.Abs(f.SlopeNSPerToken-l.b*1e9) > 0.03*l.b*1e9 {
					t.Errorf("fit a = %.4f ms, b = %.2f ns/token; want %.4f, %.2f", f.InterceptMS, f.SlopeNSPerToken, l.a*1e3, l.b*1e9)
				}
				if f.R2 < 0.99 {
					t.Errorf("R² = %.4f, want ≥ 0.99", f.R2)
				}
				if c.RKVUsage == nil || *c.RKVUsage > -0.9 || c.RContext == nil || *c.RContext > -0.9 {
					t.Errorf("r(kv) = %v, r(context) = %v; want both < −0.9", fmtPtr(c.RKVUsage), fmtPtr(c.RContext))
				}
				if st.Drop == nil || *st.Drop <= 0 {
					t.Errorf("drop = %v, want > 0", fmtPtr(st.Drop))
				}
			}
			if x := c.CrossCheck; x == nil || x.Flagged != tc.flagged {
				t.Errorf("cross-check = %+v, want flagged %v", x, tc.flagged)
			}
			if st.Verdict != tc.verdict {
				t.Errorf("verdict = %q (%s), want %q", st.Verdict, st.VerdictReason, tc.verdict)
			}
			if c.TTFTWaitingShare == nil || math.Abs(*c.TTFTWaitingShare-tc.waitShare) > 0.01 {
				t.Errorf("TTFT waiting share = %v, want %v", fmtPtr(c.TTFTWaitingShare), tc.waitShare)
			}
			if _, err := json.Marshal(c); err != nil {
				t.Errorf("marshal: %v", err)
			}
		})
	}
}

// TestCorrelationWithoutScrapes: a run without /metrics still gets a
// client-side timeline on fixed windows, and no server figure.
func TestCorrelationWithoutScrapes(t *testing.T) {
	t.Parallel()
	rs, _ := lawRun{streams: 12, prompt: 100, output: 2000, a: 0.005, b: 1e-6, serverScale: 1}.records()
	c := correlateRecords(rs, nil)
	if c.Aligned || c.CrossCheck != nil || c.RKVUsage != nil || c.Preemptions != nil {
		t.Errorf("server figures without scrapes: %+v", c)
	}
	if c.Fit == nil || c.Fit.R2 < 0.99 {
		t.Errorf("fit = %+v, want one from client data alone", c.Fit)
	}
	if len(c.Findings) == 0 || c.Findings[0] != "Whether the server saturated cannot be told: no /metrics page was scraped, so the timeline holds the client's figures only." {
		t.Errorf("findings = %q", c.Findings)
	}
}

// FuzzCorrelate feeds arbitrary request and sample timings through the
// correlator: it must not panic and its section must encode as JSON (no
// NaN or Inf leaks out).
func FuzzCorrelate(f *testing.F) {
	f.Add(uint64(1), uint8(5), uint8(3), false)
	f.Add(uint64(2), uint8(40), uint8(0), true)
	f.Add(uint64(3), uint8(1), uint8(30), true)
	f.Fuzz(func(t *testing.T, seed uint64, nreq, nsample uint8, zeroes bool) {
		rng := rand.New(rand.NewPCG(seed, 7))
		d := func(max int64) time.Duration {
			if zeroes && rng.IntN(4) == 0 {
				return 0
			}
			return time.Duration(rng.Int64N(max))
		}
		var rs []results.Result
		for i := range int(nreq) {
			r := results.Result{Seq: uint64(i), Stage: rng.IntN(3),
				Outcome: []results.Outcome{results.OK, results.Failed, results.Canceled, results.Dropped}[rng.IntN(4)],
				Sent:    d(5e9), PromptTokens: rng.IntN(3), OutputTokens: rng.IntN(50), Warmup: rng.IntN(5) == 0}
			for range rng.IntN(20) {
				r.ChunkTimes = append(r.ChunkTimes, d(3e9))
			}
			slices.Sort(r.ChunkTimes)
			if rng.IntN(2) == 0 {
				for range r.ChunkTimes {
					r.ChunkTokens = append(r.ChunkTokens, int32(rng.IntN(3)))
				}
			}
			r.FirstToken, r.End = d(8e9), d(9e9)
			rs = append(rs, r)
		}
		var ss []results.Sample
		for i := range int(nsample) {
			v := results.Values{}
			for _, m := range []results.Meaning{results.KVUsage, results.Running, results.Waiting, results.Preemptions, results.GenerationTokens} {
				if rng.IntN(4) > 0 {
					v[m] = float64(rng.IntN(100))
				}
			}
			ss = append(ss, results.Sample{Index: uint64(i), Target: []string{"a", "b"}[rng.IntN(2)],
				At: d(10e9), OK: rng.IntN(5) > 0, Reading: results.Reading{Snapshot: results.Snapshot{Values: v}}})
		}
		c := correlateRecords(rs, ss)
		if _, err := json.Marshal(c); err != nil {
			t.Fatalf("marshal: %v", err)
		}
	})
}

// TestCorrelationNoLaw is issue 9's "fit presented as a law": throughput
// that rises with the context in flight gives a line with a negative
// slope. It is reported as arithmetic, not stated as a law, and not drawn.
func TestCorrelationNoLaw(t *testing.T) {
	t.Parallel()
	c := correlateRecords(lawRun{streams: 4, prompt: 1000, output: 3000, a: 0.010, b: -200e-9, serverScale: 1}.records())
	if c.Fit == nil || c.Fit.Holds || c.Fit.SlopeNSPerToken >= 0 {
		t.Fatalf("fit = %+v, want a negative slope that does not hold", c.Fit)
	}
	text := strings.Join(c.Findings, "\n")
	if !strings.Contains(text, "No decode law fits these windows") || strings.Contains(text, "memory-bound") {
		t.Errorf("findings:\n%s", text)
	}
}
