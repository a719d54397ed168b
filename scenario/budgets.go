package scenario

import (
	"fmt"
	"math"
	"slices"
	"strings"

	suggestpkg "github.com/servebench/servebench/internal/suggest"
	"github.com/servebench/servebench/results"
)

// budgets checks the slo and budgets blocks (called by Validate).
func (v *validator) budgets(sc *Scenario) {
	if s := sc.SLO; s != nil {
		for _, o := range []struct {
			field string
			ms    float64
		}{{"slo.ttft_ms", s.TTFTMs}, {"slo.tpot_ms", s.TPOTMs}, {"slo.e2e_ms", s.E2EMs}} {
			if !(o.ms >= 0 && o.ms <= maxBudgetMs) {
				v.add(o.field, "want milliseconds from 0 (unset) to %d, got %g", maxBudgetMs, o.ms)
			}
		}
		if !s.Set() {
			v.add("slo", "sets no objective: give ttft_ms, tpot_ms or e2e_ms")
		}
		if sc.Target.API == results.APIEmbeddings && (s.TTFTMs > 0 || s.TPOTMs > 0) {
			v.add("slo", "ttft_ms and tpot_ms do not apply to embeddings (whole responses, no output tokens): give e2e_ms")
		}
	}
	v.budgetsIn(sc, results.Metrics())
}

// budgetsIn checks the budgets block against the metric table t.
func (v *validator) budgetsIn(sc *Scenario, t results.Table) {
	b := sc.Budgets
	if b == nil {
		return
	}
	if b.Overall == nil && len(b.Stages) == 0 {
		v.add("budgets", "sets no budget: give overall or stages")
	}
	v.budgetSet(sc, t, "budgets.overall", b.Overall)
	names := make([]string, 0, len(sc.Load.Stages))
	for _, st := range sc.Load.Stages {
		names = append(names, st.Name)
	}
	for _, name := range sortedMapKeys(b.Stages) {
		f := "budgets.stages." + name
		if !slices.Contains(names, name) {
			v.add(f, "no stage is named %q (stages: %s)", name, strings.Join(names, ", "))
		}
		if b.Stages[name] == nil {
			v.add(f, "sets no budget")
			continue
		}
		v.budgetSet(sc, t, f, b.Stages[name])
	}
}

// maxBudgetMs bounds latency limits and objectives (one day) to catch a
// unit slip (seconds written as microseconds).
const maxBudgetMs = 86_400_000

// budgetSet checks one budget set against the metric table t: every key
// a metric a budget may limit, every limit a statistic of its metric
// (Metric.Stats) in its range; then the rules that tie a metric to the
// rest of the scenario.
func (v *validator) budgetSet(sc *Scenario, t results.Table, f string, s *results.BudgetSet) {
	if s == nil {
		return
	}
	if len(s.ListIn(t)) == 0 {
		v.add(f, "sets no budget")
	}
	if s.MinSamples < 0 {
		v.add(f+".min_samples", "must be ≥ 0, got %d", s.MinSamples)
	}
	for _, name := range sortedMapKeys(s.Limits) {
		m, ok := t.ByName(name)
		switch {
		case !ok:
			v.add(f+"."+name, "unknown metric%s", suggestName(name, t.Budgeted()))
		case !m.Budget:
			v.add(f+"."+name, "is not a figure a budget may limit (%s)%s", m.About, suggestName(name, t.Budgeted()))
		case s.Limits[name] != nil:
			v.limits(f+"."+name, m, s.Limits[name])
		}
	}
	v.budgetRules(sc, f, s)
}

// limits checks the limits l of metric m at field f.
func (v *validator) limits(f string, m results.Metric, l *results.Limits) {
	allowed := m.Stats()
	set := 0
	for _, lf := range l.Stats() {
		if lf.Value == nil {
			continue
		}
		set++
		x := *lf.Value
		if !slices.Contains(allowed, lf.Stat) {
			v.add(f+"."+lf.Stat, "does not apply to %s (want %s)", m.Name, strings.Join(allowed, ", "))
			continue
		}
		switch {
		case math.IsNaN(x) || math.IsInf(x, 0) || x < 0:
			v.add(f+"."+lf.Stat, "must be a number ≥ 0, got %g", x)
		case m.Class == results.Fraction && x > 1:
			v.add(f+"."+lf.Stat, "is a fraction from 0 to 1, got %g (write 1%% as 0.01)", x)
		case m.Class == results.Latency && x > maxBudgetMs:
			v.add(f+"."+lf.Stat, "want milliseconds up to %d, got %g", maxBudgetMs, x)
		}
	}
	if set == 0 {
		v.add(f, "sets no limit (want %s)", strings.Join(allowed, ", "))
	}
}

// budgetRules checks what ties a budgeted metric to the rest of the
// scenario: the API it applies to and the block it is measured from.
// These are rules about a few metrics, not about the table, so they are
// named here.
func (v *validator) budgetRules(sc *Scenario, f string, s *results.BudgetSet) {
	embed := sc.Target.API == results.APIEmbeddings
	for _, fig := range s.List() {
		switch fig.Metric {
		case "ttft_ms", "ttfc_ms", "itl_ms", "tpot_ms", "output_tokens_per_s", "token_count_mismatch":
			if embed {
				v.add(f+"."+fig.Metric, "does not apply to embeddings: they have no tokens streamed back (budget e2e_ms, inputs_per_s or total_tokens_per_s)")
			}
		case "inputs_per_s":
			if !embed {
				v.add(f+"."+fig.Metric, "applies to embeddings only (target.api is %s)", sc.Target.API)
			}
		}
	}
	if s.Get("goodput") != nil && !sc.SLO.Set() {
		v.add(f+".goodput", "needs per-request objectives: add slo: {ttft_ms: …, tpot_ms: …}")
	}
	if s.Get("token_count_mismatch") != nil && (sc.Request.IgnoreEOS == nil || !*sc.Request.IgnoreEOS) {
		v.add(f+".token_count_mismatch", "needs request.ignore_eos: true (without it a response may end early by design)")
	}
	if s.Get("usd_per_mtok") != nil && sc.Cost == nil {
		v.add(f+".usd_per_mtok", "needs a price: add cost: {per_gpu_hour: …, gpus: …} or {per_mtok_input: …, per_mtok_output: …}")
	}
	if (s.Get("preemptions") != nil || s.Get("kv_usage") != nil) && sc.Scrape.Enabled != nil && !*sc.Scrape.Enabled {
		v.add(f, "preemptions and kv_usage come from the server's /metrics: enable scrape")
	}
}

// suggestName names the closest of known, or lists them all.
func suggestName(name string, known []string) string {
	if best, ok := suggestpkg.Closest(name, known); ok {
		return fmt.Sprintf(" (did you mean %s?)", best)
	}
	return " (known: " + strings.Join(known, ", ") + ")"
}

func sortedMapKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
