package twin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/servebench/servebench/internal/textable"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/run"
	"github.com/servebench/servebench/scenario"
)

// HoldoutStage is one held-out stage of one run: what was measured, what
// the twin fitted without it predicts, and the relative error of each
// figure.
type HoldoutStage struct {
	Run       string             `json:"run"`
	Stage     string             `json:"stage"`
	Measured  Figures            `json:"measured"`
	Predicted Figures            `json:"predicted"`
	Errors    map[string]float64 `json:"errors"` // figure → predicted/measured − 1
	Requests  int64              `json:"requests"`
}

// HoldoutResult is a holdout validation: the calibration without the
// held-out stages, and each held-out stage predicted.
type HoldoutResult struct {
	Calibration *Result        `json:"-"`
	Stages      []HoldoutStage `json:"stages"`
}

// Holdout fits the twin on every stage but the named ones (opts.Holdout),
// then runs each held-out stage of each run on it in virtual time, alone,
// with the run's own scenario, and compares the figures with the ones
// measured in that stage.
func Holdout(ctx context.Context, paths []string, opts Options) (*HoldoutResult, error) {
	if len(opts.Holdout) == 0 {
		return nil, fmt.Errorf("holdout: name the stages to hold out")
	}
	cal, err := Calibrate(paths, opts)
	if err != nil {
		return nil, err
	}
	out := &HoldoutResult{Calibration: cal}
	for _, p := range paths {
		agg, err := report.FromFiles(p)
		if err != nil {
			return nil, err
		}
		sum := agg.Summary()
		for _, st := range sum.Stages {
			if !contains(opts.Holdout, st.Name) {
				continue
			}
			sc, err := stageScenario(agg.Scenario(), st.Index)
			if err != nil {
				return nil, fmt.Errorf("holdout %s: %w", p, err)
			}
			pred, err := run.Simulate(ctx, sc, cal.Config, nil)
			if pred == nil {
				return nil, fmt.Errorf("holdout %s stage %s: %w", p, st.Name, err)
			}
			hs := HoldoutStage{Run: p, Stage: st.Name, Measured: figuresOfStage(&st), Predicted: figuresOfStage(&pred.Overall),
				Requests: st.Requests.OK}
			hs.Errors = holdoutErrors(hs.Measured, hs.Predicted)
			out.Stages = append(out.Stages, hs)
		}
	}
	if len(out.Stages) == 0 {
		return nil, fmt.Errorf("holdout: no run has a stage named %s", strings.Join(opts.Holdout, ", "))
	}
	return out, nil
}

// holdoutErrors returns predicted/measured − 1 of every figure measured
// above 0, by name.
func holdoutErrors(measured, predicted Figures) map[string]float64 {
	out := map[string]float64{}
	for _, name := range measured.names() {
		if m := measured.get(name); m > 0 {
			out[name] = predicted.get(name)/m - 1
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// stageScenario is a run's resolved scenario reduced to one stage, with
// no sweep and no budgets, ready to run on a twin.
func stageScenario(resolved []byte, stage int) (*scenario.Scenario, error) {
	if len(resolved) == 0 {
		return nil, fmt.Errorf("the results header holds no scenario")
	}
	var doc map[string]any
	if err := json.Unmarshal(resolved, &doc); err != nil {
		return nil, err
	}
	load, _ := doc["load"].(map[string]any)
	stages, _ := load["stages"].([]any)
	if stage < 0 || stage >= len(stages) {
		return nil, fmt.Errorf("stage %d is not in the scenario", stage)
	}
	load["stages"] = []any{stages[stage]}
	delete(doc, "sweep")
	delete(doc, "budgets")
	delete(doc, "slo")
	// The twin is the target; its file is not read from the scenario.
	if t, ok := doc["target"].(map[string]any); ok {
		t["url"] = "sim://tiny"
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return scenario.Parse("held-out stage", b)
}

// WriteHoldout writes each held-out stage's measured and predicted
// figures and the error of each.
func WriteHoldout(w io.Writer, h *HoldoutResult) error {
	var b strings.Builder
	fmt.Fprintf(&b, "holdout: fitted without %s; each held-out stage run alone on the twin in virtual time\n", strings.Join(h.Calibration.Holdout, ", "))
	rows := [][]string{{"run / stage", "figure", "measured", "predicted", "error"}}
	for _, s := range h.Stages {
		for j, name := range s.Measured.names() {
			m, p := s.Measured.get(name), s.Predicted.get(name)
			e := "-"
			if v, ok := s.Errors[name]; ok {
				e = fmt.Sprintf("%+.1f %%", 100*v)
			}
			label := ""
			if j == 0 {
				label = s.Run + " / " + s.Stage
			}
			rows = append(rows, []string{label, name, fmtFig(m), fmtFig(p), e})
		}
	}
	var bb strings.Builder
	bb.WriteString(textable.Format(rows, false))
	b.WriteString(bb.String())
	worst, name := 0.0, ""
	for _, s := range h.Stages {
		for _, k := range []string{"output_tokens_per_s", "itl_p50_ms", "ttft_p50_ms"} {
			if v, ok := s.Errors[k]; ok && math.Abs(v) > math.Abs(worst) {
				worst, name = v, s.Stage+" "+k
			}
		}
	}
	if name != "" {
		fmt.Fprintf(&b, "largest error on throughput, ITL p50 and TTFT p50: %+.1f %% (%s)\n", 100*worst, name)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
