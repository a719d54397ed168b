package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/servebench/servebench/internal/loopback"
	"github.com/servebench/servebench/internal/simurl"
)

// Sweep defaults and limits, applied by Scenario.Defaults and checked by
// Validate.
const (
	DefaultSweepBaseURL      = "http://127.0.0.1:{{.port}}"
	DefaultSweepReadyTimeout = 10 * time.Minute
	DefaultSweepStopTimeout  = 30 * time.Second

	maxSweepRuns         = 1000 // combinations × repeats
	maxSweepRepeats      = 100
	maxSweepReadyTimeout = 24 * time.Hour
	maxSweepStopTimeout  = time.Hour
)

var typeOfScenario = reflect.TypeFor[Scenario]()

// Template variables a sweep's server section may use besides the
// parameters' names.
const (
	SweepVarPort = "port" // the server's TCP port
)

// Sweep runs the scenario once per combination of parameter values (the
// cartesian product), Repeats times each. A parameter is either
//
//   - a scenario field path ("load.stages[0].rate"; its first key is one of
//     the scenario's top-level keys), set on a copy of the scenario as with
//     --set; or
//   - a server setting ("max_num_batched_tokens"): with a Server section
//     the value is only substituted into the server's command template
//     ({{.max_num_batched_tokens}}); without one, the target must be
//     sim://PRESET and the value is applied to the simulator's setting of
//     that name (sim://PRESET?max_num_batched_tokens=VALUE).
//
// Combinations are enumerated with parameters in name order, the last name
// varying fastest, and each parameter's values in the order written.
type Sweep struct {
	// Parameters maps each parameter to its values: a list of scalars, or
	// one scalar for a single value.
	Parameters map[string]any `yaml:"parameters" json:"parameters"`
	// Repeats is the number of runs per combination (default 1).
	Repeats int `yaml:"repeats" json:"repeats"`
	// Server, when set, is launched afresh for every run and is the target.
	Server *SweepServer `yaml:"server" json:"server,omitempty"`
	// Search, when set, finds for every combination of Parameters (or
	// once, without parameters) the highest value of one load setting
	// whose budgets pass (package sweep).
	Search *SweepSearch `yaml:"search" json:"search,omitempty"`
	// RankBy is what the recommendation maximises among the values that
	// qualify: RankThroughput (the default), RankGoodputPerJoule or
	// RankGoodputPerDollar.
	RankBy string `yaml:"rank_by" json:"rank_by,omitempty"`
	// ParetoX is the Pareto plot's x axis, against per-user speed:
	// ParetoOutputTokensPerSec (the default), ParetoTokensPerSecPerGPU,
	// ParetoTokensPerJoule (tokens per second per watt) or ParetoUSDPerMTok.
	ParetoX string `yaml:"pareto_x" json:"pareto_x,omitempty"`
}

// What a sweep ranks its values by (Sweep.RankBy): output tokens per
// second; good requests' output tokens per joule (goodput, the share of
// requests meeting the slo, times tokens per joule; every output token
// counts when there is no slo); good output tokens per dollar.
const (
	RankThroughput       = "throughput"
	RankGoodputPerJoule  = "goodput_per_joule"
	RankGoodputPerDollar = "goodput_per_dollar"
)

// Pareto plot x axes (Sweep.ParetoX).
const (
	ParetoOutputTokensPerSec = "output_tokens_per_s"
	ParetoTokensPerSecPerGPU = "output_tokens_per_s_per_gpu"
	ParetoTokensPerJoule     = "output_tokens_per_j"
	ParetoUSDPerMTok         = "usd_per_mtok"
)

// Search defaults and limits.
const (
	DefaultSearchRepeats   = 3
	DefaultSearchMargin    = 0.1
	DefaultSearchDivisions = 32 // the default resolution is the range over this
)

