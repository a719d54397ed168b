package sweep

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/servebench/servebench/internal/loopback"
	"github.com/servebench/servebench/internal/simurl"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/run"
	"github.com/servebench/servebench/scenario"
	"github.com/servebench/servebench/sim"
)

// Value is one parameter's value in a run.
type Value struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Job is one planned run: a combination of values and a repeat.
type Job struct {
	Point  int     // index of the combination, in enumeration order
	Values []Value // one per parameter, in name order
	Repeat int     // 1 to the sweep's repeats
	Label  string  // "max_num_batched_tokens=1024" (values joined with ",")
	Dir    string  // the run's directory, relative to the sweep's

	// Scenario is the derived scenario: the sweep block removed, field
	// parameters set and, for a sim:// target without a server section,
	// the server settings in the target's query. With a server section its
	// target is set when the server is launched.
	Scenario *scenario.Scenario
}

// Plan is a sweep laid out as jobs, in the order they run: combinations in
// enumeration order, repeats of a combination one after the other.
type Plan struct {
	Name    string                // the scenario's name
	Params  []scenario.SweepParam // in name order
	Points  [][]Value             // the combinations, in enumeration order
	Jobs    []Job
	Repeats int
	Server  *scenario.SweepServer // nil: no server is launched
	Sim     bool                  // server settings go to the built-in simulator
	// Policy is where a launched server's URLs may point (the scenario's
	// target.allow_remote).
	Policy loopback.Policy
	// Budgets are the scenario's budgets (nil without).
	Budgets *results.Budgets
	unit    string // the searched parameter's unit (scenario.SearchUnit)
	// Search, when not nil, makes Execute search each combination's
	// capacity instead of running Jobs: Jobs then holds one job per
	// combination, whose scenario every probe derives from.
	Search *scenario.SweepSearch
	// RankBy and ParetoX are the sweep's rank_by and pareto_x ("" for
	// the defaults: throughput, total output tokens/s).
	RankBy, ParetoX string
}

// NewPlan lays out the sweep of sc (which must have a sweep block). It
// derives and validates every run's scenario, reads every dataset, and for
// the simulator checks every setting, so a sweep never fails half-way on a
// typo. The error is a
// *scenario.FieldError (or a join of them) for a bad scenario.
func NewPlan(ctx context.Context, sc *scenario.Scenario) (*Plan, error) {
	sw := sc.Sweep
	if sw == nil {
		return nil, fmt.Errorf("scenario %s has no sweep block", sc.Name)
	}
	p := &Plan{Name: sc.Name, Params: sw.Params(), Repeats: max(sw.Repeats, 1), Server: sw.Server, Policy: sc.Policy(), Search: sw.Search, Budgets: sc.Budgets,
		RankBy: sw.RankBy, ParetoX: sw.ParetoX}
	if sw.Search != nil {
		p.unit = sc.SearchUnit()
	}
	p.Sim = sw.Server == nil && simurl.Is(sc.Target.URL)
	p.Points = combinations(p.Params)
	var errs []error
	for i, vals := range p.Points {
		sets := []string{"sweep="}
		var simSettings []Value
		for _, v := range vals {
			switch {
			case scenario.IsFieldPath(v.Name):
				sets = append(sets, v.Name+"="+v.Value)
			case p.Sim:
				simSettings = append(simSettings, v)
			}
		}
		if len(simSettings) > 0 {
			u, err := simURL(sc.SimTarget(), simSettings)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			sets = append(sets, "target.url="+u)
		}
		derived := *sc
		if err := derived.Override(sets...); err != nil {
			errs = append(errs, fmt.Errorf("sweep value %s: %w", label(vals), err))
			continue
		}
		label := label(vals)
		if p.Server != nil {
			// Validate rendered the server with the first values only.
			if err := p.checkServer(vals, derived.Clone()); err != nil {
				errs = append(errs, fmt.Errorf("sweep value %s: %w", label, err))
				continue
			}
		}
		if p.Search != nil {
			job := derived
			p.Jobs = append(p.Jobs, Job{Point: i, Values: vals, Repeat: 1, Label: label, Dir: dirName(label), Scenario: &job})
			continue
		}
		for r := 1; r <= p.Repeats; r++ {
			dir := dirName(label)
			if p.Repeats > 1 {
				dir = filepath.Join(dir, "repeat-"+strconv.Itoa(r))
			}
			job := derived // each job owns its copy
			p.Jobs = append(p.Jobs, Job{Point: i, Values: vals, Repeat: r, Label: label, Dir: dir, Scenario: &job})
		}
	}
	// Each dataset once, read and checked before any server is launched.
	checked := map[[2]string]bool{}
	for i := range p.Jobs {
		d := p.Jobs[i].Scenario
		key := [2]string{d.DatasetPath(), d.Prompts.Dataset.Format}
		if key[0] == "" || checked[key] {
			continue
		}
		checked[key] = true
		if err := d.CheckDataset(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

// checkServer renders the server section with one combination's values
// (and a stand-in port) and checks what a run would use: base_url as the
// target, and ready_url where the scenario's policy allows.
func (p *Plan) checkServer(vals []Value, sc *scenario.Scenario) error {
	port := strconv.Itoa(max(p.Server.Port, 1))
	vars := map[string]string{scenario.SweepVarPort: port}
	for _, v := range vals {
		vars[v.Name] = v.Value
	}
	l, err := p.Server.Render(vars)
	if err != nil {
		return fmt.Errorf("sweep.server.%w", err)
	}
	if err := p.Policy.CheckURL(l.ReadyURL); err != nil {
		return fmt.Errorf("sweep.server.ready_url %w", err)
	}
	if err := sc.Set("target.url", l.BaseURL); err != nil {
		return fmt.Errorf("sweep.server.base_url %s: %w", l.BaseURL, err)
	}
	return nil
}

// combinations enumerates the cartesian product of the parameters' values,
// the last parameter varying fastest.
func combinations(params []scenario.SweepParam) [][]Value {
	out := [][]Value{nil}
	for _, p := range params {
		var next [][]Value
		for _, prefix := range out {
			for _, v := range p.Values {
				c := append(append([]Value(nil), prefix...), Value{Name: p.Name, Value: v})
				next = append(next, c)
			}
		}
		out = next
	}
	return out
}

// simURL adds settings to a sim:// URL's query, checking each against the
// preset (or preset file) it names.
func simURL(raw string, settings []Value) (string, error) {
	u, err := simurl.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("target.url %q: %w", raw, err)
	}
	cfg, err := sim.ConfigFromURL(raw)
	if err != nil {
		return "", fmt.Errorf("target.url %s: %w", raw, err)
	}
	for _, s := range settings {
		if err := cfg.Set(s.Name, s.Value); err != nil {
			return "", fmt.Errorf("sweep.parameters.%s: value %s: simulator %w", s.Name, s.Value, err)
		}
		u = u.With(s.Name, s.Value)
	}
	return u.String(), nil
}

// label joins a combination's values: "a=1,b=x".
func label(vals []Value) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = v.Name + "=" + v.Value
	}
	return strings.Join(parts, ",")
}

