package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/internal/realtime"
	"github.com/servebench/servebench/internal/slotserver"
	"github.com/servebench/servebench/report"
)

// TestIssue20WrongModel is issue 20's second case: a scenario naming a
// model the server does not serve. The run asks GET /v1/models first and
// refuses, naming what is served and the nearest name, before a single
// request of load is sent.
func TestIssue20WrongModel(t *testing.T) {
	t.Parallel()
	srv := slotserver.Start(t, slotserver.Config{Model: "Qwen/Qwen2.5-0.5B-Instruct"})
	sc := writeScenario(t, "name: wrong\ntarget: {url: '"+srv.URL+"', model: qwen2.5-0.5b-instruct}\nload: {stages: [{concurrency: 2, requests: 6}]}\n")
	e, out, errb := testEnv()
	err := bench(context.Background(), e, []string{"run", sc, "--out", filepath.Join(t.TempDir(), "out"), "--quiet"})
	if got := exitCode(err); got != exitUsage {
		t.Fatalf("exit code = %d (%v), want %d", got, err, exitUsage)
	}
	msg := out.String() + errb.String() + err.Error()
	for _, want := range []string{`model "qwen2.5-0.5b-instruct" is not served by ` + srv.URL, `it serves "Qwen/Qwen2.5-0.5B-Instruct"`, `did you mean "Qwen/Qwen2.5-0.5B-Instruct"?`} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q: %s", want, msg)
		}
	}
	if n := srv.Received("/v1/chat/completions"); n != 0 {
		t.Errorf("the server received %d chat requests: load was sent for a model it does not serve", n)
	}
}

// TestIssue20NothingSucceeded: a run in which every request failed gets
// no saturation verdict and no plots, only the counts and the server's
// words.
func TestIssue20NothingSucceeded(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
	})
	mux.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"the engine is not ready","code":503}}`, http.StatusServiceUnavailable)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	sc := writeScenario(t, "name: none\ntarget: {url: '"+srv.URL+"', model: m}\nload: {stages: [{concurrency: 2, requests: 12}]}\n")
	dir := filepath.Join(t.TempDir(), "out")
	e, _, _ := testEnv()
	err := bench(context.Background(), e, []string{"run", sc, "--out", dir, "--quiet"})
	if err == nil || !strings.Contains(err.Error(), "no request succeeded") {
		t.Fatalf("err = %v, want no request succeeded", err)
	}
	b, rerr := os.ReadFile(filepath.Join(dir, "summary.json"))
	if rerr != nil {
		t.Fatal(rerr)
	}
	var sum report.Summary
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	c := sum.Correlation
	if c == nil || !strings.HasPrefix(c.Conclusion, "No verdict: no stage had enough successful requests") || len(c.Findings) != 1 {
		t.Errorf("conclusion %q, findings %q: want no verdict and nothing else", c.Conclusion, c.Findings)
	}
	for _, name := range []string{"report.html", "timeline.png", "latency.png"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Errorf("%s was written for a run in which nothing succeeded", name)
		}
	}
}

// TestIssue20ServerTokenizerLlamaCPP: prompts.tokenizer: server against a
// server whose /tokenize reads llama.cpp's body. It used to stop with
// "only 0 words are one token each", blaming the vocabulary; the prompts
// are now calibrated in the body the server reads.
func TestIssue20ServerTokenizerLlamaCPP(t *testing.T) {
	t.Parallel()
	srv := slotserver.Start(t, slotserver.Config{Tokenize: "content"})
	sc := writeScenario(t, "name: tok\ntarget: {url: '"+srv.URL+"', model: m, api: completions}\n"+
		"prompts: {tokenizer: server, input_tokens: 40, output_tokens: 4}\nload: {stages: [{concurrency: 2, requests: 4}]}\n")
	e, _, _ := testEnv()
	if err := bench(context.Background(), e, []string{"run", sc, "--out", filepath.Join(t.TempDir(), "out"), "--quiet"}); err != nil {
		t.Fatalf("run: %v", err)
	}
	if srv.Received("/tokenize") == 0 || srv.Received("/v1/completions") != 4 {
		t.Errorf("/tokenize asked %d times, completions %d", srv.Received("/tokenize"), srv.Received("/v1/completions"))
	}
}

// TestIssue20WarmUpCannotStall is issue 20's eighth case: a server that
// serves 8 connections at once and holds each idle kept-alive one for 5 s,
// as llama.cpp's llama-server does with 8 HTTP threads. Warming the 64
// connections of a max_concurrency of 64 used to hold the load back for
// tens of seconds, unannounced. The warm-up now keeps what the server
// answered, gives up on the rest once answers stop, and says so with its
// duration; the first stage's requests do not wait for it.
func TestIssue20WarmUpCannotStall(t *testing.T) {
	t.Parallel()
	srv := slotserver.Start(t, slotserver.Config{Slots: 8, Connections: 8, KeepAlive: 5 * time.Second})
	sc := writeScenario(t, "name: warm\ntarget: {url: '"+srv.URL+"', model: m}\nrequest: {ignore_eos: true}\nprompts: {input_tokens: 16, output_tokens: 8}\n"+
		"load: {stages: [{name: closed-8, concurrency: 8, requests: 16}, {name: trickle, rate: 2, max_concurrency: 64, requests: 2}]}\n")
	dir := filepath.Join(t.TempDir(), "out")
	e, _, _ := testEnv()
	began := time.Now()
	watch := realtime.Watch()
	if err := bench(context.Background(), e, []string{"run", sc, "--out", dir, "--quiet"}); err != nil {
		t.Fatalf("run: %v", err)
	}
	took, late := time.Since(began), watch()
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum report.Summary
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	w := sum.WarmUp
	if w == nil || w.Wanted != 64 || w.Opened < 1 || w.Opened > 8 {
		t.Fatalf("warm-up = %+v, want 64 asked and at most the server's 8 opened", w)
	}
	if !strings.Contains(strings.Join(sum.Warnings, "\n"), "of 64 connections opened in") {
		t.Errorf("the warm-up is not reported: %q", sum.Warnings)
	}
	if issue20Race {
		return
	}
	stalled := w.Duration > 4*time.Second || took > 15*time.Second || sum.Stages[0].TTFT.P50 > 1000
	if stalled && late > realtime.TooBusy {
		t.Skipf("the machine could not keep a real-time schedule (%.0f %% of 1 ms sleeps woke late): warm-up %v, run %v, first stage's TTFT p50 %.0f ms measure it, not the warm-up",
			100*late, w.Duration, took, sum.Stages[0].TTFT.P50)
	}
	if w.Duration > 4*time.Second || took > 15*time.Second {
		t.Errorf("warm-up took %v, the run %v: the warm-up stalled the run", w.Duration, took)
	}
	if p50 := sum.Stages[0].TTFT.P50; p50 > 1000 {
		t.Errorf("first stage's TTFT p50 = %.0f ms: the warm-up was charged to it", p50)
	}
}
