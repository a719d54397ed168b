package scenario

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/servebench/servebench/internal/inputfile"
	"github.com/servebench/servebench/internal/loopback"
	"github.com/servebench/servebench/internal/simurl"
	"github.com/servebench/servebench/internal/tokenizer"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scrape/profile"
)

// Limits that catch typos (an extra zero) rather than real needs.
const (
	maxTokens      = 1 << 21 // per prompt or response
	maxConcurrency = 100_000 // workers or requests in flight
	maxRatePerSec  = 100_000
	minScrape      = 100 * time.Millisecond
)

// knownTokenizers are the encodings internal/tokenizer embeds (checked here
// by name, since loading one takes a third of a second) and the server's
// own counting; a tokenizer.json path is the other choice.
var knownTokenizers = []string{tokenizer.O200kBase, tokenizer.Cl100kBase, tokenizer.Server}

// tokenizerChoices says what prompts.tokenizer accepts.
var tokenizerChoices = strings.Join(knownTokenizers, ", ") + " or the path of the model's tokenizer.json"

var (
	envNameRE    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	headerNameRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// Validate reports every problem in the scenario, each as a *FieldError
// with its position, joined with errors.Join in file order. It reads the
// scenario only (it never fills in or corrects a value) and expects
// Defaults to have been applied. The only I/O is a stat of the dataset
// and tokenizer files.
func (sc *Scenario) Validate() error {
	v := validator{src: &sc.src}
	if strings.TrimSpace(sc.Name) == "" {
		v.add("name", "is required")
	}
	v.target(sc)
	v.request(sc)
	v.prompts(sc)
	v.conversation(sc)
	v.prefixCache(sc)
	v.scrape(&sc.Scrape, sc.Target.AllowRemote)
	v.load(sc)
	v.budgets(sc)
	v.cost(sc.Cost)
	v.sweep(sc)
	v.zeros(sc)
	return joinSorted(v.errs)
}

type validator struct {
	src  *source
	errs []error
}

func (v *validator) add(field, format string, args ...any) {
	pos := v.src.at(field)
	v.errs = append(v.errs, &FieldError{File: pos.file, Line: pos.line, Field: field, Msg: fmt.Sprintf(format, args...)})
}

func (v *validator) target(sc *Scenario) {
	t := &sc.Target
	v.url("target.url", t.URL, true, t.AllowRemote)
	if t.APIKeyEnv != "" && t.APIKeyFile != "" {
		v.add("target.api_key_file", "give api_key_env or api_key_file, not both")
	}
	for _, f := range []struct{ field, path string }{{"target.api_key_file", t.APIKeyFile}, {"target.tls.ca_file", t.TLS.CAFile}} {
		if f.path == "" {
			continue
		}
		if fi, err := os.Stat(sc.Path(f.path)); err != nil || !fi.Mode().IsRegular() {
			v.add(f.field, "cannot read %q: %s", sc.Path(f.path), errorOr(err, "not a regular file"))
		}
	}
	for name, value := range t.Headers {
		switch {
		case !headerNameRE.MatchString(name):
			v.add("target.headers."+name, "is not a valid HTTP header name")
		case strings.ContainsFunc(value, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }):
			v.add("target.headers."+name, "holds a control character, which an HTTP header cannot carry")
		}
	}
	if (t.TLS.CAFile != "" || t.TLS.InsecureSkipVerify) && !strings.HasPrefix(t.URL, "https:") {
		v.add("target.tls", "applies to https targets only")
	}
	switch t.API {
	case results.APIChat, results.APICompletions:
	case results.APIEmbeddings:
		if t.Stream != nil && *t.Stream {
			v.add("target.stream", "embeddings are not streamed: remove the key or write false")
		}
	default:
		v.add("target.api", "want %s, %s or %s, got %q", results.APIChat, results.APICompletions, results.APIEmbeddings, t.API)
	}
	if t.APIKeyEnv != "" && !envNameRE.MatchString(t.APIKeyEnv) {
		v.add("target.api_key_env", "want the name of an environment variable (not the key itself), got a value that is not a valid name")
	}
	if t.Stream == nil {
		v.add("target.stream", "is unset (apply Defaults before Validate)")
	}
	for _, d := range []struct {
		field string
		d     Duration
	}{
		{"target.timeouts.connect", t.Timeouts.Connect},
		{"target.timeouts.first_byte", t.Timeouts.FirstByte},
		{"target.timeouts.idle", t.Timeouts.Idle},
		{"target.timeouts.total", t.Timeouts.Total},
	} {
		if d.d <= 0 {
			v.add(d.field, "must be positive, got %s", d.d)
		}
	}
}

