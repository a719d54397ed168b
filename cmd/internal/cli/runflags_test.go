package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/servebench/servebench/internal/golden"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/run"
)

// TestRunFromFlags is the run without YAML of issue 10: flags alone make
// the scenario, the run completes on the simulator, and the results header
// records the resolved scenario as for a file.
func TestRunFromFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e, out, errb := testEnv()
	err := bench(context.Background(), e, []string{"run", "--target", "sim://tiny", "--concurrency", "4", "--requests", "20",
		"--input-tokens", "128", "--output-tokens", "32", "--out", dir, "--quiet"})
	if err != nil {
		t.Fatalf("run: %v\n%s%s", err, out, errb)
	}
	if !strings.Contains(out.String(), "concurrency-4  20 ") {
		t.Errorf("the summary lacks the stage's 20 ok requests:\n%s", out)
	}
	f, err := results.OpenFiles(filepath.Join(dir, run.FileResults))
	if err != nil {
		t.Fatal(err)
	}
	ok := 0
	for rec, err := range f.All() {
		if err != nil {
			t.Fatal(err)
		}
		if r := rec.Result; r != nil && r.Outcome == results.OK && r.InputTokens == 128 && r.MaxTokens == 32 && r.PromptTokensDiff == 0 {
			ok++
		}
	}
	if ok != 20 {
		t.Errorf("%d ok requests of 128 prompt tokens and max_tokens 32, want 20", ok)
	}
	var sc struct {
		Name    string `json:"name"`
		Target  struct{ URL, Model string }
		Prompts struct {
			Tokenizer   string `json:"tokenizer"`
			InputTokens struct {
				Dist  string `json:"dist"`
				Value int    `json:"value"`
			} `json:"input_tokens"`
		}
		Load struct {
			MaxDuration string `json:"max_duration"`
			Stages      []struct {
				Name        string `json:"name"`
				Concurrency int    `json:"concurrency"`
				Requests    int    `json:"requests"`
			}
		}
	}
	if err := json.Unmarshal(f.Headers()[0].Scenario, &sc); err != nil {
		t.Fatal(err)
	}
	if sc.Name != "flags" || sc.Target.URL != "sim://tiny" || sc.Target.Model != "tiny" || sc.Prompts.Tokenizer != "o200k_base" ||
		sc.Prompts.InputTokens.Dist != "fixed" || sc.Prompts.InputTokens.Value != 128 || sc.Load.MaxDuration != "30m" ||
		len(sc.Load.Stages) != 1 || sc.Load.Stages[0].Concurrency != 4 || sc.Load.Stages[0].Requests != 20 {
		t.Errorf("the header's scenario is not resolved from the flags: %s", f.Headers()[0].Scenario)
	}
}

// TestDryRun prints the resolved scenario and the plan of a file, of flags
// alone and of file < flags < --set, against a server that counts what
// reaches it: nothing does. The output is compared with golden files (the
// server's port written as PORT).
func TestDryRun(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.NotFound(w, r)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"file", []string{"../../../scenarios/quickstart.yaml", "--target", srv.URL}},
		{"flags", []string{"--target", srv.URL, "--model", "m", "--rate", "4", "--arrival", "constant", "--duration", "30s",
			"--input-tokens", "512", "--output-tokens", "64"}},
		{"precedence", []string{"../../../scenarios/quickstart.yaml", "--target", srv.URL, "--input-tokens", "256",
			"--set", "load.stages=[{concurrency: 2, requests: 6}]", "--set", "prompts.input_tokens=300"}},
		{"server tokenizer", []string{"--target", srv.URL, "--concurrency", "2", "--requests", "4", "--input-tokens", "64",
			"--output-tokens", "8", "--set", "prompts.tokenizer=server", "--set", "request.system=Be brief."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, out, errb := testEnv()
			if err := bench(context.Background(), e, append([]string{"run", "--dry-run"}, tc.args...)); err != nil {
				t.Fatalf("dry run: %v\n%s", err, errb)
			}
			got := strings.ReplaceAll(out.String()+errb.String(), srv.URL, "http://127.0.0.1:PORT")
			golden.Check(t, filepath.Join("testdata", golden.Name(t)+".golden"), []byte(got), *update)
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("dry runs sent %d requests", n)
	}
}
