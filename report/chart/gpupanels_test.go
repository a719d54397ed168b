package chart

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/run"
	"github.com/servebench/servebench/scenario"
	"github.com/servebench/servebench/scrape"
	"github.com/servebench/servebench/scrape/profile"
)

// gpuFixturePower is each GPU's power in the synthetic telemetry of
// gpuFixture, watts: distinct, so that the lines are told apart.
var gpuFixturePower = map[string]float64{"0": 610, "1": 540, "2": 420, "3": 70}

// gpuFixture adds to the preemption fixture's run 24 GPU samples of the
// four-GPU DCGM exporter page (scrape/testdata/dcgm_4gpu_k8s.prom, its
// labels and UUIDs as the exporter writes them), spread over the run,
// each GPU's energy counter advancing at its gpuFixturePower (GPU 0 at
// half of it over the run's second half) and its utilisation stepping.
func gpuFixture(t *testing.T) *report.Aggregate {
	t.Helper()
	a, err := report.FromFiles("../testdata/preempt.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("../../scrape/testdata/dcgm_4gpu_k8s.prom")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	page, err := scrape.NewParser().Parse(f, profile.DCGM)
	if err != nil {
		t.Fatal(err)
	}
	ws := a.Windows()
	from, to := ws[0].From, ws[len(ws)-1].To
	const n = 24
	energy := map[string]float64{}
	for k, e := range page.Engines {
		energy[k] = e.Values[results.GPUEnergyJ]
	}
	for i := range n {
		at := from + (to-from)*time.Duration(i)/(n-1)
		rd := page
		rd.Engines = map[string]results.Snapshot{}
		for k, e := range page.Engines {
			v := maps.Clone(e.Values)
			if i > 0 {
				p := gpuFixturePower[k]
				if k == "0" && i > n/2 {
					p /= 2
				}
				energy[k] += p * ((to - from) / (n - 1)).Seconds()
			}
			v[results.GPUEnergyJ] = energy[k]
			g, _ := strconv.Atoi(k)
			v[results.GPUUtil] = float64((i/6+g)%4) / 4
			rd.Engines[k] = results.Snapshot{Values: v}
		}
		a.AddSample(results.Sample{Index: uint64(i), Target: "http://127.0.0.1:9400/metrics", Start: at, At: at, OK: true, Reading: rd})
	}
	return a
}

// TestTimelineGPUPanels checks the per-GPU panels on a run with the
// telemetry of four GPUs: the timeline has a power panel and a
// utilisation panel with one line per GPU, named by index and UUID, each
// power line at the power its counter gave; report.html shows them (one
// legend entry per GPU and panel) and no sentence of missing telemetry,
// and in headless Chromium, where installed, logs nothing to the console.
func TestTimelineGPUPanels(t *testing.T) {
	t.Parallel()
	a := gpuFixture(t)
	s := a.Summary()
	figs, err := Figures(a, s)
	if err != nil {
		t.Fatal(err)
	}
	tl := figs[0]
	// The fixture's UUIDs end 2b7c1d4e9f01, 7a1b2c3d4e02, 1e0f9a8b7c03
	// and 8192a3b4c504.
	want := []string{"GPU 0 (…1d4e9f01)", "GPU 1 (…2c3d4e02)", "GPU 2 (…9a8b7c03)", "GPU 3 (…a3b4c504)"}
	panels := map[string][]Series{}
	for _, p := range tl.Panels {
		panels[p.YName] = p.Series
	}
	for _, name := range []string{"power (W)", "GPU utilisation (%)"} {
		ss, ok := panels[name]
		if !ok {
			t.Fatalf("timeline has no %q panel: panels %v", name, tl.Panels)
		}
		var got []string
		for _, sr := range ss {
			got = append(got, sr.Name)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s panel: series %q, want one per GPU %q", name, got, want)
		}
	}
	for i, sr := range panels["power (W)"] {
		k := fmt.Sprint(i)
		w := gpuFixturePower[k]
		// Its first interval's value (x, y pairs).
		if len(sr.XY) < 4 || sr.XY[1] < w*0.999 || sr.XY[1] > w*1.001 {
			t.Errorf("GPU %s power series starts %v, want %v W", k, sr.XY[:min(4, len(sr.XY))], w)
		}
	}
	for _, n := range tl.Notes {
		if n == noGPUNote {
			t.Errorf("the timeline says %q on a run with GPU telemetry", n)
		}
	}

	dir := t.TempDir()
	if _, err := WriteFiles(dir, a, s); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, HTMLName))
	if err != nil {
		t.Fatal(err)
	}
	for _, label := range want {
		// A legend entry in each of the two panels, in the inline SVG.
		if c := strings.Count(string(page), ">"+label+"<"); c != 2 {
			t.Errorf("report.html has %d legend entries %q, want 2 (power and utilisation)", c, label)
		}
	}
	if strings.Contains(string(page), noGPUNote) {
		t.Errorf("report.html says %q on a run with GPU telemetry", noGPUNote)
	}
	// In a browser, where there is one: no console message, and the
	// panels' legends in the DOM.
	t.Run("chromium", func(t *testing.T) {
		bin := chromiumBinary(t)
		path := filepath.Join(dir, HTMLName)
		dom, logs := runChromium(t, bin, path, "--dump-dom")
		for _, line := range strings.Split(string(logs), "\n") {
			if strings.Contains(line, ":CONSOLE") {
				t.Errorf("console message: %s", line)
			}
		}
		if c := strings.Count(string(dom), ">"+want[3]+"<"); c != 2 {
			t.Errorf("rendered DOM holds %d legend entries %q, want 2", c, want[3])
		}
		if *screenshotFile != "" {
			shot := strings.TrimSuffix(*screenshotFile, ".png") + "-gpus.png"
			runChromium(t, bin, path, "--screenshot="+shot)
			t.Logf("screenshot of the page with per-GPU panels: %s", shot)
		}
	})
}