// isHostPort tells a "localhost:8000" that url.Parse read as scheme
// "localhost" with the opaque part "8000".
func isHostPort(u *url.URL) bool {
	_, err := strconv.Atoi(u.Opaque)
	return u.Scheme != "" && err == nil
}

// url checks a base URL: http(s) to a loopback host (any host when remote
// is allowed), or sim://PRESET when sim is allowed.
func (v *validator) url(field, raw string, sim, remote bool) {
	u, err := url.Parse(raw)
	if err != nil || isHostPort(u) {
		if !strings.Contains(raw, "://") {
			// "127.0.0.1:8000", "localhost:8000": a host and port without the scheme.
			v.add(field, "want a URL with its scheme, like http://127.0.0.1:8000, got %q (did you mean http://%s?)", raw, raw)
			return
		}
		v.add(field, "not a URL: %v", errorTail(err))
		return
	}
	switch u.Scheme {
	case "sim":
		if !sim {
			v.add(field, "want http://HOST:PORT/PATH, got %q", raw)
			return
		}
		su, err := simurl.Parse(raw)
		if err != nil {
			v.add(field, "%v", err)
			return
		}
		if su.File != "" {
			v.presetFile(field, su.In(v.dir(field)).File)
		}
	case "http", "https":
		if u.Hostname() == "" {
			v.add(field, "missing host in %q", raw)
			return
		}
		if !(loopback.Policy{AllowRemote: remote}).Host(u.Hostname()) {
			v.add(field, "host %q is not loopback: servebench sends load to 127.0.0.0/8, ::1 or localhost unless target.allow_remote: true (or --allow-remote) opts in", u.Hostname())
		}
		if u.User != nil {
			v.add(field, "credentials in the URL are not allowed (use target.api_key_env)")
		}
		if u.RawQuery != "" || u.Fragment != "" {
			v.add(field, "want a base URL without query or fragment, got %q", raw)
		}
	default:
		want := "http(s)://HOST:PORT[/v1] or sim://PRESET"
		if !sim {
			want = "http(s)://HOST:PORT/PATH"
		}
		v.add(field, "want %s, got %q", want, raw)
	}
}

// errorTail drops the repetition of the input url.Parse puts in its errors.
func errorTail(err error) string {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err.Error()
	}
	return err.Error()
}

func (v *validator) request(sc *Scenario) {
	r := &sc.Request
	if r.IgnoreEOS == nil || r.IncludeUsage == nil {
		v.add("request", "ignore_eos or include_usage is unset (apply Defaults before Validate)")
	}
	if r.MinTokens < 0 {
		v.add("request.min_tokens", "must be ≥ 0, got %d", r.MinTokens)
	} else if out := sc.Prompts.OutputTokens; r.MinTokens > 0 && out != nil && out.valid() && r.MinTokens > out.lowest() {
		v.add("request.min_tokens", "%d exceeds the smallest output length %d (servers reject min_tokens > max_tokens)", r.MinTokens, out.lowest())
	}
	if t := r.Temperature; t != nil && (*t < 0 || *t > 2 || math.IsNaN(*t)) {
		v.add("request.temperature", "want 0 to 2, got %g", *t)
	}
	if r.System != "" && sc.Target.API == results.APICompletions {
		v.add("request.system", "applies to the chat API only (target.api is completions)")
	}
	if r.ContinuousUsage && (r.IncludeUsage == nil || !*r.IncludeUsage) {
		v.add("request.continuous_usage", "needs include_usage: true")
	}
	if len(r.Extra) > 0 {
		if _, err := json.Marshal(r.Extra); err != nil {
			v.add("request.extra", "cannot be sent as JSON: %s", plainJSON(err))
		}
	}
	if sc.Target.API == results.APIEmbeddings {
		v.embeddingRequest(sc)
	} else if r.Batch != 0 {
		v.add("request.batch", "applies to embeddings only (target.api is %s)", sc.Target.API)
	}
	if len(r.Tools) > 0 && sc.Target.API != results.APIChat {
		v.add("request.tools", "applies to the chat API only (target.api is %s)", sc.Target.API)
	}
	for i, t := range r.Tools {
		f := fmt.Sprintf("request.tools[%d]", i)
		tool, ok := t.(map[string]any)
		if !ok {
			v.add(f, "want a mapping {type: function, function: {name: …, parameters: …}}")
			continue
		}
		fn, _ := tool["function"].(map[string]any)
		if name, _ := fn["name"].(string); name == "" {
			v.add(f+".function.name", "is required: every tool needs a function with a name")
		}
		if _, err := json.Marshal(tool); err != nil {
			v.add(f, "cannot be sent as JSON: %s", plainJSON(err))
		}
	}
}

