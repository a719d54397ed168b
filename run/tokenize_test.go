package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/servebench/servebench/internal/tokenizer"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
)

// fixture is the tiny byte-level BPE tokenizer.json made for the tests
// (internal/tokenizer/fixture_test.go).
const fixture = "../internal/tokenizer/testdata/tiny-bpe.json"

// requestsOf reads the request records of a run's results file.
func requestsOf(t *testing.T, dir string) []*results.Result {
	t.Helper()
	f, err := results.OpenFiles(filepath.Join(dir, FileResults))
	if err != nil {
		t.Fatal(err)
	}
	var out []*results.Result
	for rec, err := range f.All() {
		if err != nil {
			t.Fatal(err)
		}
		if rec.Result != nil {
			r := *rec.Result
			out = append(out, &r)
		}
	}
	return out
}

// promptWarning returns the summary's prompt-length warning, or "".
func promptWarning(sum *report.Summary) string {
	for _, w := range sum.Warnings {
		if strings.HasPrefix(w, "prompt lengths:") {
			return w
		}
	}
	return ""
}

// TestPromptTokenizers runs synthetic prompts against a simulator that
// counts with the BPE fixture, the model's tokenizer here. Counted with
// that tokenizer.json, or calibrated through the simulator's /tokenize
// (server), every prompt has exactly its intended length as the server
// counts it, the system message included, and no warning is given;
// counted with o200k_base, the server's counts differ and the summary
// says so.
func TestPromptTokenizers(t *testing.T) {
	t.Parallel()
	abs, err := filepath.Abs(fixture)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(abs)
	if err != nil {
		t.Fatal(err)
	}
	const system = "Answer briefly, and show your working."
	for _, tc := range []struct {
		name, tokenizer string
		exact           bool
	}{
		{"server", "server", true},
		{"tokenizer.json", abs, true},
		{"o200k_base", "o200k_base", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sc, err := scenario.Parse("tok.yaml", fmt.Appendf(nil, `name: tok
target: {url: %q}
request: {system: %q}
scrape: {enabled: false}
prompts: {tokenizer: %q, input_tokens: {dist: uniform, min: 16, max: 96}, output_tokens: {value: 2}}
load: {stages: [{concurrency: 4, requests: 20}]}
`, "sim://tiny?tokenizer="+abs, system, tc.tokenizer))
			if err != nil {
				t.Fatal(err)
			}
			var progress strings.Builder
			dir := t.TempDir()
			sum, err := Run(context.Background(), sc, Options{Dir: dir, Progress: &progress})
			if err != nil {
				t.Fatal(err)
			}
			if tc.tokenizer == "server" && !strings.Contains(progress.String(), "prompts calibrated on the server's /tokenize") {
				t.Errorf("progress does not report the calibration:\n%s", progress.String())
			}
			// The run expects the system message as its tokenizer counts
			// it; with server, as the server does.
			overhead := tok.Count(system)
			if tc.tokenizer != "server" {
				own, err := tokenizer.Load(tc.tokenizer)
				if err != nil {
					t.Fatal(err)
				}
				overhead = own.Count(system)
			}
			mismatched := 0
			for _, r := range requestsOf(t, dir) {
				if r.Outcome != results.OK {
					t.Fatalf("request %d: %s %s", r.Seq, r.Outcome, r.Error)
				}
				if r.PromptTokens != r.InputTokens+overhead+r.PromptTokensDiff {
					t.Fatalf("request %d: server counted %d, expected %d + system %d, recorded difference %d",
						r.Seq, r.PromptTokens, r.InputTokens, overhead, r.PromptTokensDiff)
				}
				if r.PromptTokensDiff != 0 {
					mismatched++
				}
			}
			w := promptWarning(sum)
			tokens := sum.Overall.Tokens
			switch {
			case tokens.PromptCompared != 20:
				t.Errorf("%d prompts compared, want 20", tokens.PromptCompared)
			case tc.exact && (mismatched > 0 || tokens.PromptMismatched > 0 || w != ""):
				t.Errorf("%d of 20 prompts off their intended length (summary: %d); warning %q", mismatched, tokens.PromptMismatched, w)
			case !tc.exact && (tokens.PromptMismatched < 2 || !strings.Contains(w, "counted with o200k_base, not the model's tokenizer")):
				t.Errorf("%d of 20 prompts mismatched; warning %q", tokens.PromptMismatched, w)
			}
		})
	}
}