// TestTimelineGPUPanelsSimulator runs the simulator with two GPUs and its
// power model, in virtual time: its DCGM page gives each GPU its own
// series (by index and UUID), and the timeline draws one line per GPU in
// each panel, at the power the model gives (80 W idle to 300 W at a full
// batch, each GPU alike).
func TestTimelineGPUPanelsSimulator(t *testing.T) {
	t.Parallel()
	doc := `name: gpus
target: {url: "sim://tiny?gpus=2&idle_power_w=80&max_power_w=300"}
request: {ignore_eos: true}
prompts: {seed: 3, input_tokens: 32, output_tokens: 64}
scrape: {interval: 250ms}
load: {stages: [{name: c4, concurrency: 4, requests: 24}]}
`
	sc, err := scenario.Parse("gpus.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := run.Run(context.Background(), sc, run.Options{Dir: dir, Virtual: true, NoPlots: true}); err != nil {
		t.Fatal(err)
	}
	a, err := report.FromFiles(filepath.Join(dir, run.FileResults))
	if err != nil {
		t.Fatal(err)
	}
	gs := a.GPUSeries()
	if len(gs) != 2 || gs[0].Key != "0" || gs[1].Key != "1" || gs[0].UUID == gs[1].UUID || gs[0].UUID == "" {
		t.Fatalf("GPU series %+v; want GPUs 0 and 1, each with its UUID", gs)
	}
	figs, err := Figures(a, a.Summary())
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, p := range figs[0].Panels {
		if p.YName != "power (W)" && p.YName != "GPU utilisation (%)" {
			continue
		}
		found++
		if len(p.Series) != 2 || p.Series[0].Name != gpuLabel(gs[0], false) || p.Series[1].Name != gpuLabel(gs[1], false) {
			t.Errorf("%s panel: %d series %v; want one per GPU", p.YName, len(p.Series), p.Series)
		}
		if p.YName == "power (W)" {
			for _, s := range p.Series {
				for i := 1; i < len(s.XY); i += 2 {
					if s.XY[i] < 79.9 || s.XY[i] > 300.1 {
						t.Errorf("%s: %v W, outside the model's 80–300 W", s.Name, s.XY[i])
						break
					}
				}
			}
		}
	}
	if found != 2 {
		t.Errorf("the timeline has %d GPU panels, want power and utilisation", found)
	}
}