// maxBatch bounds request.batch (the simulator's and vLLM's own limits
// are of this order).
const maxBatch = 2048

// embeddingRequest refuses the request options an embeddings request
// cannot carry: they would silently not be sent. (request.tools is
// refused for every API but chat, in request.)
func (v *validator) embeddingRequest(sc *Scenario) {
	r := &sc.Request
	if r.Batch < 1 || r.Batch > maxBatch {
		v.add("request.batch", "want 1 to %d texts per request, got %d", maxBatch, r.Batch)
	}
	for _, f := range []struct {
		field string
		set   bool
	}{
		{"request.ignore_eos", v.src.written("request.ignore_eos")},
		{"request.min_tokens", r.MinTokens != 0},
		{"request.temperature", r.Temperature != nil},
		{"request.include_usage", v.src.written("request.include_usage")},
		{"request.continuous_usage", r.ContinuousUsage},
		{"request.system", r.System != ""},
		{"prompts.output_tokens", sc.Prompts.OutputTokens != nil},
	} {
		if f.set {
			v.add(f.field, "applies to generation, not to embeddings (target.api is embeddings)")
		}
	}
}

func (v *validator) prompts(sc *Scenario) {
	p := &sc.Prompts
	switch {
	case tokenizer.IsFile(p.Tokenizer):
		fi, err := os.Stat(sc.TokenizerPath())
		switch {
		case err != nil:
			v.add("prompts.tokenizer", "cannot read %q: %s", sc.TokenizerPath(), errorOr(err, ""))
		case fi.IsDir():
			v.add("prompts.tokenizer", "%q is a directory: name its tokenizer.json", p.Tokenizer)
		}
	case p.Tokenizer == tokenizer.Server:
		if p.Dataset.Path != "" {
			v.add("prompts.tokenizer", "server calibrates synthetic prompts only; a dataset's lengths are counted here: name the model's tokenizer.json (the server's own counts are recorded either way)")
		}
	case !slices.Contains(knownTokenizers, p.Tokenizer):
		v.add("prompts.tokenizer", "want %s, got %q", tokenizerChoices, p.Tokenizer)
	}
	if p.SharedPrefixTokens < 0 {
		v.add("prompts.shared_prefix_tokens", "must be ≥ 0, got %d", p.SharedPrefixTokens)
	}
	if p.Dataset.Path != "" {
		v.dataset(sc)
		if p.InputTokens != nil {
			v.add("prompts.input_tokens", "comes from the dataset; remove it or the dataset")
		}
		if p.SharedPrefixTokens > 0 {
			v.add("prompts.shared_prefix_tokens", "applies to synthetic prompts only, not to a dataset")
		}
		if p.OutputTokens != nil {
			v.dist("prompts.output_tokens", p.OutputTokens)
		}
		return
	}
	if p.Dataset.Format != "" {
		v.add("prompts.dataset.format", "is set but prompts.dataset.path is empty")
	}
	if p.InputTokens == nil || (p.OutputTokens == nil && sc.Target.API != results.APIEmbeddings) {
		v.add("prompts", "input_tokens and output_tokens are unset (apply Defaults before Validate)")
		return
	}
	v.dist("prompts.input_tokens", p.InputTokens)
	if p.OutputTokens != nil {
		v.dist("prompts.output_tokens", p.OutputTokens)
	}
	if in := p.InputTokens; in.valid() && p.SharedPrefixTokens > 0 && p.SharedPrefixTokens > in.lowest() {
		v.add("prompts.shared_prefix_tokens", "%d exceeds the smallest input length %d (the prefix is part of the prompt)", p.SharedPrefixTokens, in.lowest())
	}
}