// SweepSearch is an SLA search: the highest value of Parameter in Between
// whose budgets pass, bracketed and then bisected to Resolution, each probe
// a full run. A probe near the boundary is run again (Repeats) so noise
// does not decide it.
type SweepSearch struct {
	// Parameter is the searched load setting: load.stages[N].rate for an
	// open-loop stage, load.stages[N].concurrency for a closed-loop one.
	Parameter string `yaml:"parameter" json:"parameter"`
	// Between is the range searched, [low, high] with 0 < low < high, in
	// the parameter's unit (requests/s or workers).
	Between []float64 `yaml:"between" json:"between"`
	// Resolution is the width the bracket is narrowed to, in the
	// parameter's unit. Default: (high − low) / 32 rounded down to 1, 2 or
	// 5 times a power of ten, and at least 1 for a concurrency.
	Resolution float64 `yaml:"resolution" json:"resolution"`
	// Repeats is the most runs that decide one probe (default 3): a probe
	// whose deciding budget is within Margin of its limit, or whose
	// percentile was judged on too few samples, is run again, up to
	// Repeats runs, and decided by the majority (a tie fails). A repeat
	// replays the same workload; against the simulator it takes the next
	// seed (sim://…?seed=), whose noise would otherwise repeat exactly.
	Repeats int `yaml:"repeats" json:"repeats"`
	// Margin is the distance from a limit, as a fraction of it, within
	// which a probe counts as near the boundary (default 0.1).
	Margin float64 `yaml:"margin" json:"margin"`
	// StopSaturated stops a probe early, as failed, when the server is
	// plainly over-saturated: requests in flight and TTFT both growing
	// steadily over the probe (default true). It applies to open-loop
	// stages, whose queue can grow without bound.
	StopSaturated *bool `yaml:"stop_saturated" json:"stop_saturated"`
}

// SearchTarget is a search's parameter, parsed.
type SearchTarget struct {
	Stage int    // index into load.stages
	Field string // "rate" or "concurrency"
}

var searchParamRE = regexp.MustCompile(`^load\.stages\[(\d+)\]\.(rate|concurrency)$`)

// Target parses Parameter; ok is false when it is not one a search takes.
func (s *SweepSearch) Target() (t SearchTarget, ok bool) {
	m := searchParamRE.FindStringSubmatch(s.Parameter)
	if m == nil {
		return t, false
	}
	i, err := strconv.Atoi(m[1])
	if err != nil {
		return t, false
	}
	return SearchTarget{Stage: i, Field: m[2]}, true
}

// SearchUnit is the unit of the searched parameter of sc's sweep.search:
// "requests/s" (a rate) or "workers" (a concurrency), or, when the stage
// is a session stage, "sessions/s" or "sessions" (held open at once).
func (sc *Scenario) SearchUnit() string {
	s := sc.Sweep.Search
	t, _ := s.Target()
	session := t.Stage < len(sc.Load.Stages) && sc.Load.Stages[t.Stage].Session != nil
	switch {
	case s.Integer() && session:
		return "sessions"
	case s.Integer():
		return "workers"
	case session:
		return "sessions/s"
	}
	return "requests/s"
}

// Integer reports whether the searched parameter takes whole numbers (a
// concurrency).
func (s *SweepSearch) Integer() bool {
	t, _ := s.Target()
	return t.Field == "concurrency"
}

// Low and High are the range's ends (0 when Between is malformed).
func (s *SweepSearch) Low() float64 {
	if len(s.Between) != 2 {
		return 0
	}
	return s.Between[0]
}

// High is the upper end of the range.
func (s *SweepSearch) High() float64 {
	if len(s.Between) != 2 {
		return 0
	}
	return s.Between[1]
}

// Saturation reports whether over-saturated probes are stopped early.
func (s *SweepSearch) Saturation() bool { return s.StopSaturated == nil || *s.StopSaturated }

func (s *SweepSearch) defaults() {
	if s.Repeats == 0 {
		s.Repeats = DefaultSearchRepeats
	}
	if s.Margin == 0 {
		s.Margin = DefaultSearchMargin
	}
	if s.Resolution == 0 && len(s.Between) == 2 && s.Between[1] > s.Between[0] {
		r := niceStep((s.Between[1] - s.Between[0]) / DefaultSearchDivisions)
		if s.Integer() {
			r = max(1, math.Round(r))
		}
		s.Resolution = r
	}
}

// niceStep rounds a positive step down to 1, 2 or 5 times a power of ten,
// so that probed values are round numbers.
func niceStep(x float64) float64 {
	mag := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{5, 2, 1} {
		if m*mag <= x*(1+1e-9) {
			return m * mag
		}
	}
	return mag
}

