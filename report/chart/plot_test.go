package chart

import (
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/report/correlate"

	"bytes"
	"encoding/xml"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// TestWriteFilesRebuildable renders the fixture twice: every file (four
// plots in two formats and report.html) must come out byte-identical, since
// 'bench plot' promises to redraw exactly what 'bench run' drew.
func TestWriteFilesRebuildable(t *testing.T) {
	t.Parallel()
	render := func() (string, []string) {
		dir := t.TempDir()
		a, err := report.FromFiles("../testdata/preempt.jsonl.gz")
		if err != nil {
			t.Fatal(err)
		}
		paths, err := WriteFiles(dir, a, a.Summary())
		if err != nil {
			t.Fatal(err)
		}
		return dir, paths
	}
	d1, p1 := render()
	d2, _ := render()
	var want []string
	for _, n := range PlotNames() {
		want = append(want, n+".png", n+".svg")
	}
	want = append(want, HTMLName)
	var got []string
	for _, p := range p1 {
		got = append(got, filepath.Base(p))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("files = %v, want %v", got, want)
	}
	for _, name := range want {
		b1, err1 := os.ReadFile(filepath.Join(d1, name))
		b2, err2 := os.ReadFile(filepath.Join(d2, name))
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if !bytes.Equal(b1, b2) {
			t.Errorf("%s differs between two renders of the same results", name)
		}
	}
}

func TestFigures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		paths []string
	}{
		{"preemption fixture", []string{"../testdata/preempt.jsonl.gz"}},
		{"empty run", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := report.New()
			if tc.paths != nil {
				var err error
				if a, err = report.FromFiles(tc.paths...); err != nil {
					t.Fatal(err)
				}
			}
			figs, err := Figures(a, a.Summary())
			if err != nil {
				t.Fatal(err)
			}
			if len(figs) != len(PlotNames()) {
				t.Fatalf("%d figures, want %d", len(figs), len(PlotNames()))
			}
			for i, f := range figs {
				if f.Name != PlotNames()[i] || f.Title == "" {
					t.Errorf("figure %d: name %q, title %q", i, f.Name, f.Title)
				}
				img, err := png.Decode(bytes.NewReader(f.PNG))
				if err != nil {
					t.Fatalf("%s.png: %v", f.Name, err)
				}
				if b := img.Bounds(); b.Dx() < 900 || b.Dy() < 400 {
					t.Errorf("%s.png is %v, want at least 900 × 400", f.Name, b)
				}
				if err := wellFormedXML(f.SVG); err != nil {
					t.Errorf("%s.svg: %v", f.Name, err)
				}
			}
		})
	}
}

func wellFormedXML(b []byte) error {
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func TestNiceTicks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		lo, hi   float64
		integer  bool
		labelled []string
	}{
		{"seconds", 0.2, 16.5, false, []string{"2", "4", "6", "8", "10", "12", "14", "16"}},
		{"tokens", 0, 160000, false, []string{"0", "20,000", "40,000", "60,000", "80,000", "100,000", "120,000", "140,000", "160,000"}},
		{"fractions", 0, 1, false, []string{"0", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "1"}},
		{"counts", 0, 1.15, true, []string{"0", "1"}},
		{"empty range", 3, 3, false, []string{"3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, tk := range (niceTicks{integer: tc.integer}).Ticks(tc.lo, tc.hi) {
				if tk.Label != "" {
					got = append(got, tk.Label)
				}
			}
			if !slices.Equal(got, tc.labelled) {
				t.Errorf("labels = %q, want %q", got, tc.labelled)
			}
		})
	}
}

// TestTimelineNotes checks which optional panels the timeline leaves out,
// and that it says so in one sentence each.
func TestTimelineNotes(t *testing.T) {
	t.Parallel()
	nan := math.NaN()
	win := func(kv, pre, running float64) correlate.Window {
		return correlate.Window{KVUsagePerc: kv, Preemptions: pre, Running: running, Waiting: running, ServerTokensPerSec: nan}
	}
	tests := []struct {
		name        string
		ws          []correlate.Window
		kv, preempt bool
		notes       []string
	}{
		{"everything", []correlate.Window{win(40, 0, 3), win(60, 2, 4)}, true, true, nil},
		{"no preemption", []correlate.Window{win(40, 0, 3), win(60, 0, 4)}, true, false,
			[]string{"The server preempted no request: no panel for preemptions."}},
		{"KV all zero", []correlate.Window{win(0, 0, 3), win(0, 0, 4)}, false, false, // a server run without its KV cache
			[]string{"The server's KV-cache usage gauge read 0 % in every scrape (it does not measure this server's cache): no panel for it.",
				"The server preempted no request: no panel for preemptions."}},
		{"no KV, no counter", []correlate.Window{win(nan, nan, 3)}, false, false,
			[]string{"The server exports no KV-cache usage: no panel for it.", "The server exports no preemption counter: no panel for it."}},
		{"no scrapes", []correlate.Window{win(nan, nan, nan)}, false, false,
			[]string{"No /metrics page was scraped: no KV-cache, queue or preemption panel; the timeline holds the client's figures only."}},
		{"nothing sent", nil, false, false, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			kv, pre, notes := timelineNotes(tc.ws)
			if kv != tc.kv || pre != tc.preempt || !slices.Equal(notes, tc.notes) {
				t.Errorf("timelineNotes = %v, %v, %q; want %v, %v, %q", kv, pre, notes, tc.kv, tc.preempt, tc.notes)
			}
			for i := range tc.ws {
				tc.ws[i].InFlight, tc.ws[i].ContextSum, tc.ws[i].OutputTokensPerSec = 3, 1000, 100
			}
			if d := newDecayScene(tc.ws, nil); (d.kv != nil) != tc.kv {
				t.Errorf("the decay plot's KV-cache panel drawn: %v, want %v", d.kv != nil, tc.kv)
			}
		})
	}
}