func (v *validator) dataset(sc *Scenario) {
	for i, st := range sc.Load.Stages {
		if st.Warmup.Shapes {
			v.add(fmt.Sprintf("load.stages[%d].warmup.shapes", i), "applies to synthetic prompts: a dataset's prompts have their own lengths (warm up with warmup.requests)")
		}
	}
	d := &sc.Prompts.Dataset
	if d.Format != FormatShareGPT && d.Format != FormatJSONL && d.Format != FormatMessages {
		v.add("prompts.dataset.format", "want %s, %s or %s, got %q", FormatShareGPT, FormatJSONL, FormatMessages, d.Format)
	}
	fi, err := os.Stat(sc.DatasetPath())
	switch {
	case err != nil:
		v.add("prompts.dataset.path", "cannot read %q: %s", sc.DatasetPath(), errorOr(err, ""))
	case !fi.Mode().IsRegular():
		v.add("prompts.dataset.path", "%q %s", d.Path, (&inputfile.NotRegularError{What: "dataset", Mode: fi.Mode()}).Reason())
	}
	for _, c := range []struct {
		field string
		v     int
	}{{"max_file_mib", d.MaxFileMiB}, {"max_line_mib", d.MaxLineMiB}} {
		if c.v < 0 || c.v > maxFileMiB {
			v.add("prompts.dataset."+c.field, "want 1 to %d MiB (0: the default), got %d", maxFileMiB, c.v)
		}
	}
}

// presetFile checks that a sim:// target's preset file exists and is a
// file; what it holds is checked when the simulator reads it.
func (v *validator) presetFile(field, path string) {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		v.add(field, "preset file: %v", err)
	case fi.IsDir():
		v.add(field, "preset file %s is a directory", path)
	}
}

// dir is the directory a relative path in field is resolved against: the
// scenario file's, when the field was written in the file; the working
// directory ("") when it came from the command line (--set, --target).
func (v *validator) dir(field string) string {
	if v.src.at(field).file == SetFile {
		return ""
	}
	return v.src.dir
}

// SimTarget returns target.url with a relative preset file
// (sim://./twin.yaml) resolved the way Validate resolved it: against the
// scenario file's directory when target.url was written in the file, as
// dataset paths are, and against the working directory when it came from
// --target or --set. Other URLs are returned unchanged.
func (sc *Scenario) SimTarget() string {
	u, err := simurl.Parse(sc.Target.URL)
	if err != nil || u.File == "" {
		return sc.Target.URL
	}
	v := validator{src: &sc.src}
	return u.In(v.dir("target.url")).String()
}

// TokenizerPath is the tokenizer.json's path, resolved against the
// scenario file's directory when relative; prompts.tokenizer as it is when
// it names an encoding or the server.
func (sc *Scenario) TokenizerPath() string {
	if !tokenizer.IsFile(sc.Prompts.Tokenizer) {
		return sc.Prompts.Tokenizer
	}
	return sc.Path(sc.Prompts.Tokenizer)
}

// DatasetPath is the dataset file's path, resolved against the scenario
// file's directory when relative; "" when the scenario has no dataset.
func (sc *Scenario) DatasetPath() string {
	p := sc.Prompts.Dataset.Path
	if p == "" || filepath.IsAbs(p) || sc.src.dir == "" {
		return p
	}
	return filepath.Join(sc.src.dir, p)
}

// dist checks a length distribution; unused fields are errors, so a typo in
// the dist name does not silently ignore the numbers.
func (v *validator) dist(field string, d *Dist) { v.distIn(field, d, 1, maxTokens, "tokens") }

