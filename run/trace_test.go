package run

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/results"
)

// traceFixture is the 24-arrival trace of the scenario package's tests
// (bursts of three, 5 to 20 ms apart, every 150 to 400 ms; over 2.0 s).
const traceFixture = "../scenario/testdata/trace.jsonl"

type traceLine struct {
	Timestamp    float64  `json:"timestamp"`
	InputLength  int      `json:"input_length"`
	OutputLength int      `json:"output_length"`
	HashIDs      []uint64 `json:"hash_ids"`
}

func readFixture(t *testing.T) []traceLine {
	t.Helper()
	b, err := os.ReadFile(traceFixture)
	if err != nil {
		t.Fatal(err)
	}
	var out []traceLine
	for line := range strings.Lines(string(b)) {
		var l traceLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

// traceDoc replays the fixture at twice its speed on the simulator, whose
// KV cache is enlarged so that nothing is evicted.
const traceDoc = `name: trace
target: {url: "sim://tiny?enable_prompt_tokens_details=true&num_gpu_blocks_override=2048"}
scrape: {enabled: false}
load: {stages: [{name: replay, trace: {path: ` + traceFixture + `, speedup: 2}, max_concurrency: 64}]}
`

// TestTraceReplay is issue 10's trace check, against the simulator: the
// arrivals are scheduled at the file's timestamps divided by the speed-up
// (exactly), each request has the file's lengths (the simulator's usage
// confirms the prompt's token count), and, in virtual time, a prompt whose
// leading hash ids an earlier arrival already sent is served from the
// prefix cache for at least those blocks, while one whose first id is new
// is not. Over HTTP it checks outcomes only, whatever the machine's load;
// the prefix check runs in virtual time, where no machine reorders two
// arrivals a few milliseconds apart, so the test is deterministic.
// TestTraceReplayKeepsSchedule judges the real-time sends' lag.
func TestTraceReplay(t *testing.T) {
	t.Parallel()
	lines := readFixture(t)
	sum, recs := runSim(t, traceDoc)
	checkTraceRecords(t, "HTTP", sum, recs, lines)
	sum, recs = runSimWith(t, traceDoc, Options{Virtual: true})
	checkTraceRecords(t, "virtual", sum, recs, lines)
	for _, r := range recs {
		if r.Sent != r.Scheduled {
			t.Errorf("virtual arrival %d sent at %v, scheduled at %v: want the schedule exactly", r.Seq, r.Sent, r.Scheduled)
		}
	}
	checkTracePrefixes(t, recs, lines)
}

// checkTraceRecords checks one replay's records against the trace: one
// ok record per line, scheduled at the line's timestamp ÷ 2, with its
// lengths. It sorts recs by sequence number.
func checkTraceRecords(t *testing.T, how string, sum *report.Summary, recs []results.Result, lines []traceLine) {
	t.Helper()
	const speedup = 2
	if len(recs) != len(lines) || sum.Overall.Requests.OK != int64(len(lines)) {
		t.Fatalf("%s: %d records, %d ok: want the trace's %d arrivals", how, len(recs), sum.Overall.Requests.OK, len(lines))
	}
	slices.SortFunc(recs, func(a, b results.Result) int { return int(a.Seq) - int(b.Seq) })
	t0, ts0 := recs[0].Scheduled, lines[0].Timestamp
	for n, r := range recs {
		l := lines[n]
		want := time.Duration((l.Timestamp - ts0) / speedup * float64(time.Millisecond))
		if got := r.Scheduled - t0; got != want {
			t.Errorf("%s: arrival %d scheduled at %v, want the file's %g ms ÷ %d = %v", how, n, got, l.Timestamp-ts0, speedup, want)
		}
		if r.InputTokens != l.InputLength || r.PromptTokens != l.InputLength || r.MaxTokens != l.OutputLength || r.OutputTokens != l.OutputLength {
			t.Errorf("%s: arrival %d: input %d (server counted %d), max_tokens %d, output %d: want the file's %d and %d",
				how, n, r.InputTokens, r.PromptTokens, r.MaxTokens, r.OutputTokens, l.InputLength, l.OutputLength)
		}
	}
}

// checkTracePrefixes checks that the cached tokens follow the hash ids:
// an arrival whose first block no earlier arrival sent has none cached,
// and one sharing k leading blocks with an arrival sent at least 100 ms
// earlier (long enough to have been prefilled) has at least k blocks
// cached. recs are in sequence order, in virtual time.
func checkTracePrefixes(t *testing.T, recs []results.Result, lines []traceLine) {
	t.Helper()
	seen := map[uint64]bool{}
	var hits int
	for n, r := range recs {
		ids := lines[n].HashIDs
		shared := 0
		for m := range n {
			if recs[n].Scheduled-recs[m].Scheduled < 100*time.Millisecond {
				continue
			}
			k := 0
			for k < len(ids) && k < len(lines[m].HashIDs) && ids[k] == lines[m].HashIDs[k] {
				k++
			}
			shared = max(shared, k)
		}
		switch {
		case len(ids) > 0 && !seen[ids[0]]:
			if r.CachedTokens != 0 {
				t.Errorf("arrival %d (new first block %d): %d cached tokens, want none", n, ids[0], r.CachedTokens)
			}
		case shared > 0:
			hits++
			if r.CachedTokens < shared*512 {
				t.Errorf("arrival %d shares %d blocks with an earlier one: %d cached tokens, want at least %d", n, shared, r.CachedTokens, shared*512)
			}
		}
		for _, h := range ids {
			seen[h] = true
		}
	}
	if hits < 10 {
		t.Errorf("%d arrivals reused an earlier prefix: the fixture should have more", hits)
	}
}

// TestTraceReplayKeepsSchedule: over HTTP in real time, every arrival is
// sent within 25 ms of its scheduled time, unless the machine could not
// keep a 5 ms timer meanwhile (then it skips, saying so). It is a timing
// bound, so it does not run under the race detector.
func TestTraceReplayKeepsSchedule(t *testing.T) {
	if raceEnabled {
		t.Skip("a timing bound: not judged under the race detector")
	}
	t.Parallel()
	probe := startTimerProbe()
	sum, recs := runSim(t, traceDoc)
	late := probe()
	if len(recs) != len(readFixture(t)) {
		t.Fatalf("%d records", len(recs))
	}
	var worstLag time.Duration
	for _, r := range recs {
		worstLag = max(worstLag, r.Sent-r.Scheduled)
	}
	if h := sum.Harness; h != nil && h.Limited {
		t.Skipf("the machine could not keep the schedule, lag not judged: %s", h.Reason)
	}
	if worstLag > 25*time.Millisecond {
		// A machine whose timers fire late by most of the bound, or one in
		// ten by 5 ms, cannot keep it.
		if late.P90 > 5*time.Millisecond || late.Max > 20*time.Millisecond {
			t.Skipf("an arrival was sent %v late, but 5 ms timers fired up to %v late (p90 %v) meanwhile: the machine could not keep the schedule, lag not judged", worstLag, late.Max, late.P90)
		}
		t.Errorf("an arrival was sent %v after its scheduled time (5 ms timers p90 %v, at worst %v late meanwhile): want within 25 ms", worstLag, late.P90, late.Max)
	}
}

// timerLateness is how late a 5 ms timer fired while a probe ran: the
// 90th percentile and the worst.
type timerLateness struct{ P90, Max time.Duration }

// startTimerProbe measures how late this machine fires a 5 ms timer, from
// now until the returned function is called, which returns the 90th
// percentile and the worst of the lateness seen: a timing test's "can
// this machine keep a schedule now". (The worst is tens of milliseconds on
// a busy machine even when nearly every timer is on time.)
func startTimerProbe() func() timerLateness {
	stop := make(chan struct{})
	done := make(chan timerLateness)
	go func() {
		var late []time.Duration
		for {
			t0 := time.Now()
			select {
			case <-stop:
				slices.Sort(late)
				if len(late) == 0 {
					done <- timerLateness{}
					return
				}
				done <- timerLateness{P90: late[len(late)*9/10], Max: late[len(late)-1]}
				return
			case <-time.After(5 * time.Millisecond):
				late = append(late, time.Since(t0)-5*time.Millisecond)
			}
		}
	}()
	return func() timerLateness { close(stop); return <-done }
}

// TestTraceDrops: a trace arriving faster than max_concurrency allows
// drops the arrivals that find no free slot, and counts them; every
// arrival still ends as one record.
func TestTraceDrops(t *testing.T) {
	t.Parallel()
	srv := newStreamServer(t, 200*time.Millisecond, time.Millisecond, 2)
	r, recs, err := runScenario(t, t.Context(), srv, `name: drops
load: {stages: [{trace: {path: `+traceFixture+`, speedup: 4}, max_concurrency: 1}]}
`)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, r, recs)
	var ok, dropped int
	for _, rec := range recs {
		switch rec.Outcome {
		case results.OK:
			ok++
		case results.Dropped:
			dropped++
		}
	}
	// 24 arrivals over 0.57 s at 4× speed, each request holding the one
	// slot for 200 ms: at most 4 can be served.
	if len(recs) != 24 || ok < 1 || ok > 4 || dropped != 24-ok {
		t.Errorf("%d records, %d ok, %d dropped: want 24, at most 4 ok, the rest dropped", len(recs), ok, dropped)
	}
	if got := r.counters().Dropped; got != uint64(dropped) {
		t.Errorf("counters say %d dropped, records %d", got, dropped)
	}
}
