package report

import (
	"fmt"
	"strings"
)

// comparability says what would differ if the same load were run with
// another client: the choices of this run that other benchmark clients
// make differently, each with this run's own numbers, so that a reader
// setting its figures beside another tool's knows what to line up. Only
// what this run's records show is said.
func comparability(s *Summary) []string {
	var out []string
	w := s.Workload
	o := &s.Overall
	dropStages, queueStages := []string{}, []string{}
	if w != nil {
		for _, st := range w.Stages {
			switch {
			case st.Loop == "open" && st.Queue:
				queueStages = append(queueStages, st.Name)
			case st.Loop == "open":
				dropStages = append(dropStages, st.Name)
			}
		}
	}
	if len(dropStages) > 0 {
		out = append(out, fmt.Sprintf("Arrivals beyond the cap are dropped, never sent (overflow: drop, in %s; %d dropped in all): the schedule is kept, so latency is not hidden by a client that waits. "+
			"A client that queues them instead (vllm bench serve --max-concurrency; overflow: queue here) sends every arrival late and measures from the send.",
			strings.Join(dropStages, ", "), o.Requests.Dropped))
	}
	if len(queueStages) > 0 {
		out = append(out, fmt.Sprintf("Arrivals beyond the cap wait client-side (overflow: queue, in %s), as vllm bench serve --max-concurrency makes them wait: TTFT and E2E are measured from the send; "+
			"the from-schedule figures (ttft_from_schedule_ms, e2e_from_schedule_ms) include the wait, as a user would feel it.", strings.Join(queueStages, ", ")))
	}
	if o.Requests.Warmup > 0 {
		out = append(out, fmt.Sprintf("%d warmup requests are left out of every figure. vllm bench serve counts every request but its --num-warmups extra ones; a tool that counts all would include them.",
			o.Requests.Warmup))
	}
	if t := o.Tokens; t.EstimatedRequests > 0 {
		out = append(out, fmt.Sprintf("Output tokens of %d requests were counted here from the text received (the server sent no usage); elsewhere they come from the server's usage. "+
			"A client that re-tokenizes every response (vllm bench serve with its tokenizer) may count a few differently.", t.EstimatedRequests))
	} else if o.Requests.OK > 0 {
		out = append(out, "Token counts are the server's own (usage in every response). A client that re-tokenizes the text with a tokenizer of its own may count a few differently.")
	}
	if w != nil {
		for _, st := range w.Stages {
			switch {
			case st.Loop == "open" && st.Arrival == "poisson":
				out = append(out, fmt.Sprintf("Stage %q arrives as a Poisson process (vllm bench serve's default, --burstiness 1): at the same mean rate, evenly spaced arrivals (a constant rate) queue less, so their latencies are lower.", st.Name))
			case st.Loop == "open" && st.Arrival == "constant":
				out = append(out, fmt.Sprintf("Stage %q arrives evenly spaced (constant): at the same mean rate, Poisson arrivals (vllm bench serve's default) queue more, so their latencies are higher.", st.Name))
			}
		}
	}
	if o.ITL.Count > 0 {
		out = append(out, "ITL here is per token (itl_ms); vllm bench serve's ITL is per chunk (itl_chunk_ms, and its export's itl keys): they differ when a chunk carries several tokens.")
	}
	return out
}