// distIn checks a distribution of counts from lo to hi of unit.
func (v *validator) distIn(field string, d *Dist, lo, hi int, unit string) {
	unused := func(name string, set bool) {
		if set {
			v.add(field+"."+name, "is not used by dist %s", d.Dist)
		}
	}
	bound := func(name string, x int) {
		if x < lo || x > hi {
			v.add(field+"."+name, "want %d to %d %s, got %d", lo, hi, unit, x)
		}
	}
	switch d.Dist {
	case DistFixed:
		bound("value", d.Value)
		unused("min", d.Min != 0)
		unused("max", d.Max != 0)
		unused("mean", d.Mean != 0)
		unused("stddev", d.Stddev != 0)
	case DistUniform:
		bound("min", d.Min)
		bound("max", d.Max)
		if d.Min >= 1 && d.Max >= 1 && d.Min > d.Max {
			v.add(field, "min %d exceeds max %d", d.Min, d.Max)
		}
		unused("value", d.Value != 0)
		unused("mean", d.Mean != 0)
		unused("stddev", d.Stddev != 0)
	case DistNormal:
		if !(d.Mean >= float64(lo) && d.Mean <= float64(hi)) {
			v.add(field+".mean", "want %d to %d %s, got %g", lo, hi, unit, d.Mean)
		}
		if !(d.Stddev >= 0 && d.Stddev <= float64(hi)) {
			v.add(field+".stddev", "want 0 to %d %s, got %g", hi, unit, d.Stddev)
		}
		bound("min", d.Min)
		bound("max", d.Max)
		if d.Min >= 1 && d.Max >= 1 && d.Min > d.Max {
			v.add(field, "min %d exceeds max %d", d.Min, d.Max)
		}
		unused("value", d.Value != 0)
	default:
		v.add(field+".dist", "want %s, %s or %s, got %q", DistFixed, DistUniform, DistNormal, d.Dist)
	}
}

// valid reports whether d's bounds are usable (checked by dist).
func (d *Dist) valid() bool {
	switch d.Dist {
	case DistFixed:
		return d.Value >= 1
	case DistUniform, DistNormal:
		return d.Min >= 1 && d.Min <= d.Max
	}
	return false
}

// lowest is the smallest length d can draw.
func (d *Dist) lowest() int {
	if d.Dist == DistFixed {
		return d.Value
	}
	return d.Min
}

// highest is the largest length d can draw.
func (d *Dist) highest() int {
	if d.Dist == DistFixed {
		return d.Value
	}
	return d.Max
}

func (v *validator) scrape(s *Scrape, remote bool) {
	if s.URL != "" {
		v.url("scrape.url", s.URL, false, remote)
	}
	if s.Interval < Duration(minScrape) {
		v.add("scrape.interval", "must be at least %s, got %s", minScrape, s.Interval)
	}
	if names := profile.Names(); !slices.Contains(names, s.Profile) {
		v.add("scrape.profile", "want one of %s, got %q", strings.Join(names, ", "), s.Profile)
	}
	v.gpu(s.GPU, remote)
}

func (v *validator) gpu(g *GPUScrape, remote bool) {
	if g == nil {
		return
	}
	kinds := 0
	for _, set := range []bool{len(g.Targets()) > 0, g.Sampler != "", g.File != ""} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		v.add("scrape.gpu", "give one source of GPU telemetry: url (or urls) of a DCGM exporter, sampler: %s or %s, or file: what one wrote", SamplerNvidiaSMI, SamplerAMDSMI)
	}
	if g.URL != "" {
		v.url("scrape.gpu.url", g.URL, false, remote)
	}
	for i, u := range g.URLs {
		v.url(fmt.Sprintf("scrape.gpu.urls[%d]", i), u, false, remote)
	}
	if g.Sampler != "" && g.Sampler != SamplerNvidiaSMI && g.Sampler != SamplerAMDSMI {
		v.add("scrape.gpu.sampler", "want %s (NVIDIA GPUs) or %s (AMD GPUs), got %q (a DCGM exporter's page goes in url)", SamplerNvidiaSMI, SamplerAMDSMI, g.Sampler)
	}
	if g.Interval != 0 && g.Interval < Duration(minScrape) {
		v.add("scrape.gpu.interval", "must be at least %s, got %s", minScrape, g.Interval)
	}
	seen := map[int]bool{}
	for i, n := range g.GPUs {
		if n < 0 || seen[n] {
			v.add(fmt.Sprintf("scrape.gpu.gpus[%d]", i), "want distinct GPU indexes ≥ 0, got %d", n)
		}
		seen[n] = true
	}
	if g.Pod != "" && len(g.Targets()) == 0 {
		v.add("scrape.gpu.pod", "selects GPUs by the DCGM exporter's pod label: give its url")
	}
}