// SweepServer is how to launch the server under test for one run. Every
// string is a text/template over the run's variables: each parameter's value
// under its name ({{.max_num_batched_tokens}}, or {{index . "a.b"}} for a
// name with dots) and {{.port}}.
type SweepServer struct {
	// Command is the server's command line: a list (run directly) or one
	// string (run by /bin/sh -c, with every value single-quoted, and with
	// exec when it is one simple command). It is started in its own
	// process group.
	Command Command `yaml:"command" json:"command"`
	// Env holds variables added to the harness's environment.
	Env map[string]string `yaml:"env" json:"env,omitempty"`
	// BaseURL is the OpenAI base URL of the launched server; it replaces
	// target.url. Default DefaultSweepBaseURL. Loopback only.
	BaseURL string `yaml:"base_url" json:"base_url"`
	// ReadyURL is polled until it answers 2xx; default BaseURL without a
	// trailing /v1, plus /health. Loopback only.
	ReadyURL string `yaml:"ready_url" json:"ready_url"`
	// ReadyTimeout bounds the wait for ReadyURL (default 10m).
	ReadyTimeout Duration `yaml:"ready_timeout" json:"ready_timeout"`
	// StopTimeout is how long the process group has to exit after SIGTERM
	// before it is killed (default 30s).
	StopTimeout Duration `yaml:"stop_timeout" json:"stop_timeout"`
	// Port is the value of {{.port}}; 0 picks a free loopback port for
	// every run.
	Port int `yaml:"port" json:"port,omitempty"`
}

// Command is a command line: Args run directly, or Shell run by /bin/sh -c.
// In YAML it is a list of strings or one string. Exactly one of the two is
// set in a valid scenario.
type Command struct {
	Args  []string `yaml:"-"`
	Shell string   `yaml:"-"`
}

// UnmarshalYAML accepts a list of strings or one string.
func (c *Command) UnmarshalYAML(n *yaml.Node) error {
	switch {
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str":
		*c = Command{Shell: n.Value}
		return nil
	case n.Kind == yaml.SequenceNode:
		var args []string
		for _, e := range n.Content {
			if e.Kind != yaml.ScalarNode {
				return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: want a command-line argument, got %s", e.Line, describe(e))}}
			}
			args = append(args, e.Value)
		}
		*c = Command{Args: args}
		return nil
	}
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: want a command as a list of arguments or a shell string, got %s", n.Line, describe(n))}}
}

// MarshalJSON writes the command as its list or its shell string.
func (c Command) MarshalJSON() ([]byte, error) {
	if c.Args != nil {
		return json.Marshal(c.Args)
	}
	return json.Marshal(c.Shell)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (c *Command) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		*c = Command{}
		return json.Unmarshal(b, &c.Args)
	}
	*c = Command{}
	return json.Unmarshal(b, &c.Shell)
}

// SweepParam is one swept parameter with its values as strings (YAML
// scalars as written: 1024, 0.9, true, fp8).
type SweepParam struct {
	Name   string
	Values []string
	// Field is true for a scenario field path, false for a server setting.
	Field bool
}

// Params returns the parameters in name order. Values that are not
// scalars are skipped (Validate reports them).
func (s *Sweep) Params() []SweepParam {
	if s == nil {
		return nil
	}
	var out []SweepParam
	for _, name := range slices.Sorted(maps.Keys(s.Parameters)) {
		vals, _ := sweepValues(s.Parameters[name])
		out = append(out, SweepParam{Name: name, Values: vals, Field: IsFieldPath(name)})
	}
	return out
}

// sweepValues converts one parameter's YAML value to strings; it returns
// the index of the first value that is not a scalar, or -1.
func sweepValues(v any) ([]string, int) {
	list, ok := v.([]any)
	if !ok {
		list = []any{v}
	}
	out := make([]string, 0, len(list))
	for i, x := range list {
		s, ok := scalarString(x)
		if !ok {
			return out, i
		}
		out = append(out, s)
	}
	return out, -1
}

