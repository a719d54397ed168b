package run

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/report/chart"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
)

// llamaServer is an httptest server whose prompt cache behaves like
// llama.cpp's server with one slot (-np 1): the slot keeps the tokens of
// its last request, prompt and generation; a new request reuses their
// longest common prefix with its own prompt (at most all but its last
// token, which llama.cpp always evaluates) and reports it as
// timings.cache_n, not in its usage; /metrics counts the prompt tokens it
// evaluated (llamacpp:prompt_tokens_total, the cached ones left out) and
// the tokens predicted, both when a request ends. The chat template
// renders each message as a role token and its words (an assistant's
// tool calls as a call token and their arguments), and ends the prompt
// with the assistant's role token, which the generation follows: the
// cache holds a reply exactly as the next request renders it.
type llamaServer struct {
	mu        sync.Mutex
	slot      []string // the slot's tokens
	evaluated int      // llamacpp:prompt_tokens_total
	predicted int      // llamacpp:tokens_predicted_total
	log       []llamaRequest
	// draft makes it speculate as with --model-draft: each answer's
	// timings end with draft_n and draft_n_accepted.
	draft bool
}

// llamaRequest is what the server saw of one request, and the draft
// tokens it tested and accepted for it.
type llamaRequest struct{ prompt, cached, drafted, accepted int }

func (l *llamaServer) serve(t *testing.T) string {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model","owned_by":"llamacpp"}]}`)
	})
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		defer l.mu.Unlock()
		fmt.Fprintf(w, "# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.\n# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total %d\n", l.evaluated)
		fmt.Fprintf(w, "# HELP llamacpp:tokens_predicted_total Number of generation tokens processed.\n# TYPE llamacpp:tokens_predicted_total counter\nllamacpp:tokens_predicted_total %d\n", l.predicted)
		io.WriteString(w, "# HELP llamacpp:requests_processing Number of requests processing.\n# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 0\n")
	})
	mux.HandleFunc("/v1/chat/completions", l.chat)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// render is the prompt's tokens under the test's chat template.
func render(msgs []message) []string {
	var toks []string
	for _, m := range msgs {
		toks = append(toks, "<|"+m.Role+"|>")
		toks = append(toks, strings.Fields(m.Content)...)
		for _, c := range m.ToolCalls {
			toks = append(toks, "<|call|>", c.Function.Arguments)
		}
	}
	return append(toks, "<|assistant|>")
}

func (l *llamaServer) chat(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages      []message `json:"messages"`
		MaxTokens     int       `json:"max_tokens"`
		StreamOptions *struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	prompt := render(req.Messages)
	l.mu.Lock()
	cached := 0
	for cached < len(l.slot) && cached < len(prompt)-1 && l.slot[cached] == prompt[cached] {
		cached++
	}
	l.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	f := w.(http.Flusher)
	chunk := func(delta, finish string) {
		fmt.Fprintf(w, `data: {"choices":[{"finish_reason":%s,"index":0,"delta":%s}],"created":1,"id":"chatcmpl-l","model":"m","system_fingerprint":"b6000-abc","object":"chat.completion.chunk"}`+"\n\n", finish, delta)
		f.Flush()
	}
	chunk(`{"role":"assistant","content":null}`, "null")
	var reply []string
	for i := range req.MaxTokens {
		time.Sleep(time.Millisecond)
		word := fmt.Sprintf("w%d", (len(prompt)+i)%97)
		reply = append(reply, word)
		chunk(fmt.Sprintf(`{"content":" %s"}`, word), "null")
	}
	// The slot's cache holds the generation as it is made: the next
	// request finds it even if it arrives before this one's counters
	// move.
	l.mu.Lock()
	l.slot = append(slices.Clip(prompt), reply...)
	lr := llamaRequest{prompt: len(prompt), cached: cached}
	draft := ""
	if l.draft {
		// Accepted drafts below the reply's length, a draft length that
		// varies: rates differ request to request.
		lr.accepted = len(prompt) % max(len(reply)/2, 1)
		lr.drafted = 2*lr.accepted + 3 + len(prompt)%7
		draft = fmt.Sprintf(`,"draft_n":%d,"draft_n_accepted":%d`, lr.drafted, lr.accepted)
	}
	l.log = append(l.log, lr)
	l.mu.Unlock()
	timings := fmt.Sprintf(`"timings":{"cache_n":%d,"prompt_n":%d,"prompt_ms":1.25,"predicted_n":%d,"predicted_ms":9.5%s}`, cached, len(prompt)-cached, len(reply), draft)
	fmt.Fprintf(w, `data: {"choices":[{"finish_reason":"length","index":0,"delta":{}}],"created":1,"id":"chatcmpl-l","model":"m","object":"chat.completion.chunk"}`+"\n\n")
	fmt.Fprintf(w, `data: {"choices":[],"created":1,"id":"chatcmpl-l","model":"m","object":"chat.completion.chunk","usage":{"completion_tokens":%d,"prompt_tokens":%d,"total_tokens":%d},%s}`+"\n\n",
		len(reply), len(prompt), len(prompt)+len(reply), timings)
	io.WriteString(w, "data: [DONE]\n\n")
	f.Flush()
	// The counters move as the request ends.
	l.mu.Lock()
	l.evaluated += len(prompt) - cached
	l.predicted += len(reply)
	l.mu.Unlock()
}