func (v *validator) cost(c *results.Cost) {
	if c == nil {
		return
	}
	for _, f := range []struct {
		field string
		x     float64
	}{{"cost.per_gpu_hour", c.PerGPUHour}, {"cost.per_mtok_input", c.PerMTokInput}, {"cost.per_mtok_output", c.PerMTokOutput}} {
		if math.IsNaN(f.x) || math.IsInf(f.x, 0) || f.x < 0 {
			v.add(f.field, "want a price in US dollars ≥ 0, got %g", f.x)
		}
	}
	tokens := c.PerMTokInput > 0 || c.PerMTokOutput > 0
	switch {
	case c.PerGPUHour > 0 && tokens:
		v.add("cost", "price by the GPU-hour or by the token, not both")
	case c.PerGPUHour == 0 && !tokens:
		v.add("cost", "sets no price: give per_gpu_hour (with gpus), or per_mtok_input and per_mtok_output")
	}
	if c.GPUs < 0 || (c.GPUs > 0 && c.PerGPUHour == 0) {
		v.add("cost.gpus", "counts the GPUs priced by per_gpu_hour: want a number ≥ 1 with per_gpu_hour, got %d", c.GPUs)
	}
}

func (v *validator) load(sc *Scenario) {
	l := &sc.Load
	if l.MaxDuration <= 0 {
		v.add("load.max_duration", "must be positive, got %s", l.MaxDuration)
	}
	if cb := l.CircuitBreaker; cb.Window < 2 || cb.Window > 100_000 {
		v.add("load.circuit_breaker.window", "want a number of requests from 2 to 100000, got %d", cb.Window)
	}
	if cb := l.CircuitBreaker; !(cb.Failures > 0 && cb.Failures <= 1) {
		v.add("load.circuit_breaker.failures", "want a share above 0 and at most 1 (0.9 is 90 %%), got %g", cb.Failures)
	}
	if len(l.Stages) == 0 {
		v.add("load.stages", "at least one stage is required")
	}
	names := map[string]int{}
	for i := range l.Stages {
		st := &l.Stages[i]
		f := fmt.Sprintf("load.stages[%d]", i)
		if j, dup := names[st.Name]; dup && st.Name != "" {
			v.add(f+".name", "%q is also the name of stage %d", st.Name, j)
		}
		names[st.Name] = i
		if st.Trace != nil && st.Session == nil {
			v.traceStage(sc, i)
			v.bounds(f, st)
			continue
		}
		if st.Session != nil {
			v.sessionStage(sc, i)
			if st.Trace != nil || st.Session.Trace != nil {
				v.bounds(f, st)
				continue
			}
		}
		v.stage(f, st)
	}
}

func (v *validator) stage(f string, st *Stage) {
	switch {
	case st.Concurrency != 0 && st.RatePerSec != 0:
		v.add(f, "set concurrency (closed loop) or rate (open loop), not both")
	case st.Concurrency == 0 && st.RatePerSec == 0:
		v.add(f, "set concurrency (closed loop) or rate (open loop)")
	case st.Concurrency < 0 || st.Concurrency > maxConcurrency:
		v.add(f+".concurrency", "want 1 to %d, got %d", maxConcurrency, st.Concurrency)
	case !(st.RatePerSec >= 0 && st.RatePerSec <= maxRatePerSec):
		v.add(f+".rate", "want a rate in requests per second above 0 and up to %d, got %g", maxRatePerSec, st.RatePerSec)
	}
	if st.Open() {
		switch st.Arrival {
		case ArrivalConstant, ArrivalPoisson:
			if st.Burstiness != 0 {
				v.add(f+".burstiness", "applies to arrival gamma only (arrival is %s)", st.Arrival)
			}
		case ArrivalGamma:
			if !(st.Burstiness > 0 && st.Burstiness <= 1000) {
				v.add(f+".burstiness", "want a gamma shape above 0 and up to 1000, got %g", st.Burstiness)
			}
		default:
			v.add(f+".arrival", "want %s, %s or %s, got %q", ArrivalConstant, ArrivalPoisson, ArrivalGamma, st.Arrival)
		}
		if st.MaxConcurrency < 1 || st.MaxConcurrency > maxConcurrency {
			v.add(f+".max_concurrency", "want 1 to %d, got %d", maxConcurrency, st.MaxConcurrency)
		}
	} else {
		if st.Arrival != "" {
			v.add(f+".arrival", "applies to open-loop stages (rate) only")
		}
		if st.Burstiness != 0 {
			v.add(f+".burstiness", "applies to open-loop stages (rate) only")
		}
		if st.MaxConcurrency != 0 {
			v.add(f+".max_concurrency", "applies to open-loop stages (rate) only; concurrency already bounds a closed loop")
		}
		if st.Overflow != "" {
			v.add(f+".overflow", "applies to open-loop stages (rate or trace) only: a closed loop never has more than concurrency requests")
		}
	}
	if st.Requests == 0 && st.Duration == 0 && st.Session == nil && !st.Prime {
		v.add(f, "needs a bound: requests, duration or both")
	}
	v.bounds(f, st)
}

