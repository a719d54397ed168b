package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runGate runs the shrunk quickstart with budgets set on the command line
// and returns the exit code and stdout.
func runGate(t *testing.T, dir string, budgets ...string) (int, string) {
	t.Helper()
	e, out, errb := testEnv()
	args := append([]string{"run", "../../../scenarios/quickstart.yaml", "--out", dir, "--quiet"}, quickArgs...)
	for _, b := range budgets {
		args = append(args, "--set", b)
	}
	err := bench(context.Background(), e, args)
	code := exitCode(err)
	if code != exitOK && code != exitBudget && code != exitInconclusive {
		t.Fatalf("run: exit %d: %v\nstderr: %s", code, err, errb)
	}
	return code, out.String()
}

type junitDoc struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Suites   []struct {
		Cases []struct {
			Name    string `xml:"name,attr"`
			Class   string `xml:"classname,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
			} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func readJUnit(t *testing.T, path string) junitDoc {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc junitDoc
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return doc
}

type verdictJSON struct {
	Verdict *struct {
		Pass   bool `json:"pass"`
		Failed int  `json:"failed"`
		Checks []struct {
			Name     string   `json:"name"`
			Pass     bool     `json:"pass"`
			Measured *float64 `json:"measured"`
			Limit    float64  `json:"limit"`
			Margin   *float64 `json:"margin"`
		} `json:"checks"`
	} `json:"verdict"`
}

func readVerdict(t *testing.T, path string) verdictJSON {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v verdictJSON
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestGateLooseBudgets: budgets the simulator meets easily give exit code 0,
// a passing verdict in summary.json and a JUnit file without failures.
func TestGateLooseBudgets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out := runGate(t, dir, "budgets.overall.ttft_ms.p50=100000", "budgets.overall.error_rate.max=0.5",
		"budgets.overall.output_tokens_per_s.min=1", "budgets.stages.closed-8={itl_ms: {p50: 1000}}")
	if code != exitOK {
		t.Fatalf("exit %d, want %d\n%s", code, exitOK, out)
	}
	if !strings.Contains(out, "budgets: PASS (4 budgets met)") {
		t.Errorf("verdict not printed:\n%s", out)
	}
	v := readVerdict(t, filepath.Join(dir, "summary.json"))
	if v.Verdict == nil || !v.Verdict.Pass || len(v.Verdict.Checks) != 4 {
		t.Fatalf("summary.json verdict = %+v", v.Verdict)
	}
	if doc := readJUnit(t, filepath.Join(dir, "junit.xml")); doc.Tests != 4 || doc.Failures != 0 {
		t.Errorf("junit: %d tests, %d failures", doc.Tests, doc.Failures)
	}
}

// TestGateImpossibleTTFT: a TTFT budget no server meets gives exit code 3,
// a JUnit file with that failure, and the verdict in summary.json; bench
// check then re-judges the saved results, with their own budgets or
// another file's.
func TestGateImpossibleTTFT(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out := runGate(t, dir, "budgets.overall.ttft_ms.p99=0.001", "budgets.overall.error_rate.max=0.5")
	if code != exitBudget {
		t.Fatalf("exit %d, want %d\n%s", code, exitBudget, out)
	}
	if !strings.Contains(out, "budgets: FAIL (1 of 2 budgets missed)") || !strings.Contains(out, "FAIL  overall  ttft_ms p99") {
		t.Errorf("verdict not printed:\n%s", out)
	}
	v := readVerdict(t, filepath.Join(dir, "summary.json"))
	if v.Verdict == nil || v.Verdict.Pass || v.Verdict.Failed != 1 {
		t.Fatalf("summary.json verdict = %+v", v.Verdict)
	}
	c := v.Verdict.Checks[0]
	if c.Name != "overall.ttft_ms.p99" || c.Pass || c.Measured == nil || c.Margin == nil || *c.Margin >= 0 || c.Limit != 0.001 {
		t.Errorf("ttft check = %+v", c)
	}
	doc := readJUnit(t, filepath.Join(dir, "junit.xml"))
	if doc.Failures != 1 || len(doc.Suites) != 1 {
		t.Fatalf("junit: %+v", doc)
	}
	failed := ""
	for _, tc := range doc.Suites[0].Cases {
		if tc.Failure != nil {
			failed = tc.Class + " " + tc.Name + ": " + tc.Failure.Message
		}
	}
	if !strings.HasPrefix(failed, "servebench.quickstart.overall ttft_ms.p99: overall ttft_ms p99 = ") || !strings.Contains(failed, "over by") {
		t.Errorf("junit failure = %q", failed)
	}
	md, err := os.ReadFile(filepath.Join(dir, "verdict.md"))
	if err != nil || !strings.Contains(string(md), "❌") {
		t.Errorf("verdict.md: %v\n%s", err, md)
	}

	// bench report rebuilds the summary, verdict included, byte for byte.
	want, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	e, rout, _ := testEnv()
	if err := bench(context.Background(), e, []string{"report", dir, "--format", "json"}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rout.Bytes(), want) {
		t.Errorf("bench report differs from summary.json:\n%s\nwant:\n%s", rout, want)
	}

	// bench check with the budgets recorded in the results header.
	e, cout, _ := testEnv()
	if code := exitCode(bench(context.Background(), e, []string{"check", dir})); code != exitBudget {
		t.Errorf("check with the run's own budgets: exit %d, want %d\n%s", code, exitBudget, cout)
	}
	// … and with a scenario file's (looser) budgets, writing the files elsewhere.
	loose := filepath.Join(t.TempDir(), "loose.yaml")
	src, err := os.ReadFile("../../../scenarios/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src = append(src, []byte("budgets:\n  overall:\n    ttft_ms: {p50: 100000}\n")...)
	if err := os.WriteFile(loose, src, 0o644); err != nil {
		t.Fatal(err)
	}
	out2 := t.TempDir()
	e, cout, _ = testEnv()
	err = bench(context.Background(), e, []string{"check", filepath.Join(dir, "results.jsonl"), "--budgets", loose, "--format", "junit", "--out", out2})
	if code := exitCode(err); code != exitOK {
		t.Errorf("check with loose budgets: exit %d (%v), want 0", code, err)
	}
	if !strings.Contains(cout.String(), `<testsuites name="servebench" tests="1" failures="0">`) {
		t.Errorf("check --format junit:\n%s", cout)
	}
	if v := readVerdict(t, filepath.Join(out2, "summary.json")); v.Verdict == nil || !v.Verdict.Pass {
		t.Errorf("check --out summary.json verdict = %+v", v.Verdict)
	}
}

func TestCheckUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	noBudgets := filepath.Join(dir, "plain")
	if err := os.MkdirAll(noBudgets, 0o755); err != nil {
		t.Fatal(err)
	}
	// A results file whose scenario has no budgets.
	header := `{"kind":"header","schema":1,"tool":"servebench","version":"test","started":"2026-11-22T03:00:00Z","target":"http://127.0.0.1:1","model":"m","scenario":{"name":"plain"}}` + "\n"
	if err := os.WriteFile(filepath.Join(noBudgets, "results.jsonl"), []byte(header), 0o644); err != nil {
		t.Fatal(err)
	}
	badBudgets := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badBudgets, []byte("name: x\nload: {stages: [{concurrency: 1, requests: 1}]}\nbudgets: {overall: {error_rate: {max: 7}}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []cliCase{
		{"no results", []string{"check"}, exitUsage, "no results file"},
		{"bad format", []string{"check", noBudgets, "--format", "xml"}, exitUsage, "--format"},
		{"no budgets anywhere", []string{"check", noBudgets}, exitUsage, "has no budgets"},
		{"bad budgets file", []string{"check", noBudgets, "--budgets", badBudgets}, exitUsage, "bad.yaml:3: budgets.overall.error_rate.max"},
		{"budgets file without budgets", []string{"check", noBudgets, "--budgets", "../../../scenarios/quickstart.yaml"}, exitUsage, "has no budgets block"},
		{"missing results", []string{"check", filepath.Join(dir, "none.jsonl"), "--budgets", badBudgets}, exitUsage, "bad.yaml"},
		{"missing results, good budgets", []string{"check", filepath.Join(dir, "none.jsonl")}, exitFailed, "none.jsonl"},
		{"help", []string{"help", "check"}, exitOK, "Examples:"},
	}
	for _, tc := range tests {
		checkCLI(t, tc)
	}
}