// dirName makes a label safe as a directory name. It depends on the values
// only, so --resume finds a value's directory even after other values were
// added to the sweep.
func dirName(label string) string {
	safe := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("._=,+-", r):
			return r
		}
		return '_'
	}, label)
	if len(safe) > 120 {
		sum := sha256.Sum256([]byte(label))
		safe = safe[:min(len(safe), 100)] + "-" + hex.EncodeToString(sum[:6])
	}
	return safe
}

// Vars are the template variables of a job: every parameter's value by
// name, and the port.
func (j *Job) Vars(port string) map[string]string {
	vars := map[string]string{scenario.SweepVarPort: port}
	for _, v := range j.Values {
		vars[v.Name] = v.Value
	}
	return vars
}

// Done reports whether the job's directory under dir already holds a
// summary.json, the last file a run writes (what --resume skips; the
// summary is then rebuilt from results.jsonl).
func (j *Job) Done(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, j.Dir, run.FileSummary))
	return err == nil && fi.Mode().IsRegular()
}

// DryRun writes what the sweep would do: every job's directory, target and,
// with a server section, the command, environment and readiness URL, with
// a free port shown as <port>. With resume, jobs already done are marked.
func (p *Plan) DryRun(w io.Writer, dir string, resume bool) error {
	var b strings.Builder
	names := make([]string, len(p.Params))
	for i, pa := range p.Params {
		names[i] = pa.Name
	}
	if sr := p.Search; sr != nil {
		g := newGrid(sr)
		fmt.Fprintf(&b, "search %q: the highest %s in [%s, %s] %s whose budgets pass, to %s (at most %d probes of up to %d runs each",
			p.Name, sr.Parameter, fmtVal(sr.Low()), fmtVal(sr.High()), p.unit, fmtVal(sr.Resolution),
			2+int(math.Ceil(math.Log2(float64(max(g.steps, 1))))), sr.Repeats)
		if len(p.Params) > 0 {
			fmt.Fprintf(&b, ", for each of %d combinations of %s", len(p.Points), strings.Join(names, ", "))
		}
		fmt.Fprintf(&b, ") → %s\n", dir)
	} else {
		fmt.Fprintf(&b, "sweep %q: %d runs over %s → %s\n", p.Name, len(p.Jobs), strings.Join(names, ", "), dir)
	}
	for i := range p.Jobs {
		j := &p.Jobs[i]
		rep := ""
		if p.Repeats > 1 {
			rep = fmt.Sprintf(" (repeat %d)", j.Repeat)
		}
		if p.Search != nil {
			fmt.Fprintf(&b, "[%d/%d] %s probes → %s\n", i+1, len(p.Jobs), orAll(j.Label), filepath.Join(dir, dirName(label(append(slices.Clone(j.Values), Value{p.Search.Parameter, "VALUE"})))))
		} else {
			fmt.Fprintf(&b, "[%d/%d] %s%s → %s\n", i+1, len(p.Jobs), j.Label, rep, filepath.Join(dir, j.Dir))
		}
		if resume && p.Search == nil && j.Done(dir) {
			b.WriteString("      done already: skipped with --resume\n")
			continue
		}
		if p.Server == nil {
			fmt.Fprintf(&b, "      target  %s\n", j.Scenario.Target.URL)
			continue
		}
		port := "<port>"
		if p.Server.Port > 0 {
			port = strconv.Itoa(p.Server.Port)
		}
		l, err := p.Server.Render(j.Vars(port))
		if err != nil {
			return fmt.Errorf("sweep %s: %w", j.Label, err)
		}
		fmt.Fprintf(&b, "      server  %s\n", shellJoin(l.Args))
		if len(l.Env) > 0 {
			fmt.Fprintf(&b, "      env     %s\n", strings.Join(l.Env, " "))
		}
		fmt.Fprintf(&b, "      ready   %s (within %s)\n", l.ReadyURL, p.Server.ReadyTimeout)
		fmt.Fprintf(&b, "      target  %s\n", l.BaseURL)
		fmt.Fprintf(&b, "      log     %s\n", filepath.Join(dir, j.Dir, "server.log"))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// shellJoin quotes args for a POSIX shell, for display.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,+@%<>", r))
		}) < 0 {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}