// TestTimelineContent checks the fixture's timeline SVG: the latency panel
// by send time, the stage names under the time axis, one font family (the
// page's), and, the fixture having no GPU telemetry, a sentence saying so
// instead of the per-GPU panels.
func TestTimelineContent(t *testing.T) {
	t.Parallel()
	a, err := report.FromFiles("../testdata/preempt.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	figs, err := Figures(a, a.Summary())
	if err != nil {
		t.Fatal(err)
	}
	svg := string(figs[0].SVG)
	for _, want := range []string{"TTFT (by the time the request was sent)", "E2E (by the time the request was sent)",
		">stage fits<", ">stage overflows<", ">preemptions<", ">KV cache (%)<", "font-family:Liberation Sans"} {
		if !strings.Contains(svg, want) {
			t.Errorf("timeline.svg lacks %q", want)
		}
	}
	for _, f := range figs {
		if strings.Contains(string(f.SVG), "Liberation Serif") {
			t.Errorf("%s.svg uses a serif font beside the page's sans", f.Name)
		}
	}
	// Every server series, and no GPU telemetry: one sentence for that,
	// and no GPU panel.
	if !slices.Equal(figs[0].Notes, []string{noGPUNote}) {
		t.Errorf("notes %q for a run with every server series and no GPU telemetry; want only %q", figs[0].Notes, noGPUNote)
	}
	if !strings.Contains(svg, noGPUNote) || strings.Contains(svg, "GPU power (W)") {
		t.Errorf("timeline.svg: without GPU telemetry it must say so (%q) and draw no power panel", noGPUNote)
	}
}

// TestPlotsContent checks, in the fixture's SVGs, what the plots must say:
// decay.png's plain legend and KV-cache panel, latency.png's notes (no
// CDF from the stages' 9 and 16 requests; the share of gaps under 10 µs)
// and stages.png's value labels.
func TestPlotsContent(t *testing.T) {
	t.Parallel()
	a, err := report.FromFiles("../testdata/preempt.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	figs, err := Figures(a, a.Summary())
	if err != nil {
		t.Fatal(err)
	}
	svg := map[string]string{}
	for _, f := range figs {
		svg[f.Name] = string(f.SVG)
	}
	for _, tc := range []struct{ plot, want string }{
		{"decay", "fits: one dot per window of steady load"},
		{"decay", "windows where streams started or ended"},
		{"decay", ">KV cache (%)<"},
		// Two windows a stage are too few for a law of their own: the law
		// fitted over both stages is drawn at each stage's streams.
		{"decay", "overflows, law fitted over all stages: 7.91 streams, each token 1.45 ms + 0.983 ms per 1,000 tokens of context (R² 1.00)"},
		{"latency", "TTFT: no curve from fewer than 20 samples (fits: 9, overflows: 16)."},
		{"latency", "of the gaps are under 10 µs (chunks read from the socket together); they are drawn at 10 µs."},
		{"latency", ">overall<"},
		{"stages", ">14.2 ms<"}, // overflows' TTFT p50
		{"stages", ">4.55 ms<"}, // overflows' ITL p99
	} {
		if !strings.Contains(svg[tc.plot], tc.want) {
			t.Errorf("%s.svg lacks %q", tc.plot, tc.want)
		}
	}
	// fits has a curve of its 3,591 gaps in the ITL panel, none of its 9
	// requests' TTFTs.
	if n := strings.Count(svg["latency"], ">fits<"); n != 1 {
		t.Errorf("latency.svg names stage fits %d times, want once (ITL only)", n)
	}
}

// TestCDF checks the curves latency.png draws: they end at 100 %, and the
// gaps under the floor are folded into the first point.
func TestCDF(t *testing.T) {
	t.Parallel()
	h := hdrhistogram.New(1, 60_000_000, 3)
	for _, us := range []int64{1, 2, 3, 3000, 3100, 3200, 4000, 9000} {
		if err := h.RecordValue(us); err != nil {
			t.Fatal(err)
		}
	}
	pts := cdf(h, h, gapFloorUS)
	if pts[0].X < 0.01 {
		t.Errorf("first point at %v ms, below the 10 µs floor", pts[0].X)
	}
	if last := pts[len(pts)-1].Y; last != 100 {
		t.Errorf("the CDF ends at %v %%, want 100", last)
	}
	if below := countBelow(h, gapFloorUS); below != 3 {
		t.Errorf("countBelow = %d, want 3", below)
	}
}

// TestDecayAxes checks that a window far from the steady ones does not
// stretch the decay plot's axes.
func TestDecayAxes(t *testing.T) {
	t.Parallel()
	w := func(ctx, tps float64) correlate.Window {
		return correlate.Window{ContextSum: ctx, OutputTokensPerSec: tps}
	}
	steady := []correlate.Window{w(2000, 1900), w(2200, 1850), w(2400, 1800)}
	x0, x1, y1 := decayAxes(steady, []correlate.Window{w(90_000, 9000)})
	if x0 < 1500 || x1 > 2600 || y1 > 2500 {
		t.Errorf("axes %v–%v, up to %v tok/s: the outlier stretches them", x0, x1, y1)
	}
	if _, x1, _ := decayAxes(steady[:2], []correlate.Window{w(3000, 1700)}); x1 < 3000 {
		t.Errorf("with two steady windows the others count: x up to %v", x1)
	}
}