// bounds checks a stage's request and duration bounds, its warmup, its
// until and, for an open loop, its overflow policy.
func (v *validator) bounds(f string, st *Stage) {
	if st.Open() && st.Overflow != OverflowDrop && st.Overflow != OverflowQueue {
		v.add(f+".overflow", "want %s (an arrival finding max_concurrency in flight is recorded and never sent) or %s (it waits client-side for a slot, as vLLM's --max-concurrency), got %q",
			OverflowDrop, OverflowQueue, st.Overflow)
	}
	if st.Until != nil {
		v.until(f+".until", st.Until)
	}
	if st.Warmup.Shapes && st.Trace != nil {
		v.add(f+".warmup.shapes", "applies to synthetic prompts: a trace's requests have their own lengths")
	}
	if st.Requests < 0 {
		v.add(f+".requests", "must be ≥ 0, got %d", st.Requests)
	}
	if st.Duration < 0 {
		v.add(f+".duration", "must be ≥ 0, got %s", st.Duration)
	}
	w := st.Warmup
	if w.Requests < 0 {
		v.add(f+".warmup.requests", "must be ≥ 0, got %d", w.Requests)
	} else if st.Requests > 0 && w.Requests >= st.Requests {
		v.add(f+".warmup.requests", "%d leaves no measured requests (the stage sends %d, warmup included)", w.Requests, st.Requests)
	}
	if w.Duration < 0 {
		v.add(f+".warmup.duration", "must be ≥ 0, got %s", w.Duration)
	} else if st.Duration > 0 && w.Duration >= st.Duration {
		v.add(f+".warmup.duration", "%s leaves no measured time (the stage lasts %s, warmup included)", w.Duration, st.Duration)
	}
}

// untilStats are the statistics a stage's until may aim at.
var untilStats = []string{"p50", "p90", "p95", "p99", "p99_9", "mean"}

// until checks a stage's precision goal.
func (v *validator) until(f string, u *Until) {
	name, stat, _ := strings.Cut(u.Metric, ".")
	m, ok := results.MetricByName(name)
	switch {
	case !ok || m.Class != results.Latency:
		var names []string
		for _, m := range results.Metrics() {
			if m.Class == results.Latency {
				names = append(names, m.Name)
			}
		}
		v.add(f+".metric", "want a latency metric and a statistic, like ttft_ms.p99 (metrics: %s), got %q", strings.Join(names, ", "), u.Metric)
	case !slices.Contains(untilStats, stat):
		v.add(f+".metric", "want the statistic after the dot, one of %s (like %s.p99), got %q", strings.Join(untilStats, ", "), name, u.Metric)
	}
	if !(u.Margin > 0 && u.Margin < 1) {
		v.add(f+".margin", "want a relative margin above 0 and below 1, like 0.05 or 5%%, got %.4g", float64(u.Margin))
	}
	if !(u.Confidence >= 0.5 && u.Confidence <= 0.999) {
		v.add(f+".confidence", "want a level from 0.5 to 0.999, like 0.95 or 95%%, got %.4g", float64(u.Confidence))
	}
}

// plainJSON says why a value cannot be encoded as JSON without naming Go
// types ("json: unsupported type: map[interface {}]interface {}").
func plainJSON(err error) string {
	var te *json.UnsupportedTypeError
	if errors.As(err, &te) {
		if te.Type.Kind() == reflect.Map {
			return "a mapping has a key that is not a string"
		}
		return "a value has no JSON form"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// errorOr says what err says without the operation and path a Go error
// repeats ("stat x.json: no such file or directory" → "no such file or
// directory"), or msg when err is nil.
func errorOr(err error, msg string) string {
	var pe *os.PathError
	switch {
	case err == nil:
		return msg
	case errors.As(err, &pe):
		return pe.Err.Error()
	}
	return errorTail(err)
}