// TestLlamaCppCachedShare is issue 24's real-server-shaped check of the
// cached share: sessions (with tool rounds) one at a time against a
// server whose prompt cache and counters behave like llama.cpp's. Its
// cached tokens reach the records from timings.cache_n; a session's
// request k > 1 finds the slot holding request k−1's prompt and reply
// (cached = its prompt + its output), and its first request the shared
// system message the previous session left (cached = the system message
// and its role token); the summary's TTFT-by-turn rows carry exactly
// these cached shares; and the stage's hit rate from the server's
// counters (1 − prompt tokens evaluated over the prompt tokens of the
// requests that ended between two scrapes) agrees with the records of
// the same requests.
func TestLlamaCppCachedShare(t *testing.T) {
	t.Parallel()
	l := &llamaServer{}
	url := l.serve(t)
	sc := parse(t, fmt.Sprintf(`name: llamacpp
target: {url: %q, model: m}
scrape: {interval: 100ms}
prompts: {seed: 5}
load:
  stages:
    - name: agents
      concurrency: 1
      session:
        sessions: 8
        turns: {dist: uniform, min: 2, max: 3}
        system_tokens: 300
        user_tokens: {dist: uniform, min: 20, max: 80}
        reply_tokens: 24
        tools: {calls: {dist: uniform, min: 0, max: 2}, result_tokens: 60, call_tokens: 8}
`, url+"/v1"))
	sum, recs := runParsed(t, sc)
	slices.SortFunc(recs, func(a, b results.Result) int { return int(a.Seq) - int(b.Seq) })
	if len(recs) != len(l.log) || len(recs) < 15 {
		t.Fatalf("%d records, the server saw %d requests", len(recs), len(l.log))
	}
	want := map[int][2]int64{} // turn → expected cached, prompt
	for i, r := range recs {
		if r.Outcome != results.OK || r.PromptTokens != l.log[i].prompt || r.CachedTokens != l.log[i].cached {
			t.Fatalf("seq %d: %s, prompt %d cached %d; the server saw prompt %d cached %d", r.Seq, r.Outcome, r.PromptTokens, r.CachedTokens, l.log[i].prompt, l.log[i].cached)
		}
		expect := 300 + 2 // the shared system message, its role token and the next role token
		switch {
		case r.Turn > 1:
			prev := recs[i-1]
			expect = prev.PromptTokens + prev.OutputTokens
		case i == 0:
			expect = 0
		}
		if r.CachedTokens != expect {
			t.Errorf("session %d turn %d: %d cached, want %d", r.Session, r.Turn, r.CachedTokens, expect)
		}
		row := min(r.Turn, 16)
		w := want[row]
		want[row] = [2]int64{w[0] + int64(expect), w[1] + int64(r.PromptTokens)}
	}
	rows := sum.Overall.TTFTByTurn
	if len(rows) != len(want) {
		t.Fatalf("%d turn rows, want %d", len(rows), len(want))
	}
	for _, row := range rows {
		w := want[row.Turn]
		if row.CachedTokens != w[0] || row.PromptTokens != w[1] {
			t.Errorf("turn %d: %d of %d prompt tokens cached, want %d of %d", row.Turn, row.CachedTokens, row.PromptTokens, w[0], w[1])
		}
		t.Logf("turn %d: cached share %.1f %%", row.Turn, 100*float64(row.CachedTokens)/float64(row.PromptTokens))
	}
	if len(sum.PrefixCache) != 1 || sum.PrefixCache[0].Counters == nil {
		t.Fatalf("prefix-cache figures %+v: want the counters' hit rate", sum.PrefixCache)
	}
	c := sum.PrefixCache[0].Counters
	var cached, prompt int
	for _, r := range recs {
		if end := r.End.Seconds(); end > c.FromS && end <= c.ToS {
			cached, prompt = cached+r.CachedTokens, prompt+r.PromptTokens
		}
	}
	share := float64(cached) / float64(prompt)
	t.Logf("counters: %.2f %% (%s); the records ending in [%.2f, %.2f] s: %.2f %%", 100*c.HitRate, c.Source, c.FromS, c.ToS, 100*share)
	// A request whose counters moved just after a scrape its end preceded
	// counts on one side only: a share of a point or two.
	if math.Abs(c.HitRate-share) > 0.02 {
		t.Errorf("the counters give %.4f, the records of the same requests %.4f", c.HitRate, share)
	}
}

