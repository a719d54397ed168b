package run

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
)

// recKey is what the load model alone decides of a record: the same under
// both drivers for a fixed seed.
type recKey struct {
	Seq     uint64
	Stage   int
	Warmup  bool
	Outcome results.Outcome
	Session uint64
	Turn    int
	Inputs  int
	// A session's: its agent, its last request, and the history's length
	// (intended, and as the server counted it).
	Agent        int
	SessionEnd   bool
	InputTokens  int
	PromptTokens int
}

// TestDriversAgree runs one scenario per stage kind (and embeddings, and
// stages in sequence) under the wall-clock driver (HTTP to the simulator in
// this process) and the virtual-clock driver (its engine on a virtual
// clock), with the same seed, and checks that they make the same records:
// sequence numbers, stages, warmup, outcomes, sessions and turns, and, for
// arrival-driven stages, the same scheduled offsets to the nanosecond. A
// closed loop's schedule follows the responses, so there both drivers must
// send each worker's first request at the stage's start and no request
// before a response of its stage ended.
func TestDriversAgree(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	trace := filepath.Join(dir, "trace.jsonl")
	var tr string
	for i := range 12 {
		tr += fmt.Sprintf("{\"timestamp\": %d, \"input_length\": %d, \"output_length\": 8, \"hash_ids\": [%d]}\n", i*37, 300+i*20, i%3)
	}
	if err := os.WriteFile(trace, []byte(tr), 0o644); err != nil {
		t.Fatal(err)
	}
	sessions := filepath.Join(dir, "sessions.jsonl")
	var turns []string // 6 sessions of 3 turns, 40 ms apart, in the order the turns were sent
	for at := 0; at < 6*40+3*150; at++ {
		for i := range 6 {
			if k := (at - i*40) / 150; at >= i*40 && k < 3 && (at-i*40)%150 == 0 {
				turns = append(turns, fmt.Sprintf("{\"session_id\": %d, \"timestamp\": %d, \"input_length\": %d, \"output_length\": 8, \"hash_ids\": [0]}\n", i, at, 600+k*100))
			}
		}
	}
	if err := os.WriteFile(sessions, []byte(strings.Join(turns, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	const head = "target: {url: \"sim://tiny?seed=7&enable_prompt_tokens_details=true\"}\nscrape: {enabled: false}\n" +
		"prompts: {seed: 11, input_tokens: 64, output_tokens: 8}\n"
	const session = "target: {url: \"sim://tiny?seed=7&enable_prompt_tokens_details=true&kv_cache_memory_bytes=33587200&max_model_len=4096\"}\n" +
		"scrape: {enabled: false}\nprompts: {seed: 11}\nload: {stages: [{name: s, %s, session: {sessions: 5, turns: {dist: uniform, min: 1, max: 3}, " +
		"system_tokens: 100, user_tokens: 40, reply_tokens: 8, think_time: 15ms, " +
		"tools: {calls: {dist: uniform, min: 0, max: 2}, parallel: %v, result_tokens: 50, latency: 5ms}, " +
		"subagents: {every: 2, count: 2}, compaction: {threshold_tokens: 400, summary_tokens: 20}}}]}\n"
	cases := []struct {
		name, doc string
		workers   int  // closed-loop workers of stage 0 (0: arrival-driven)
		sessions  bool // a session stage: sub-agents finish in any order, so the sequence numbers may differ
	}{
		{"closed loop", head + "load: {stages: [{name: c, concurrency: 3, requests: 15, warmup: {requests: 2}}]}\n", 3, false},
		{"open loop", head + "load: {stages: [{name: o, rate: 80, arrival: poisson, requests: 25, warmup: {requests: 3}}]}\n", 0, false},
		{"open loop, overflow queue", head + "load: {stages: [{name: q, rate: 400, arrival: constant, requests: 30, max_concurrency: 3, overflow: queue}]}\n", 0, false},
		{"trace replay", head + fmt.Sprintf("load: {stages: [{name: t, trace: {path: %q, speedup: 2}}]}\n", trace), 0, false},
		{"conversation", "target: {url: \"sim://tiny?seed=7\"}\nscrape: {enabled: false}\n" +
			"prompts: {seed: 11, input_tokens: 32, output_tokens: 8, conversation: {turns: 3, think_time: 20ms}}\n" +
			"load: {stages: [{name: users, concurrency: 1, requests: 7}]}\n", 1, false},
		{"embeddings", "target: {url: \"sim://tiny?seed=7\", api: embeddings}\nscrape: {enabled: false}\nrequest: {batch: 3}\n" +
			"prompts: {seed: 11, input_tokens: 48}\nload: {stages: [{name: e, concurrency: 2, requests: 8}]}\n", 2, false},
		{"stages", head + "load: {stages: [{name: a, concurrency: 2, requests: 6}, {name: b, rate: 40, arrival: constant, requests: 8}]}\n", 2, false},
		{"sessions, closed", fmt.Sprintf(session, "concurrency: 2", true), 0, true},
		{"sessions, open", fmt.Sprintf(session, "rate: 20, arrival: constant, max_concurrency: 2, overflow: queue", false), 0, true},
		{"sessions trace", head + fmt.Sprintf("load: {stages: [{name: r, max_concurrency: 8, session: {trace: {path: %q, speedup: 2}}}]}\n", sessions), 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			wall := driverRecords(t, c.doc, false)
			virt := driverRecords(t, c.doc, true)
			if c.sessions {
				bySession(wall)
				bySession(virt)
				ends, subs := 0, 0
				for _, r := range wall {
					ends += btoi(r.SessionEnd)
					subs += btoi(r.Agent > 0)
				}
				if c.name != "sessions trace" && (ends != 5 || subs == 0) {
					t.Errorf("%d sessions ended, %d sub-agent requests: want 5 sessions, with sub-agents", ends, subs)
				}
			}
			if len(wall) == 0 || len(wall) != len(virt) {
				t.Fatalf("%d records in real time, %d in virtual time", len(wall), len(virt))
			}
			for i := range wall {
				w, v := recordKey(&wall[i]), recordKey(&virt[i])
				if w != v {
					t.Errorf("record %d: real time %+v, virtual time %+v", i, w, v)
				}
				if w.Outcome != results.OK {
					t.Errorf("record %d: %s (%s)", i, w.Outcome, wall[i].Error)
				}
			}
			for _, recs := range [][]results.Result{wall, virt} {
				checkSchedule(t, recs, c.workers)
			}
			if c.workers == 0 && !c.sessions {
				if w, v := offsets(wall), offsets(virt); !slices.Equal(w, v) {
					t.Errorf("scheduled offsets differ:\nreal    %v\nvirtual %v", w, v)
				}
			}
		})
	}
}

func recordKey(r *results.Result) recKey {
	return recKey{Seq: r.Seq, Stage: r.Stage, Warmup: r.Warmup, Outcome: r.Outcome, Session: r.Session, Turn: r.Turn, Inputs: r.Inputs,
		Agent: r.Agent, SessionEnd: r.SessionEnd, InputTokens: r.InputTokens, PromptTokens: r.PromptTokens}
}

// bySession orders a session stage's records by session, agent and turn,
// and forgets their sequence numbers: the sub-agents of a fan-out run at
// once and may end in either order over HTTP, and the next request of
// the one that ended first takes the next number.
func bySession(recs []results.Result) {
	for i := range recs {
		recs[i].Seq = 0
	}
	slices.SortFunc(recs, func(a, b results.Result) int {
		return cmp.Or(cmp.Compare(a.Session, b.Session), cmp.Compare(a.Agent, b.Agent), cmp.Compare(a.Turn, b.Turn))
	})
}

// driverRecords runs doc under one driver and returns its request records
// in sequence order.
func driverRecords(t *testing.T, doc string, virtual bool) []results.Result {
	t.Helper()
	sc, err := scenario.Parse("drivers.yaml", []byte("name: drivers\n"+doc))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	if _, err := Run(ctx, sc, Options{Dir: dir, Virtual: virtual}); err != nil {
		t.Fatalf("virtual %v: %v", virtual, err)
	}
	r, err := results.Open(filepath.Join(dir, FileResults))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var recs []results.Result
	for r.Scan() {
		if res := r.Record().Result; res != nil {
			recs = append(recs, *res)
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(recs, func(a, b results.Result) int { return int(a.Seq) - int(b.Seq) })
	return recs
}

// offsets are the records' scheduled times from their stage's first.
func offsets(recs []results.Result) []time.Duration {
	first := map[int]time.Duration{}
	out := make([]time.Duration, len(recs))
	for i := range recs {
		r := &recs[i]
		if _, ok := first[r.Stage]; !ok {
			first[r.Stage] = r.Scheduled
		}
		out[i] = r.Scheduled - first[r.Stage]
	}
	return out
}

// checkSchedule checks the schedule of stage 0 of a closed loop with
// workers workers: the first workers requests at the stage's start, every
// later one once a request of the stage had ended; and in every stage,
// nothing sent before its schedule.
func checkSchedule(t *testing.T, recs []results.Result, workers int) {
	t.Helper()
	for i := range recs {
		r := &recs[i]
		if r.Sent < r.Scheduled {
			t.Errorf("seq %d sent at %v before its schedule %v", r.Seq, r.Sent, r.Scheduled)
		}
		if r.Stage != 0 || workers == 0 {
			continue
		}
		if i < workers {
			if r.Scheduled != recs[0].Scheduled {
				t.Errorf("seq %d: worker's first request at %v, the stage started at %v", r.Seq, r.Scheduled, recs[0].Scheduled)
			}
			continue
		}
		ended := slices.ContainsFunc(recs[:i], func(p results.Result) bool { return p.Stage == 0 && p.End <= r.Scheduled })
		if !ended {
			t.Errorf("seq %d scheduled at %v before any request of its stage ended", r.Seq, r.Scheduled)
		}
	}
}

// TestOverflowQueue: an open loop with overflow: queue sends every arrival
// (vLLM's --max-concurrency semaphore): none dropped, never more than
// max_concurrency in flight, queued arrivals sent oldest first, each late
// by its wait (schedule lag); with the default overflow, drop, the same
// load drops arrivals and never sends them. Both drivers.
func TestOverflowQueue(t *testing.T) {
	t.Parallel()
	const doc = "target: {url: \"sim://tiny?seed=7\"}\nscrape: {enabled: false}\nprompts: {input_tokens: 64, output_tokens: 16}\n" +
		"load: {stages: [{name: q, rate: 500, arrival: constant, requests: 40, max_concurrency: 3%s}]}\n"
	for _, virtual := range []bool{false, true} {
		queued := driverRecords(t, fmt.Sprintf(doc, ", overflow: queue"), virtual)
		late := 0
		for i := range queued {
			r := &queued[i]
			if r.Outcome != results.OK {
				t.Fatalf("virtual %v: seq %d %s: want every arrival sent and served", virtual, r.Seq, r.Outcome)
			}
			// The load hands queued arrivals out oldest first. Judged in
			// virtual time: in real time each request's goroutine stamps its
			// own send, and on a busy machine (or under the race detector) one
			// handed out first may run milliseconds after the next.
			if virtual && i > 0 && r.Sent < queued[i-1].Sent {
				t.Errorf("virtual %v: seq %d sent at %v before seq %d at %v: the queue is not oldest first", virtual, r.Seq, r.Sent, queued[i-1].Seq, queued[i-1].Sent)
			}
			inFlight := 0
			for j := range queued {
				if queued[j].Sent <= r.Sent && queued[j].End > r.Sent {
					inFlight++
				}
			}
			if inFlight > 3 {
				t.Errorf("virtual %v: %d requests in flight when seq %d was sent, cap 3", virtual, inFlight, r.Seq)
			}
			if r.Sent-r.Scheduled > 5*time.Millisecond {
				late++
			}
		}
		if late < 10 {
			t.Errorf("virtual %v: %d of 40 arrivals waited in the queue: the load should overflow the cap", virtual, late)
		}
		dropped := 0
		for _, r := range driverRecords(t, fmt.Sprintf(doc, ""), virtual) {
			if r.Outcome == results.Dropped {
				dropped++
			}
		}
		if dropped < 10 {
			t.Errorf("virtual %v: overflow drop dropped %d of 40", virtual, dropped)
		}
	}
}

// TestWarmupShapes: warmup.shapes sends, before the stage, one request of
// every prompt-length shape (the shortest and longest lengths and every
// power of two between), one at a time, as warmup, not counted in the
// stage's requests; under both drivers alike.
func TestWarmupShapes(t *testing.T) {
	t.Parallel()
	const doc = "target: {url: \"sim://tiny?seed=7\"}\nscrape: {enabled: false}\n" +
		"prompts: {seed: 11, input_tokens: {dist: uniform, min: 100, max: 700}, output_tokens: 16}\n" +
		"load: {stages: [{name: c, concurrency: 2, requests: 10, warmup: {shapes: true}}]}\n"
	var keys [2][]recKey
	for i, virtual := range []bool{false, true} {
		recs := driverRecords(t, doc, virtual)
		var shapes []int
		measured := 0
		for _, r := range recs {
			keys[i] = append(keys[i], recordKey(&r))
			if r.Warmup {
				shapes = append(shapes, r.InputTokens)
				continue
			}
			measured++
		}
		if want := []int{100, 128, 256, 512, 700}; !slices.Equal(shapes, want) || measured != 10 {
			t.Errorf("virtual %v: warmup shapes %v and %d measured, want %v then 10", virtual, shapes, measured, want)
		}
		for j := 1; j < len(shapes); j++ {
			if recs[j].Sent < recs[j-1].End {
				t.Errorf("virtual %v: shape %d sent before shape %d ended: want one at a time", virtual, j, j-1)
			}
		}
	}
	if !slices.Equal(keys[0], keys[1]) {
		t.Errorf("the drivers disagree:\nreal    %v\nvirtual %v", keys[0], keys[1])
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
