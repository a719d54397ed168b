package results

import (
	"slices"
	"testing"
	"time"
)

const ms = time.Millisecond

func TestDerivedFigures(t *testing.T) {
	t.Parallel()
	// A stream sent 5 ms late, first token 100 ms after Sent, four chunks.
	base := Result{
		Outcome: OK, Stream: true,
		Scheduled: 1000 * ms, Sent: 1005 * ms, Headers: 1006 * ms,
		FirstToken: 1105 * ms, FirstContent: 1125 * ms, LastToken: 1165 * ms, End: 1170 * ms,
		ChunkTimes:   []time.Duration{100 * ms, 120 * ms, 140 * ms, 160 * ms},
		OutputTokens: 4,
	}
	type fig struct {
		d  time.Duration
		ok bool
	}
	f := func(d time.Duration, ok bool) fig { return fig{d, ok} }
	tests := []struct {
		name                                      string
		mod                                       func(r *Result)
		ttft, ttftSched, ttfc, e2e, e2eSched, lag fig
		tpot                                      fig
		itls, chunkITLs                           []time.Duration
	}{
		{
			name: "one token per chunk",
			ttft: fig{100 * ms, true}, ttftSched: fig{105 * ms, true}, ttfc: fig{120 * ms, true},
			e2e: fig{165 * ms, true}, e2eSched: fig{170 * ms, true}, lag: fig{5 * ms, true}, tpot: fig{20 * ms, true},
			itls:      []time.Duration{20 * ms, 20 * ms, 20 * ms},
			chunkITLs: []time.Duration{20 * ms, 20 * ms, 20 * ms},
		},
		{
			name: "per-chunk counts from continuous usage",
			mod:  func(r *Result) { r.OutputTokens = 7; r.ChunkTokens = []int32{1, 2, 0, 4} },
			ttft: fig{100 * ms, true}, ttftSched: fig{105 * ms, true}, ttfc: fig{120 * ms, true},
			e2e: fig{165 * ms, true}, e2eSched: fig{170 * ms, true}, lag: fig{5 * ms, true}, tpot: fig{10 * ms, true},
			// chunk 1: 2 tokens over 20 ms; chunk 2: none, its gap goes to chunk 3: 4 tokens over 40 ms.
			itls:      []time.Duration{10 * ms, 10 * ms, 10 * ms, 10 * ms, 10 * ms, 10 * ms},
			chunkITLs: []time.Duration{20 * ms, 20 * ms, 20 * ms},
		},
		{
			name: "tokens spread evenly without per-chunk counts",
			mod:  func(r *Result) { r.OutputTokens = 8 },
			ttft: fig{100 * ms, true}, ttftSched: fig{105 * ms, true}, ttfc: fig{120 * ms, true},
			e2e: fig{165 * ms, true}, e2eSched: fig{170 * ms, true}, lag: fig{5 * ms, true}, tpot: fig{60 * ms / 7, true},
			// the 7 tokens after the first over 3 chunks: 2, 2, 3
			itls:      []time.Duration{10 * ms, 10 * ms, 10 * ms, 10 * ms, 20 * ms / 3, 20 * ms / 3, 20 * ms / 3},
			chunkITLs: []time.Duration{20 * ms, 20 * ms, 20 * ms},
		},
		{
			name: "fewer tokens than chunks",
			mod:  func(r *Result) { r.OutputTokens = 2 },
			ttft: fig{100 * ms, true}, ttftSched: fig{105 * ms, true}, ttfc: fig{120 * ms, true},
			e2e: fig{165 * ms, true}, e2eSched: fig{170 * ms, true}, lag: fig{5 * ms, true}, tpot: fig{60 * ms, true},
			// the one token after the first lands on the last chunk: k = 0, 0, 1
			itls:      []time.Duration{60 * ms},
			chunkITLs: []time.Duration{20 * ms, 20 * ms, 20 * ms},
		},
		{
			name: "single token",
			mod: func(r *Result) {
				r.OutputTokens, r.ChunkTimes, r.LastToken, r.FirstContent = 1, r.ChunkTimes[:1], r.FirstToken, r.FirstToken
			},
			ttft: fig{100 * ms, true}, ttftSched: fig{105 * ms, true}, ttfc: fig{100 * ms, true},
			e2e: fig{165 * ms, true}, e2eSched: fig{170 * ms, true}, lag: fig{5 * ms, true},
		},
		{
			name: "reasoning only",
			mod:  func(r *Result) { r.FirstContent = 0 },
			ttft: fig{100 * ms, true}, ttftSched: fig{105 * ms, true},
			e2e: fig{165 * ms, true}, e2eSched: fig{170 * ms, true}, lag: fig{5 * ms, true}, tpot: fig{20 * ms, true},
			itls:      []time.Duration{20 * ms, 20 * ms, 20 * ms},
			chunkITLs: []time.Duration{20 * ms, 20 * ms, 20 * ms},
		},
		{
			name: "failed after tokens",
			mod:  func(r *Result) { r.Outcome, r.ErrorClass = Failed, ErrStreamTruncated },
			lag:  fig{5 * ms, true},
		},
		{
			name: "non-streaming",
			mod: func(r *Result) {
				r.Stream, r.FirstToken, r.FirstContent, r.LastToken, r.ChunkTimes = false, 0, 0, 0, nil
			},
			e2e: fig{165 * ms, true}, e2eSched: fig{170 * ms, true}, lag: fig{5 * ms, true},
		},
		{
			name: "dropped",
			mod:  func(r *Result) { *r = Result{Outcome: Dropped, Scheduled: 1000 * ms} },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := base
			r.ChunkTimes = slices.Clone(base.ChunkTimes)
			if tc.mod != nil {
				tc.mod(&r)
			}
			for _, c := range []struct {
				name      string
				got, want fig
			}{
				{"TTFT", f(r.TTFT()), tc.ttft},
				{"TTFTFromSchedule", f(r.TTFTFromSchedule()), tc.ttftSched},
				{"TTFC", f(r.TTFC()), tc.ttfc},
				{"E2E", f(r.E2E()), tc.e2e},
				{"E2EFromSchedule", f(r.E2EFromSchedule()), tc.e2eSched},
				{"ScheduleLag", f(r.ScheduleLag()), tc.lag},
				{"TPOT", f(r.TPOT()), tc.tpot},
			} {
				if c.got != c.want {
					t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
				}
			}
			if got := r.AppendITLs(nil); !slices.Equal(got, tc.itls) {
				t.Errorf("AppendITLs = %v, want %v", got, tc.itls)
			}
			if got := r.AppendChunkITLs(nil); !slices.Equal(got, tc.chunkITLs) {
				t.Errorf("AppendChunkITLs = %v, want %v", got, tc.chunkITLs)
			}
		})
	}
}

