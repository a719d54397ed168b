package twin

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/run"
	"github.com/servebench/servebench/scenario"
	"github.com/servebench/servebench/sim"
)

// truthPreset is the server the twin must recover: the tiny simulator
// with other costs and capacity than tiny's.
const truthPreset = `base: tiny
name: truth
max_num_seqs: 16
max_num_batched_tokens: 512
num_gpu_blocks_override: 401
step_overhead_us: 2000
per_seq_us: 80
per_kv_token_ns: 1500
per_prefill_token_us: 6
jitter_frac: 0.01
`

// truth are truthPreset's coefficients, in Coefficients order.
var truth = map[string]float64{StepOverhead: 2000, PerSeq: 80, PerKVToken: 1500, PerPrefill: 6}

// stageDoc is one closed-loop stage of the calibration workload; under
// the race detector it runs a third as long.
func stageDoc(c int, d string) string {
	if raceEnabled {
		if v, err := time.ParseDuration(d); err == nil {
			d = (v / 3).String()
		}
	}
	return fmt.Sprintf("    - {name: c%d, concurrency: %d, duration: %s}\n", c, c, d)
}

// workload is a scenario of closed-loop stages against target.
func workload(name, target string, stages ...string) string {
	return fmt.Sprintf(`name: %s
target: {url: %q}
prompts: {seed: 3, input_tokens: {dist: uniform, min: 64, max: 256}, output_tokens: {dist: uniform, min: 64, max: 160}}
scrape: {interval: 250ms}
load:
  stages:
%s`, name, target, strings.Join(stages, ""))
}

// writeTruth writes truthPreset into dir and returns its sim:// URL.
func writeTruth(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "truth.yaml")
	if err := os.WriteFile(p, []byte(truthPreset), 0o644); err != nil {
		t.Fatal(err)
	}
	return "sim://" + p
}

// virtualRun runs doc in virtual time into a new directory under dir,
// then delays every token's arrival by up to jitter (uniformly, seeded),
// as a network and a client would, and returns the directory.
func virtualRun(t *testing.T, dir, doc string, jitter time.Duration) string {
	t.Helper()
	sc, err := scenario.Parse("workload.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.MkdirTemp(dir, sc.Name+"-")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Run(context.Background(), sc, run.Options{Dir: out, Virtual: true}); err != nil {
		t.Fatal(err)
	}
	if jitter > 0 {
		addJitter(t, filepath.Join(out, run.FileResults), jitter)
	}
	return out
}

