package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
	const head = "target: {url: \"sim://tiny?seed=7&enable_prompt_tokens_details=true\"}\nscrape: {enabled: false}\n" +
		"prompts: {seed: 11, input_tokens: 64, output_tokens: 8}\n"
	cases := []struct {
		name, doc string
		workers   int // closed-loop workers of stage 0 (0: arrival-driven)
	}{
		{"closed loop", head + "load: {stages: [{name: c, concurrency: 3, requests: 15, warmup: {requests: 2}}]}\n", 3},
		{"open loop", head + "load: {stages: [{name: o, rate: 80, arrival: poisson, requests: 25, warmup: {requests: 3}}]}\n", 0},
		{"open loop, overflow queue", head + "load: {stages: [{name: q, rate: 400, arrival: constant, requests: 30, max_concurrency: 3, overflow: queue}]}\n", 0},
		{"trace replay", head + fmt.Sprintf("load: {stages: [{name: t, trace: {path: %q, speedup: 2}}]}\n", trace), 0},
		{"conversation", "target: {url: \"sim://tiny?seed=7\"}\nscrape: {enabled: false}\n" +
			"prompts: {seed: 11, input_tokens: 32, output_tokens: 8, conversation: {turns: 3, think_time: 20ms}}\n" +
			"load: {stages: [{name: users, concurrency: 1, requests: 7}]}\n", 1},
		{"embeddings", "target: {url: \"sim://tiny?seed=7\", api: embeddings}\nscrape: {enabled: false}\nrequest: {batch: 3}\n" +
			"prompts: {seed: 11, input_tokens: 48}\nload: {stages: [{name: e, concurrency: 2, requests: 8}]}\n", 2},
		{"stages", head + "load: {stages: [{name: a, concurrency: 2, requests: 6}, {name: b, rate: 40, arrival: constant, requests: 8}]}\n", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			wall := driverRecords(t, c.doc, false)
			virt := driverRecords(t, c.doc, true)
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
			if c.workers == 0 {
				if w, v := offsets(wall), offsets(virt); !slices.Equal(w, v) {
					t.Errorf("scheduled offsets differ:\nreal    %v\nvirtual %v", w, v)
				}
			}
		})
	}
}

func recordKey(r *results.Result) recKey {
	return recKey{Seq: r.Seq, Stage: r.Stage, Warmup: r.Warmup, Outcome: r.Outcome, Session: r.Session, Turn: r.Turn, Inputs: r.Inputs}
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