func scalarString(x any) (string, bool) {
	switch x := x.(type) {
	case string:
		return x, true
	case int:
		return strconv.Itoa(x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case uint64:
		return strconv.FormatUint(x, 10), true
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

// IsFieldPath reports whether a sweep parameter name is a scenario field
// path: its first key is one of the scenario's top-level keys (other than
// sweep).
func IsFieldPath(name string) bool {
	first := name
	if i := strings.IndexAny(name, ".["); i >= 0 {
		first = name[:i]
	}
	if first == "sweep" {
		return false
	}
	_, ok := fieldByTag(typeOfScenario, first)
	return ok
}

// Runs is the number of runs the sweep makes: combinations × repeats.
func (s *Sweep) Runs() int {
	if s == nil {
		return 0
	}
	n := max(s.Repeats, 1)
	for _, p := range s.Params() {
		n *= len(p.Values)
	}
	return n
}

// Launch is a server's command line and URLs rendered for one run.
type Launch struct {
	Args     []string // argv; a shell command is /bin/sh -c STRING
	Env      []string // KEY=VALUE pairs to add to the environment, sorted
	BaseURL  string
	ReadyURL string
}

// Render expands the server's templates with vars (parameter values by
// name, and SweepVarPort). A reference to a missing variable is an error.
// In a shell command (Command.Shell) every value is substituted
// single-quoted, so it reaches the server as one argument, literally: a
// value is never shell syntax; and a command that is one simple command is
// run with exec (see execShell).
func (s *SweepServer) Render(vars map[string]string) (Launch, error) {
	var l Launch
	var err error
	render := func(field, text string) string {
		if err != nil {
			return ""
		}
		var out string
		out, err = renderTemplate(field, text, vars)
		return out
	}
	if s.Command.Args != nil {
		for i, a := range s.Command.Args {
			l.Args = append(l.Args, render(fmt.Sprintf("command[%d]", i), a))
		}
	} else {
		// Values are data: single-quoted for the shell (see shellQuote).
		// One command is exec'd, so the server is the process launched.
		var shell string
		if err == nil {
			shell, err = renderTemplate("command", s.Command.Shell, shellQuoted(vars))
		}
		l.Args = []string{"/bin/sh", "-c", execShell(shell)}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		l.Env = append(l.Env, k+"="+render("env."+k, s.Env[k]))
	}
	l.BaseURL = render("base_url", s.BaseURL)
	l.ReadyURL = render("ready_url", s.ReadyURL)
	if err != nil {
		return Launch{}, err
	}
	return l, nil
}

func renderTemplate(field, text string, vars map[string]string) (string, error) {
	t, err := template.New(field).Option("missingkey=error").Parse(text)
	if err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	var b strings.Builder
	if err := t.Execute(&b, vars); err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	return b.String(), nil
}

// defaults fills the sweep's unset fields (called by Scenario.Defaults).
func (s *Sweep) defaults() {
	if s == nil {
		return
	}
	if s.Repeats == 0 {
		s.Repeats = 1
	}
	if s.Search != nil {
		s.Search.defaults()
	}
	sv := s.Server
	if sv == nil {
		return
	}
	if sv.BaseURL == "" {
		sv.BaseURL = DefaultSweepBaseURL
	}
	if sv.ReadyURL == "" {
		sv.ReadyURL = strings.TrimSuffix(strings.TrimRight(sv.BaseURL, "/"), "/v1") + "/health"
	}
	setDuration(&sv.ReadyTimeout, DefaultSweepReadyTimeout)
	setDuration(&sv.StopTimeout, DefaultSweepStopTimeout)
}

// sweep checks the sweep block. A scenario-field parameter is checked by
// applying each of its values to a copy of the scenario.
func (v *validator) sweep(sc *Scenario) {
	s := sc.Sweep
	if s == nil {
		return
	}
	if len(s.Parameters) == 0 && s.Search == nil {
		v.add("sweep.parameters", "at least one parameter is required (or a search)")
	}
	switch s.RankBy {
	case "", RankThroughput, RankGoodputPerJoule:
	case RankGoodputPerDollar:
		if sc.Cost == nil {
			v.add("sweep.rank_by", "%s needs a price: add cost", RankGoodputPerDollar)
		}
	default:
		v.add("sweep.rank_by", "want %s, %s or %s, got %q", RankThroughput, RankGoodputPerJoule, RankGoodputPerDollar, s.RankBy)
	}
	switch s.ParetoX {
	case "", ParetoOutputTokensPerSec, ParetoTokensPerSecPerGPU, ParetoTokensPerJoule:
	case ParetoUSDPerMTok:
		if sc.Cost == nil {
			v.add("sweep.pareto_x", "%s needs a price: add cost", ParetoUSDPerMTok)
		}
	default:
		v.add("sweep.pareto_x", "want %s, %s, %s or %s, got %q", ParetoOutputTokensPerSec, ParetoTokensPerSecPerGPU, ParetoTokensPerJoule, ParetoUSDPerMTok, s.ParetoX)
	}
	// The number of runs is checked first: each value of a field
	// parameter is validated on a copy of the scenario, which must not
	// happen for an unbounded number of values.
	combos := 1
	for _, name := range slices.Sorted(maps.Keys(s.Parameters)) {
		if vals, bad := sweepValues(s.Parameters[name]); bad < 0 && len(vals) > 0 {
			// A parameter has fewer than maxNodes values: no overflow.
			combos = min(combos*len(vals), 1<<40)
		}
	}
	tooMany := combos > maxSweepRuns
	if s.Repeats < 1 || s.Repeats > maxSweepRepeats {
		v.add("sweep.repeats", "want 1 to %d, got %d", maxSweepRepeats, s.Repeats)
	} else if n := combos * s.Repeats; n > maxSweepRuns {
		v.add("sweep", "%d runs (combinations × repeats) is more than %d", n, maxSweepRuns)
		tooMany = true
	}
	var server []string // server-setting parameter names
	for _, name := range slices.Sorted(maps.Keys(s.Parameters)) {
		field := "sweep.parameters." + name
		vals, bad := sweepValues(s.Parameters[name])
		switch {
		case bad >= 0:
			v.add(field, "value %d is not a scalar: want a list of numbers or strings", bad)
			continue
		case len(vals) == 0:
			v.add(field, "has no values")
			continue
		case name == SweepVarPort || name == "sweep" || strings.HasPrefix(name, "sweep."):
			v.add(field, "%q is reserved", name)
			continue
		}
		seen := map[string]bool{}
		for _, x := range vals {
			if seen[x] {
				v.add(field, "value %q is listed twice", x)
			}
			seen[x] = true
			if x == "" {
				v.add(field, "has an empty value")
			}
		}
		switch {
		case s.Search != nil && name == s.Search.Parameter:
			v.add(field, "is the searched parameter (sweep.search.parameter): a value cannot be both swept and searched")
		case !IsFieldPath(name):
			server = append(server, name)
		case !tooMany:
			v.sweepField(sc, field, name, vals)
		}
	}
	if s.Search != nil {
		v.search(sc)
	}
	if s.Server != nil {
		v.sweepServer(s, sc.Target.AllowRemote)
		return
	}
	if len(server) > 0 && !simurl.Is(sc.Target.URL) {
		v.add("sweep.parameters."+server[0], "is not a scenario field (like load.stages[0].rate) and the target is not sim://PRESET: add a sweep.server section that launches the server with this setting")
	}
}

// search checks the search block: a load setting of an existing stage of
// the right kind, a range and resolution in its unit, and budgets to judge
// the probes by.
func (v *validator) search(sc *Scenario) {
	s := sc.Sweep.Search
	if sc.Budgets == nil {
		v.add("sweep.search", "needs budgets: a search finds the highest value whose budgets pass")
	}
	if sc.Sweep.Repeats > 1 {
		v.add("sweep.repeats", "must be 1 with a search, which repeats the probes near the boundary itself (sweep.search.repeats)")
	}
	t, ok := s.Target()
	switch {
	case !ok:
		v.add("sweep.search.parameter", "want load.stages[N].rate or load.stages[N].concurrency, got %q", s.Parameter)
		return
	case t.Stage >= len(sc.Load.Stages):
		v.add("sweep.search.parameter", "load.stages[%d] does not exist (the scenario has %d stages)", t.Stage, len(sc.Load.Stages))
		return
	}
	st := &sc.Load.Stages[t.Stage]
	switch {
	case t.Field == "rate" && !st.Open():
		v.add("sweep.search.parameter", "load.stages[%d] is a closed-loop stage: search its concurrency, or give it a rate", t.Stage)
	case t.Field == "concurrency" && st.Open():
		v.add("sweep.search.parameter", "load.stages[%d] is an open-loop stage: search its rate, or give it a concurrency", t.Stage)
	}
	lo, hi := s.Low(), s.High()
	limit := float64(maxRatePerSec)
	if s.Integer() {
		limit = maxConcurrency
	}
	switch {
	case len(s.Between) != 2:
		v.add("sweep.search.between", "want [low, high], got %d numbers", len(s.Between))
		return
	case !(lo > 0 && lo < hi && hi <= limit):
		v.add("sweep.search.between", "want [low, high] with 0 < low < high ≤ %g, got [%g, %g]", limit, lo, hi)
		return
	case s.Integer() && (lo != math.Trunc(lo) || hi != math.Trunc(hi)):
		v.add("sweep.search.between", "a concurrency is a whole number, got [%g, %g]", lo, hi)
		return
	}
	switch r := s.Resolution; {
	case !(r > 0 && r < hi-lo):
		v.add("sweep.search.resolution", "want a step above 0 and below high − low (%g), got %g", hi-lo, r)
	case s.Integer() && r != math.Trunc(r):
		v.add("sweep.search.resolution", "a concurrency step is a whole number, got %g", r)
	}
	if s.Repeats < 1 || s.Repeats > maxSweepRepeats {
		v.add("sweep.search.repeats", "want 1 to %d, got %d", maxSweepRepeats, s.Repeats)
	}
	if !(s.Margin >= 0 && s.Margin < 1) {
		v.add("sweep.search.margin", "want a fraction from 0 to below 1, got %g", s.Margin)
	}
	v.sweepField(sc, "sweep.search.between", s.Parameter, []string{FormatSearchValue(lo, s.Integer()), FormatSearchValue(hi, s.Integer())})
}

// FormatSearchValue formats a searched value as --set takes it: a whole
// number for a concurrency, the shortest decimal for a rate.
func FormatSearchValue(x float64, integer bool) string {
	if integer {
		return strconv.FormatInt(int64(math.Round(x)), 10)
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// sweepField checks that every value of a scenario-field parameter can be
// set. The check runs on a copy without the sweep block, so it does not
// recurse.
func (v *validator) sweepField(sc *Scenario, field, path string, vals []string) {
	for _, x := range vals {
		c := clone(sc)
		if err := c.Override("sweep=", path+"="+x); err != nil {
			v.add(field, "value %q: %s", x, strings.ReplaceAll(err.Error(), "\n", "; "))
		}
	}
}

func (v *validator) sweepServer(s *Sweep, remote bool) {
	sv := s.Server
	if len(sv.Command.Args) == 0 && strings.TrimSpace(sv.Command.Shell) == "" {
		v.add("sweep.server.command", "is required: the server's command line, as a list or a shell string")
	}
	if err := checkShellTemplate(sv.Command.Shell); sv.Command.Args == nil && err != nil {
		v.add("sweep.server.command", "%v", err)
	}
	for k := range sv.Env {
		if !envNameRE.MatchString(k) {
			v.add("sweep.server.env", "%q is not a valid environment variable name", k)
		}
	}
	if sv.ReadyTimeout <= 0 || sv.ReadyTimeout.D() > maxSweepReadyTimeout {
		v.add("sweep.server.ready_timeout", "want a positive duration up to %s, got %s", Duration(maxSweepReadyTimeout), sv.ReadyTimeout)
	}
	if sv.StopTimeout <= 0 || sv.StopTimeout.D() > maxSweepStopTimeout {
		v.add("sweep.server.stop_timeout", "want a positive duration up to %s, got %s", Duration(maxSweepStopTimeout), sv.StopTimeout)
	}
	if sv.Port < 0 || sv.Port > 65535 {
		v.add("sweep.server.port", "want 0 (a free port per run) to 65535, got %d", sv.Port)
	}
	// Render with the first value of every parameter: templates must parse,
	// name only known variables, and give loopback URLs.
	vars := map[string]string{SweepVarPort: strconv.Itoa(max(sv.Port, 1))}
	for _, p := range s.Params() {
		if len(p.Values) > 0 {
			vars[p.Name] = p.Values[0]
		}
	}
	l, err := sv.Render(vars)
	if err != nil {
		field, _, _ := strings.Cut(err.Error(), ":")
		field, _, _ = strings.Cut(field, "[")
		v.add("sweep.server."+field, "%v", err)
		return
	}
	v.url("sweep.server.base_url", l.BaseURL, false, remote)
	v.readyURL(l.ReadyURL, remote)
}

func (v *validator) readyURL(raw string, remote bool) {
	const field = "sweep.server.ready_url"
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		v.add(field, "not a URL: %v", errorTail(err))
	case u.Scheme != "http" && u.Scheme != "https":
		v.add(field, "want http://HOST:PORT/PATH, got %q", raw)
	case !(loopback.Policy{AllowRemote: remote}).Host(u.Hostname()):
		v.add(field, "host %q is not loopback: servebench only polls 127.0.0.0/8, ::1 or localhost unless target.allow_remote opts in", u.Hostname())
	}
}
