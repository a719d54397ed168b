package run

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

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

// TestTraceReplay is issue 10's trace check, against the simulator: the
// arrivals follow the file's timestamps divided by the speed-up (their
// scheduled offsets exactly; their sends within the scheduler's lag), each
// request has the file's lengths (the simulator's usage confirms the
// prompt's token count), and a prompt whose leading hash ids an earlier
// arrival already sent is served from the prefix cache for at least those
// blocks, while one whose first id is new is not. The simulator's KV cache
// is enlarged so that nothing is evicted.
func TestTraceReplay(t *testing.T) {
	t.Parallel()
	const speedup = 2
	lines := readFixture(t)
	probe := startTimerProbe()
	sum, recs := runSim(t, `name: trace
target: {url: "sim://tiny?enable_prompt_tokens_details=true&num_gpu_blocks_override=2048"}
scrape: {enabled: false}
load: {stages: [{name: replay, trace: {path: `+traceFixture+`, speedup: 2}, max_concurrency: 64}]}
`)
	if len(recs) != len(lines) || sum.Overall.Requests.OK != int64(len(lines)) {
		t.Fatalf("%d records, %d ok: want the trace's %d arrivals", len(recs), sum.Overall.Requests.OK, len(lines))
	}
	slices.SortFunc(recs, func(a, b results.Result) int { return int(a.Seq) - int(b.Seq) })
	t0, ts0 := recs[0].Scheduled, lines[0].Timestamp
	var worstLag time.Duration
	for n, r := range recs {
		l := lines[n]
		want := time.Duration((l.Timestamp - ts0) / speedup * float64(time.Millisecond))
		if got := r.Scheduled - t0; got != want {
			t.Errorf("arrival %d scheduled at %v, want the file's %g ms ÷ %d = %v", n, got, l.Timestamp-ts0, speedup, want)
		}
		worstLag = max(worstLag, r.Sent-r.Scheduled)
		if r.InputTokens != l.InputLength || r.PromptTokens != l.InputLength || r.MaxTokens != l.OutputLength || r.OutputTokens != l.OutputLength {
			t.Errorf("arrival %d: input %d (server counted %d), max_tokens %d, output %d: want the file's %d and %d",
				n, r.InputTokens, r.PromptTokens, r.MaxTokens, r.OutputTokens, l.InputLength, l.OutputLength)
		}
	}
	late := probe()

	// Prefix reuse: the cached tokens follow the hash ids.
	seen := map[uint64]bool{}
	var hits int
	for n, r := range recs {
		ids := lines[n].HashIDs
		// shared: leading ids sent by an arrival at least 100 ms (of the
		// replay) earlier, long enough to have been prefilled.
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
		// Another arrival with the same first block that was sent before
		// this one's first token may have been prefilled first (arrivals a
		// few ms apart can reach the server in either order on a busy
		// machine): then this one may find the block cached.
		raced := false
		for m := range recs {
			if m != n && len(ids) > 0 && len(lines[m].HashIDs) > 0 && lines[m].HashIDs[0] == ids[0] && recs[m].Sent < r.FirstToken {
				raced = raced || m > n
			}
		}
		switch {
		case len(ids) > 0 && !seen[ids[0]] && !raced:
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

	// Last, as it may skip: the sends kept the schedule, unless the
	// machine could not keep a timer meanwhile.
	if h := sum.Harness; h != nil && h.Limited {
		t.Skipf("the machine could not keep the schedule, lag not judged: %s", h.Reason)
	}
	if worstLag > 25*time.Millisecond {
		if late > 5*time.Millisecond {
			t.Skipf("an arrival was sent %v late, but one 5 ms timer in ten fired over %v late meanwhile: the machine could not keep the schedule, lag not judged", worstLag, late)
		}
		t.Errorf("an arrival was sent %v after its scheduled time (5 ms timers p90 %v late meanwhile): want within 25 ms", worstLag, late)
	}
}

// startTimerProbe measures how late this machine fires a 5 ms timer, from
// now until the returned function is called, which returns the 90th
// percentile of the lateness seen: a timing test's "can this machine keep
// a schedule now". (The worst is tens of milliseconds on a busy machine
// even when nearly every timer is on time.)
func startTimerProbe() func() time.Duration {
	stop := make(chan struct{})
	done := make(chan time.Duration)
	go func() {
		var late []time.Duration
		for {
			t0 := time.Now()
			select {
			case <-stop:
				slices.Sort(late)
				if len(late) == 0 {
					done <- 0
					return
				}
				done <- late[len(late)*9/10]
				return
			case <-time.After(5 * time.Millisecond):
				late = append(late, time.Since(t0)-5*time.Millisecond)
			}
		}
	}()
	return func() time.Duration { close(stop); return <-done }
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