// TestAppendITLsNoAlloc checks the append form allocates nothing when dst
// has room.
func TestAppendITLsNoAlloc(t *testing.T) {
	r := Result{Outcome: OK, OutputTokens: 400, ChunkTimes: make([]time.Duration, 200)}
	for i := range r.ChunkTimes {
		r.ChunkTimes[i] = time.Duration(i) * 20 * ms
	}
	dst := make([]time.Duration, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { dst = r.AppendITLs(dst[:0]); dst = r.AppendChunkITLs(dst) }); n != 0 {
		t.Errorf("%v allocations", n)
	}
	if len(dst) != 399+199 {
		t.Errorf("%d latencies", len(dst))
	}
}

// TestPromptCounts checks the prompt-count comparison a record carries:
// the expected count is the server's minus the recorded difference, and
// records without both counts (failed, estimated) have none.
func TestPromptCounts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name             string
		r                Result
		expected, server int
		ok               bool
	}{
		{"agree", Result{Outcome: OK, InputTokens: 100, PromptTokens: 108, PromptTokensDiff: 0}, 108, 108, true},
		{"server counts more", Result{Outcome: OK, InputTokens: 100, PromptTokens: 131, PromptTokensDiff: 23}, 108, 131, true},
		{"server counts fewer", Result{Outcome: OK, InputTokens: 100, PromptTokens: 90, PromptTokensDiff: -18}, 108, 90, true},
		{"estimated", Result{Outcome: OK, InputTokens: 100, PromptTokens: 100, Estimated: true}, 0, 0, false},
		{"failed", Result{Outcome: Failed, InputTokens: 100}, 0, 0, false},
		{"no intended length", Result{Outcome: OK, PromptTokens: 100}, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, s, ok := tc.r.PromptCounts()
			if e != tc.expected || s != tc.server || ok != tc.ok {
				t.Errorf("PromptCounts() = %d, %d, %v; want %d, %d, %v", e, s, ok, tc.expected, tc.server, tc.ok)
			}
		})
	}
}

// TestAppendITLsOneTokenEach: with one token a chunk and no recorded
// counts, the gaps are the chunks' own (the fast path), as the rule that
// splits tokens over chunks gives them.
func TestAppendITLsOneTokenEach(t *testing.T) {
	r := Result{Outcome: OK}
	for i := range 50 {
		r.ChunkTimes = append(r.ChunkTimes, time.Duration(i*i)*time.Microsecond)
	}
	r.OutputTokens = len(r.ChunkTimes)
	got := r.AppendITLs(nil)
	var want []time.Duration
	prev := r.ChunkTimes[0]
	for i := 1; i < len(r.ChunkTimes); i++ {
		if k := r.ChunkTokensAt(i); k > 0 {
			for range k {
				want = append(want, (r.ChunkTimes[i]-prev)/time.Duration(k))
			}
			prev = r.ChunkTimes[i]
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("AppendITLs = %v, want %v", got, want)
	}
}
