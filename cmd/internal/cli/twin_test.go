package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCalibratePredict is the twin's command-line path: two virtual runs
// of the simulator, bench calibrate, then bench predict of a sweep never
// run, and the twin run as a target.
func TestCalibratePredict(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	doc := `name: cal
target: {url: "sim://tiny?per_seq_us=90"}
prompts: {input_tokens: {dist: uniform, min: 32, max: 128}, output_tokens: {dist: uniform, min: 32, max: 96}}
scrape: {interval: 250ms}
load:
  stages:
    - {name: c2, concurrency: 2, duration: 5s}
    - {name: c6, concurrency: 6, duration: 5s}
`
	file := filepath.Join(dir, "cal.yaml")
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(dir, "run")
	e, _, errb := testEnv()
	if err := bench(context.Background(), e, []string{"run", file, "--virtual", "--quiet", "--out", runDir}); err != nil {
		t.Fatalf("run: %v\n%s", err, errb)
	}
	twinFile := filepath.Join(dir, "twin.yaml")
	e, out, errb := testEnv()
	if err := bench(context.Background(), e, []string{"calibrate", runDir, "--out", twinFile, "--max-num-batched-tokens", "256", "--max-num-seqs", "64", "--server-log", "../../../vllmlog/testdata/gpt-oss-120b.log"}); err != nil {
		t.Fatalf("calibrate: %v\n%s", err, errb)
	}
	for _, want := range []string{"per_seq_us", "fitted", "twin: " + twinFile} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("calibrate output lacks %q:\n%s", want, out)
		}
	}
	// The log's settings fill what the flags leave unknown; flags win.
	if got := errb.String(); !strings.Contains(got, "gpt-oss-120b.log: max_model_len = 98304") || strings.Contains(got, "max_num_seqs") || strings.Contains(got, "max_num_batched_tokens") {
		t.Errorf("settings taken from the server log:\n%s", got)
	}

	whatIf := filepath.Join(dir, "what-if.yaml")
	if err := os.WriteFile(whatIf, []byte(strings.Replace(doc, "    - {name: c6, concurrency: 6, duration: 5s}\n", "", 1)+
		"sweep:\n  parameters: {'load.stages[0].concurrency': [4, 8]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Under the race detector without the bands: they are nine more sweeps
	// of the same code, and the plain pass checks them.
	predict := []string{"predict", whatIf, "--twin", twinFile, "--out", filepath.Join(dir, "pred")}
	wants := []string{"load.stages[0].concurrency=4", "load.stages[0].concurrency=8", "bands: 95 %", "sweep.html"}
	if raceEnabled {
		predict, wants = append(predict, "--no-band"), append(wants[:2:2], "sweep.html")
	}
	e, out, errb = testEnv()
	if err := bench(context.Background(), e, predict); err != nil {
		t.Fatalf("predict: %v\n%s", err, errb)
	}
	for _, want := range wants {
		if !strings.Contains(out.String(), want) {
			t.Errorf("predict output lacks %q:\n%s", want, out)
		}
	}

	// The twin as a target, in virtual time.
	e, _, errb = testEnv()
	if err := bench(context.Background(), e, []string{"run", file, "--virtual", "--quiet", "--target", "sim://" + twinFile,
		"--out", filepath.Join(dir, "on-twin"), "--set", "load.stages[1].duration=1s"}); err != nil {
		t.Fatalf("run on the twin: %v\n%s", err, errb)
	}

	for _, tc := range []cliCase{
		{"calibrate without --out", []string{"calibrate", runDir}, exitUsage, "--out FILE is required"},
		{"calibrate onto a file", []string{"calibrate", runDir, "--out", twinFile}, exitUsage, "exists: choose another --out"},
		{"calibrate an unknown stage", []string{"calibrate", runDir, "--holdout", "c9"}, exitUsage, `no stage "c9"`},
		{"calibrate nothing", []string{"calibrate", "--out", "x.yaml", filepath.Join(dir, "nothing")}, exitFailed, "nothing"},
		{"holdout", []string{"calibrate", runDir, "--holdout", "c6", "--max-num-batched-tokens", "256"}, exitOK, "largest error on throughput"},
		{"predict without a twin", []string{"predict", whatIf}, exitUsage, "--twin FILE is required"},
		{"predict with a bad twin", []string{"predict", whatIf, "--twin", file}, exitUsage, "--twin"},
		{"help", []string{"help", "calibrate"}, exitOK, "Examples:"},
	} {
		checkCLI(t, tc)
	}
}