// wordServer is an OpenAI-compatible server that counts a prompt's
// tokens as its whitespace-separated words: /tokenize does, and
// usage.prompt_tokens adds extra per 10 words (a server whose generation
// requests count otherwise than its /tokenize). Without tokenize it has no
// /tokenize endpoint. It counts the generation requests it received.
type wordServer struct {
	tokenize bool
	extra    int
	gens     atomic.Int64
}

func (s *wordServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Prompt    string `json:"prompt"`
		MaxTokens int    `json:"max_tokens"`
		Messages  []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	words := len(strings.Fields(body.Prompt))
	for _, m := range body.Messages {
		words += len(strings.Fields(m.Content))
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/tokenize" && s.tokenize:
		fmt.Fprintf(w, `{"count":%d,"max_model_len":4096}`, words)
	case r.URL.Path == "/v1/chat/completions":
		s.gens.Add(1)
		n := words + s.extra*words/10
		fmt.Fprintf(w, `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"length"}],`+
			`"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, n, body.MaxTokens, n+body.MaxTokens)
	default:
		http.NotFound(w, r)
	}
}

// TestServerTokenizerHTTP runs prompts.tokenizer: server against plain
// HTTP servers: one without /tokenize is refused before any load, naming
// the missing endpoint; with one whose usage agrees with its /tokenize
// the prompts are exact and nothing is warned; with one whose usage counts
// 10 % more, the warning fires and every record carries its difference.
func TestServerTokenizerHTTP(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		srv      *wordServer
		err      string
		wantDiff bool
	}{
		{"no /tokenize", &wordServer{}, "no /tokenize endpoint", false},
		{"counts agree", &wordServer{tokenize: true}, "", false},
		{"counts disagree", &wordServer{tokenize: true, extra: 1}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(tc.srv)
			defer srv.Close()
			sc, err := scenario.Parse("http.yaml", fmt.Appendf(nil, `name: http
target: {url: %q, model: m, stream: false}
scrape: {enabled: false}
prompts: {tokenizer: server, input_tokens: {dist: uniform, min: 40, max: 80}, output_tokens: {value: 2}}
load: {stages: [{concurrency: 2, requests: 10}]}
`, srv.URL))
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			sum, err := Run(context.Background(), sc, Options{Dir: dir})
			if tc.err != "" {
				var cfg *ConfigError
				if !errors.As(err, &cfg) || !strings.Contains(err.Error(), tc.err) || sum != nil {
					t.Fatalf("error %v (summary %v), want a configuration error saying %q", err, sum != nil, tc.err)
				}
				if n := tc.srv.gens.Load(); n != 0 {
					t.Errorf("%d generation requests were sent after the calibration failed", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range requestsOf(t, dir) {
				want := 0
				if tc.wantDiff {
					want = r.InputTokens / 10
				}
				if r.PromptTokensDiff != want {
					t.Errorf("request %d: %d words, server counted %d, recorded difference %d, want %d",
						r.Seq, r.InputTokens, r.PromptTokens, r.PromptTokensDiff, want)
				}
			}
			w := promptWarning(sum)
			switch {
			case tc.wantDiff && (sum.Overall.Tokens.PromptMismatched != 10 || !strings.Contains(w, "for 10 of 10 requests")):
				t.Errorf("mismatched %d of %d; warning %q", sum.Overall.Tokens.PromptMismatched, sum.Overall.Tokens.PromptCompared, w)
			case !tc.wantDiff && w != "":
				t.Errorf("counts agree, yet: %s", w)
			}
		})
	}
}