// addJitter rewrites a results file with each chunk arriving up to jitter
// later (order kept), and the request's first, last and end times moved
// with its chunks.
func addJitter(t *testing.T, path string, jitter time.Duration) {
	t.Helper()
	r, err := results.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var recs []results.Record
	for r.Scan() {
		rec := r.Record()
		if x := rec.Result; x != nil {
			c := *x
			c.ChunkTimes = append([]time.Duration(nil), x.ChunkTimes...)
			x = &c
			rec.Result = x
		}
		recs = append(recs, rec)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, rec := range recs {
		x := rec.Result
		if x == nil || len(x.ChunkTimes) == 0 {
			continue
		}
		prev := time.Duration(0)
		for i, c := range x.ChunkTimes {
			c += time.Duration(rng.Float64() * float64(jitter))
			c = max(c, prev)
			x.ChunkTimes[i], prev = c, c
		}
		x.FirstToken = x.Sent + x.ChunkTimes[0]
		x.FirstContent, x.Headers = x.FirstToken, x.FirstToken
		x.LastToken = x.Sent + x.ChunkTimes[len(x.ChunkTimes)-1]
		x.End = x.LastToken
	}
	w, err := results.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func relErr(got, want float64) float64 { return math.Abs(got/want - 1) }

// TestCalibrateRecoversSimulator is issue 12's acceptance against the
// simulator, in virtual time with up to 0.3 ms of network jitter on every
// token: calibrated from runs at concurrencies 2 and 8, the fit recovers
// each cost coefficient and the KV capacity within 5 %, and the twin
// predicts concurrency 5's output tok/s and ITL p50 within 5 %.
func TestCalibrateRecoversSimulator(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := writeTruth(t, dir)
	var paths []string
	for _, c := range []int{2, 8} {
		paths = append(paths, virtualRun(t, dir, workload(fmt.Sprintf("cal-%d", c), target, stageDoc(c, "20s")), 300*time.Microsecond))
	}
	res, err := Calibrate(paths, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var rep bytes.Buffer
	if err := WriteReport(&rep, res); err != nil {
		t.Fatal(err)
	}
	t.Logf("calibration:\n%s", rep.String())
	for _, name := range Coefficients {
		e, _ := res.Estimate(name)
		err := relErr(e.Value, truth[name])
		t.Logf("%s: fitted %.4g ± %.2g, true %g: error %.2f %%", name, e.Value, e.StdErr, truth[name], 100*err)
		if e.Source != "fitted" || err > 0.05 {
			t.Errorf("%s = %g (%s), want %g within 5 %%", name, e.Value, e.Source, truth[name])
		}
	}
	if e, _ := res.Estimate("num_gpu_blocks_override"); relErr(e.Value-1, 400) > 0.05 || e.Source != "measured" {
		t.Errorf("KV blocks = %g (%s), want 400 usable within 5 %%", e.Value-1, e.Source)
	}

	// Concurrency 5, never run: the truth against the twin.
	doc := workload("unseen", target, stageDoc(5, "20s"))
	sc, err := scenario.Parse("unseen.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	trueCfg, err := sim.ConfigFromURL(target)
	if err != nil {
		t.Fatal(err)
	}
	want, err := run.Simulate(context.Background(), sc, trueCfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := run.Simulate(context.Background(), sc, res.Config, nil)
	if err != nil {
		t.Fatal(err)
	}
	tokErr := relErr(got.Overall.OutputTokensPerSec, want.Overall.OutputTokensPerSec)
	itlErr := relErr(got.Overall.ITL.P50, want.Overall.ITL.P50)
	t.Logf("concurrency 5: output tok/s predicted %.1f, true %.1f (%.2f %%); ITL p50 predicted %.3f ms, true %.3f ms (%.2f %%)",
		got.Overall.OutputTokensPerSec, want.Overall.OutputTokensPerSec, 100*tokErr, got.Overall.ITL.P50, want.Overall.ITL.P50, 100*itlErr)
	if tokErr > 0.05 || itlErr > 0.05 {
		t.Errorf("prediction at concurrency 5 is off by more than 5 %%: tok/s %.2f %%, ITL p50 %.2f %%", 100*tokErr, 100*itlErr)
	}
}

// TestCalibrateSaysWhatIsMissing calibrates from one run at one
// concurrency without scrapes: the per-sequence cost cannot be told from
// the step overhead, and the capacity is assumed; the notes say so.
func TestCalibrateSaysWhatIsMissing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := writeTruth(t, dir)
	doc := strings.Replace(workload("one", target, stageDoc(4, "10s")), "scrape: {interval: 250ms}", "scrape: {enabled: false}", 1)
	res, err := Calibrate([]string{virtualRun(t, dir, doc, 0)}, Options{MaxNumBatchedTokens: 512})
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(res.Notes, "\n")
	for _, want := range []string{"per_seq_us and step_overhead_us", "max_num_seqs: no running gauge was scraped", "KV-cache capacity: no KV-cache usage was scraped"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if e, _ := res.Estimate("max_num_batched_tokens"); e.Source != "given" || e.Value != 512 {
		t.Errorf("budget %+v, want the given 512", e)
	}
	// The decode cost at this batch size is still right: the fixed and
	// per-sequence costs trade off, their sum at 4 requests does not.
	a, _ := res.Estimate(StepOverhead)
	b, _ := res.Estimate(PerSeq)
	if got, want := a.Value+4*b.Value, truth[StepOverhead]+4*truth[PerSeq]; relErr(got, want) > 0.05 {
		t.Errorf("step cost at 4 requests %g, want %g", got, want)
	}
}

// TestConfigRoundTrip writes a twin and reads it back as a simulator
// preset: every setting and the calibration survive.
func TestConfigRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := writeTruth(t, dir)
	res, err := Calibrate([]string{virtualRun(t, dir, workload("rt", target, stageDoc(2, "4s"), stageDoc(6, "4s")), 0)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteConfig(&b, res); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "twin.yaml")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := sim.ConfigFromURL("sim://" + p)
	if err != nil {
		t.Fatalf("the twin does not load: %v\n%s", err, b.String())
	}
	c := res.Config
	for _, pair := range [][2]float64{{back.StepOverheadUS, c.StepOverheadUS}, {back.PerSeqUS, c.PerSeqUS},
		{back.PerKVTokenNS, c.PerKVTokenNS}, {back.PerPrefillTokenUS, c.PerPrefillTokenUS}} {
		if relErr(pair[0], pair[1]) > 1e-4 {
			t.Errorf("a coefficient changed on the way: %g → %g", pair[1], pair[0])
		}
	}
	if back.NumGPUBlocksOverride != c.NumGPUBlocksOverride || back.MaxNumSeqs != c.MaxNumSeqs || back.MaxModelLen != c.MaxModelLen ||
		back.LogStatsInterval != c.LogStatsInterval || back.Calibration == nil || len(back.Calibration.Covariance) != len(Coefficients) {
		t.Errorf("read back %+v\nwrote %+v", back, c)
	}
}

// TestEigenSym decomposes a covariance-like matrix and rebuilds it.
func TestEigenSym(t *testing.T) {
	t.Parallel()
	a := [][]float64{{4, 1, 0.5, 0}, {1, 3, 0.2, 0}, {0.5, 0.2, 2, 0.1}, {0, 0, 0.1, 1}}
	vals, vecs := eigenSym(a)
	for i := range a {
		for j := range a {
			var s float64
			for k := range vals {
				s += vecs[i][k] * vals[k] * vecs[j][k]
			}
			if math.Abs(s-a[i][j]) > 1e-9 {
				t.Fatalf("V·Λ·Vᵀ[%d][%d] = %g, want %g", i, j, s, a[i][j])
			}
		}
	}
}

// TestCalibrateRealTimeSimulator calibrates from runs of the simulator in
// real time over loopback HTTP (10 s at concurrencies 2 and 8): the
// coefficients within 5 %. Opt-in (SERVEBENCH_LONG_TESTS=1): it takes
// 20 s and a busy machine's late wake-ups blur step times;
// TestCalibrateRecoversSimulator makes the same check in virtual time.
func TestCalibrateRealTimeSimulator(t *testing.T) {
	if os.Getenv("SERVEBENCH_LONG_TESTS") == "" {
		t.Skip("20 s of real-time runs (set SERVEBENCH_LONG_TESTS=1 to run it)")
	}
	dir := t.TempDir()
	target := writeTruth(t, dir)
	var paths []string
	for _, c := range []int{2, 8} {
		sc, err := scenario.Parse("rt.yaml", []byte(workload(fmt.Sprintf("rt-%d", c), target, stageDoc(c, "10s"))))
		if err != nil {
			t.Fatal(err)
		}
		out := t.TempDir()
		if _, err := run.Run(context.Background(), sc, run.Options{Dir: out}); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, out)
	}
	res, err := Calibrate(paths, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var rep bytes.Buffer
	_ = WriteReport(&rep, res)
	t.Logf("calibration over HTTP in real time:\n%s", rep.String())
	for _, name := range Coefficients {
		e, _ := res.Estimate(name)
		if err := relErr(e.Value, truth[name]); err > 0.05 {
			t.Errorf("%s = %g, want %g within 5 %% (off by %.1f %%)", name, e.Value, truth[name], 100*err)
		}
	}
}

// TestCalibrateNoLowLoad says so when every prompt was prefilled beside
// several decoding requests.
func TestCalibrateNoLowLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := writeTruth(t, dir)
	res, err := Calibrate([]string{virtualRun(t, dir, workload("busy", target, stageDoc(6, "4s"), stageDoc(8, "4s")), 0)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if notes := strings.Join(res.Notes, "\n"); !strings.Contains(notes, "no low-load run") {
		t.Errorf("notes lack the missing low-load run:\n%s", notes)
	}
}