// runParsed runs sc into a temporary directory and returns its summary
// and request records.
func runParsed(t *testing.T, sc *scenario.Scenario) (*report.Summary, []results.Result) {
	t.Helper()
	dir := t.TempDir()
	sum, err := Run(t.Context(), sc, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return sum, readResults(t, dir)
}

// TestLlamaCppDrafts is issue 25's per-request speculative decoding: a
// server shaped like llama-server with a draft model returns each
// request's draft_n and draft_n_accepted in the timings of its last
// chunk. Each record carries exactly what the server said of its request;
// the stage's figures are the ratios of their sums over the measured
// requests (acceptance rate accepted ÷ drafted, tokens per step output ÷
// (output − accepted)), named as per-request, with no counters beside
// them; the terminal summary says so.
func TestLlamaCppDrafts(t *testing.T) {
	t.Parallel()
	l := &llamaServer{draft: true}
	url := l.serve(t)
	sc := parse(t, fmt.Sprintf(`name: llamadraft
target: {url: %q, model: m}
scrape: {interval: 100ms}
prompts: {seed: 3, input_tokens: {dist: uniform, min: 20, max: 90}, output_tokens: 24}
load: {stages: [{name: spec, concurrency: 1, requests: 12}]}
`, url+"/v1"))
	sum, recs := runParsed(t, sc)
	slices.SortFunc(recs, func(a, b results.Result) int { return int(a.Seq) - int(b.Seq) })
	if len(recs) != len(l.log) {
		t.Fatalf("%d records, the server saw %d requests", len(recs), len(l.log))
	}
	var drafted, accepted, output, n int64
	for i, r := range recs {
		if r.Outcome != results.OK || r.DraftTokens != l.log[i].drafted || r.DraftAccepted != l.log[i].accepted {
			t.Fatalf("seq %d: %s, drafts %d accepted %d; the server said %d %d", r.Seq, r.Outcome, r.DraftTokens, r.DraftAccepted, l.log[i].drafted, l.log[i].accepted)
		}
		if r.Warmup {
			continue
		}
		n++
		drafted += int64(r.DraftTokens)
		accepted += int64(r.DraftAccepted)
		output += int64(r.OutputTokens)
	}
	if len(sum.Stages) != 1 || sum.Stages[0].Efficiency == nil {
		t.Fatalf("stages %+v: want one with efficiency", sum.Stages)
	}
	e := sum.Stages[0].Efficiency
	got := e.SpecDecodeRequests
	want := report.RequestSpecDecode{Source: report.SpecSourceRequests, Requests: n, OfRequests: n, DraftTokens: drafted, Accepted: accepted,
		AcceptanceRate: round6(float64(accepted) / float64(drafted)), TokensPerStep: round6(float64(output) / float64(output-accepted)), StepRequests: n}
	if got == nil || *got != want {
		t.Fatalf("per-request speculative decoding %+v, want %+v", got, want)
	}
	if e.SpecDecode != nil {
		t.Errorf("counters %+v from a server that exports none", e.SpecDecode)
	}
	var text strings.Builder
	if err := report.WriteText(&text, sum); err != nil {
		t.Fatal(err)
	}
	line := fmt.Sprintf("speculative decoding: acceptance rate %.1f %% (%d of %d draft tokens accepted)", 100*want.AcceptanceRate, accepted, drafted)
	if accepted == 0 || accepted == drafted {
		t.Fatalf("%d of %d accepted: the test server should accept some drafts, not all", accepted, drafted)
	}
	for _, l := range strings.Split(text.String(), "\n") {
		if strings.HasPrefix(l, "speculative decoding") {
			t.Log(l)
		}
	}
	if !strings.Contains(text.String(), line) || !strings.Contains(text.String(), report.SpecSourceRequests) {
		t.Errorf("the summary does not say %q from %s:\n%s", line, report.SpecSourceRequests, text.String())
	}
	var page bytes.Buffer
	if err := chart.WriteHTML(&page, sum, nil, nil); err != nil {
		t.Fatal(err)
	}
	row := fmt.Sprintf("<td>spec</td><td>%s</td><td>%.1f %%</td>", report.SpecSourceRequests, 100*want.AcceptanceRate)
	if !strings.Contains(page.String(), `id="specdecode"`) || !strings.Contains(page.String(), row) {
		t.Errorf("report.html has no speculative-decoding row %q", row)
	}
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }
