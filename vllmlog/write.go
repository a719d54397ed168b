package vllmlog

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/servebench/servebench/internal/kvcapacity"
)

// formats are the output formats Write knows.
var formats = []string{"text", "json", "markdown"}

// ValidFormat reports whether Write knows format.
func ValidFormat(format string) bool {
	for _, f := range formats {
		if f == format {
			return true
		}
	}
	return false
}

// Write writes the report in one of Formats.
func Write(w io.Writer, rep *Report, format string) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(rep)
	case "markdown":
		return writeDoc(w, rep, markdown{})
	case "text":
		return writeDoc(w, rep, text{})
	}
	return fmt.Errorf("unknown format %q (want %s)", format, strings.Join(formats, ", "))
}

// style is what differs between the text and Markdown renderings.
type style interface {
	title(b *bufio.Writer, s string)
	heading(b *bufio.Writer, s string)
	table(b *bufio.Writer, header []string, rows [][]string, right []bool)
	fields(b *bufio.Writer, rows [][2]string)
	bullets(b *bufio.Writer, items []string)
	para(b *bufio.Writer, s string)
}

const textWidth = 100

type text struct{}

func (text) title(b *bufio.Writer, s string) {
	fmt.Fprintf(b, "%s\n%s\n", s, strings.Repeat("=", min(len([]rune(s)), textWidth)))
}
func (text) heading(b *bufio.Writer, s string) { fmt.Fprintf(b, "\n%s\n", s) }
func (text) table(b *bufio.Writer, header []string, rows [][]string, right []bool) {
	widths := make([]int, len(header))
	for i, h := range header {
		widths[i] = len([]rune(h))
	}
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	line := func(cells []string) {
		b.WriteString("  ")
		for i, c := range cells {
			pad := strings.Repeat(" ", widths[i]-len([]rune(c)))
			switch {
			case i == len(cells)-1 && !right[i]:
				b.WriteString(c)
			case right[i]:
				b.WriteString(pad + c)
			default:
				b.WriteString(c + pad)
			}
			if i < len(cells)-1 {
				b.WriteString("  ")
			}
		}
		b.WriteString("\n")
	}
	line(header)
	for _, r := range rows {
		line(r)
	}
}
func (text) fields(b *bufio.Writer, rows [][2]string) {
	w := 0
	for _, r := range rows {
		w = max(w, len([]rune(r[0])))
	}
	for _, r := range rows {
		fmt.Fprintf(b, "  %s%s  %s\n", r[0], strings.Repeat(" ", w-len([]rune(r[0]))), wrap(r[1], 4+w, textWidth))
	}
}
func (text) bullets(b *bufio.Writer, items []string) {
	for _, it := range items {
		fmt.Fprintf(b, "  - %s\n", wrap(it, 4, textWidth))
	}
}
func (text) para(b *bufio.Writer, s string) { fmt.Fprintf(b, "  %s\n", wrap(s, 2, textWidth)) }

// wrap breaks s into lines of at most width columns, continuing lines
// with indent spaces.
func wrap(s string, indent, width int) string {
	words := strings.Fields(s)
	var b strings.Builder
	col := indent
	for i, w := range words {
		n := len([]rune(w))
		if i > 0 {
			if col+1+n > width {
				b.WriteString("\n" + strings.Repeat(" ", indent))
				col = indent
			} else {
				b.WriteByte(' ')
				col++
			}
		}
		b.WriteString(w)
		col += n
	}
	return b.String()
}

type markdown struct{}

func (markdown) title(b *bufio.Writer, s string)   { fmt.Fprintf(b, "## %s\n", s) }
func (markdown) heading(b *bufio.Writer, s string) { fmt.Fprintf(b, "\n### %s\n\n", s) }
func (markdown) table(b *bufio.Writer, header []string, rows [][]string, right []bool) {
	esc := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	fmt.Fprintf(b, "| %s |\n|", strings.Join(header, " | "))
	for _, r := range right {
		if r {
			b.WriteString(" ---: |")
		} else {
			b.WriteString(" --- |")
		}
	}
	b.WriteString("\n")
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = esc(c)
		}
		fmt.Fprintf(b, "| %s |\n", strings.Join(cells, " | "))
	}
}
func (m markdown) fields(b *bufio.Writer, rows [][2]string) {
	var rs [][]string
	for _, r := range rows {
		rs = append(rs, []string{r[0], r[1]})
	}
	m.table(b, []string{"setting", "value"}, rs, []bool{false, false})
}
func (markdown) bullets(b *bufio.Writer, items []string) {
	if len(items) > 0 {
		b.WriteString("\n")
	}
	for _, it := range items {
		fmt.Fprintf(b, "- %s\n", it)
	}
}
func (markdown) para(b *bufio.Writer, s string) { fmt.Fprintf(b, "\n%s\n", s) }

func writeDoc(w io.Writer, rep *Report, st style) error {
	b := bufio.NewWriter(w)
	for i, r := range rep.Runs {
		if i > 0 {
			b.WriteString("\n\n")
		}
		writeRun(b, r, st)
	}
	if len(rep.Warnings) > 0 {
		st.heading(b, "Reading")
		st.bullets(b, rep.Warnings)
	}
	return b.Flush()
}

func writeRun(b *bufio.Writer, r *Run, st style) {
	c := &r.Config
	title := fmt.Sprintf("%s, lines %s–%s", r.File, kvcapacity.Thousands(int(r.FirstLine)), kvcapacity.Thousands(int(r.LastLine)))
	if c.Version != "" {
		title += ": vLLM " + c.Version
	}
	if name := c.modelName(); name != "" {
		title += ", " + name
	}
	st.title(b, title)
	writeConfig(b, r, st)
	writeStartup(b, r, st)
	writeKV(b, r, st)
	writeRuntime(b, r, st)
	writeDecay(b, r, st)
	writeDiagnoses(b, r, st)
	if len(r.Findings) > 0 {
		st.heading(b, "Warnings and errors")
		rows := make([]string, 0, len(r.Findings))
		for _, f := range r.Findings {
			s := fmt.Sprintf("%s ×%d", f.Level, f.Count)
			if f.Verdict != "" {
				s += " (" + f.Verdict + ")"
			}
			s += fmt.Sprintf(", first at line %s", kvcapacity.Thousands(int(f.FirstLine)))
			if f.Source != "" {
				s += " [" + f.Source + "]"
			}
			if f.Frames > 0 {
				s += " (ends a traceback of " + plural(float64(f.Frames), "frame", "frames") + ")"
			}
			s += ": " + f.Message
			if f.Explanation != "" {
				s += " → " + f.Explanation
			}
			rows = append(rows, s)
		}
		st.bullets(b, rows)
	}
	if r.FinalError != "" {
		st.para(b, "Final error: "+r.FinalError)
	}
	if len(r.Hints) > 0 {
		st.heading(b, "Hints")
		st.bullets(b, r.Hints)
	}
}

// modelName is the model path, with the served name when it differs.
func (c *Config) modelName() string {
	switch {
	case c.Model == "":
		return c.ServedModelName
	case c.ServedModelName != "" && c.ServedModelName != c.Model:
		return c.Model + " (served as " + c.ServedModelName + ")"
	}
	return c.Model
}

func onOff(b *bool) string {
	switch {
	case b == nil:
		return ""
	case *b:
		return "on"
	}
	return "off"
}

func writeConfig(b *bufio.Writer, r *Run, st style) {
	c := &r.Config
	var rows [][2]string
	add := func(k, v string) {
		if v != "" && v != "0" {
			rows = append(rows, [2]string{k, v})
		}
	}
	add("model", c.modelName())
	if c.Generation != "" {
		add("engine", c.Generation+" (from "+c.GenerationFrom+")")
	}
	add("architecture", c.Architecture)
	if len(c.NonDefaultArgs) > 0 {
		var args []string
		for _, a := range c.NonDefaultArgs {
			args = append(args, a.Name+"="+a.Value)
		}
		add("non-default args", strings.Join(args, ", "))
	}
	if c.MaxModelLen > 0 {
		add("max model len", kvcapacity.Thousands(c.MaxModelLen))
	}
	if c.MaxNumBatchedTokens > 0 {
		add("max_num_batched_tokens", kvcapacity.Thousands(c.MaxNumBatchedTokens)+" ("+c.BatchedTokensSource+")")
	}
	if c.MaxNumSeqs > 0 {
		add("max_num_seqs", kvcapacity.Thousands(c.MaxNumSeqs)+" ("+c.MaxNumSeqsSource+")")
	}
	dtype := c.Dtype
	if c.CheckpointDtype != "" && c.CheckpointDtype != c.Dtype {
		dtype += " (checkpoint " + c.CheckpointDtype + ")"
	}
	add("dtype", dtype)
	add("quantization", c.Quantization)
	add("KV-cache dtype", c.KVCacheDtype)
	add("attention backend", c.AttentionBackend)
	add("MoE backend", c.MoEBackend)
	if c.TensorParallel > 0 {
		par := fmt.Sprintf("tensor %d, pipeline %d, data %d", c.TensorParallel, max(1, c.PipelineParallel), max(1, c.DataParallel))
		if c.ContextParallel > 1 {
			par += fmt.Sprintf(", decode context %d", c.ContextParallel)
		}
		if e := onOff(c.ExpertParallel); e != "" {
			par += ", expert " + e
		}
		add("parallelism", par)
	}
	add("prefix caching", onOff(c.PrefixCaching))
	add("chunked prefill", onOff(c.ChunkedPrefill))
	add("async scheduling", onOff(c.AsyncScheduling))
	add("enforce eager", onOff(c.EnforceEager))
	add("compilation", c.CompilationMode)
	graphs := c.CUDAGraphMode
	if n := len(c.CaptureSizes); n > 0 {
		graphs += fmt.Sprintf(", %d capture sizes from %d to %s", n, c.CaptureSizes[0], kvcapacity.Thousands(c.CaptureSizes[n-1]))
	} else if c.CaptureSizeOverride > 0 {
		graphs += ", capture sizes up to " + kvcapacity.Thousands(c.CaptureSizeOverride)
	}
	add("CUDA graphs", strings.TrimPrefix(graphs, ", "))
	if c.GPUMemoryUtilization > 0 {
		add("gpu_memory_utilization", trimNum(c.GPUMemoryUtilization))
	}
	server := c.ServerURL
	if len(c.Routes) > 0 {
		var paths []string
		for _, rt := range c.Routes {
			if len(paths) == 0 || paths[len(paths)-1] != rt.Path {
				paths = append(paths, rt.Path)
			}
		}
		server = strings.TrimPrefix(fmt.Sprintf("%s, %d routes: %s", server, len(paths), strings.Join(paths, " ")), ", ")
	}
	add("server", server)
	if len(rows) == 0 && len(c.Notes) == 0 {
		return
	}
	st.heading(b, "Configuration")
	st.fields(b, rows)
	if len(c.Notes) > 0 {
		st.para(b, "What the settings mean:")
		st.bullets(b, c.Notes)
	}
}

func sec(x float64) string { return strings.TrimSuffix(fmt.Sprintf("%.2f", x), ".00") }

func writeStartup(b *bufio.Writer, r *Run, st style) {
	s := &r.Startup
	if len(s.Phases) == 0 && s.ModelLoadS == 0 && s.CompileS == 0 && s.CaptureS == 0 {
		return
	}
	head := "Start-up"
	if s.WallS > 0 {
		head = fmt.Sprintf("Start-up: %s from %s to %s", duration(s.WallS), s.Began, s.Ready)
	}
	st.heading(b, head)
	total := s.WallS
	if total == 0 {
		for _, p := range s.Phases {
			total += p.Seconds
		}
	}
	var rows [][]string
	for _, p := range s.Phases {
		rows = append(rows, []string{p.Name, sec(p.Seconds), fmt.Sprintf("%.0f %%", 100*p.Seconds/total), p.From})
	}
	if len(rows) > 0 {
		st.table(b, []string{"phase", "seconds", "share", "from the log"}, rows, []bool{false, true, true, false})
	}
	var facts []string
	if s.ModelLoadS > 0 {
		f := fmt.Sprintf("Model loading: %s GiB in %s s", trimNum(s.ModelGiB), sec(s.ModelLoadS))
		if s.WeightsS > 0 {
			f += fmt.Sprintf(" (weights %s s", sec(s.WeightsS))
			if s.Shards > 0 {
				f += fmt.Sprintf(", %d shards", s.Shards)
			}
			f += ")"
		}
		facts = append(facts, f+".")
	}
	if s.CompileS > 0 || s.DynamoS > 0 {
		var parts []string
		if s.DynamoS > 0 {
			parts = append(parts, "Dynamo bytecode transform "+sec(s.DynamoS)+" s")
		}
		if s.GraphCompileS > 0 {
			parts = append(parts, "graph compile "+sec(s.GraphCompileS)+" s")
		}
		if s.CompileS > 0 {
			parts = append(parts, sec(s.CompileS)+" s in total")
		}
		f := "torch.compile: " + strings.Join(parts, ", ")
		if h := s.CompileCacheHit; h != nil {
			f += map[bool]string{true: "; the compiled graph came from the cache", false: "; compiled from scratch (not in the cache)"}[*h]
		}
		facts = append(facts, f+".")
	}
	if s.CaptureS > 0 || s.GraphsPiecewise+s.GraphsFull > 0 {
		f := "CUDA graphs:"
		if s.GraphsPiecewise+s.GraphsFull > 0 {
			f += fmt.Sprintf(" %d piecewise and %d full,", s.GraphsPiecewise, s.GraphsFull)
		}
		f += fmt.Sprintf(" captured in %s s, %s GiB.", sec(s.CaptureS), trimNum(s.CaptureGiB))
		facts = append(facts, f)
	}
	if s.EngineInitS > 0 {
		facts = append(facts, fmt.Sprintf("Engine initialisation (profiling, KV cache, warm-up, compile and capture): %s s.", sec(s.EngineInitS)))
	}
	if s.WarmupS > 0 {
		facts = append(facts, fmt.Sprintf("Multi-modal warm-up in the API server: %s s.", sec(s.WarmupS)))
	}
	st.bullets(b, facts)
}

func writeKV(b *bufio.Writer, r *Run, st style) {
	kv := &r.KV
	if kv.Tokens == 0 && kv.AvailableGiB == 0 && kv.Concurrency == 0 && kv.GPUBlocks == 0 && kv.CPUBlocks == 0 {
		return
	}
	st.heading(b, "Memory and KV cache")
	var rows [][2]string
	if kv.AvailableGiB != 0 {
		rows = append(rows, [2]string{"available KV-cache memory", trimNum(kv.AvailableGiB) + " GiB"})
	}
	if kv.GPUBlocks > 0 || kv.CPUBlocks > 0 {
		rows = append(rows, [2]string{"blocks", fmt.Sprintf("%s on the GPU, %s in CPU memory (swap space)", kvcapacity.Thousands(kv.GPUBlocks), kvcapacity.Thousands(kv.CPUBlocks))})
	}
	if kv.Tokens > 0 {
		rows = append(rows, [2]string{"GPU KV cache size", kvcapacity.Thousands(kv.Tokens) + " tokens"})
	}
	if kv.Concurrency > 0 {
		rows = append(rows, [2]string{"maximum concurrency", fmt.Sprintf("%.2f× at %s tokens per request", kv.Concurrency, kvcapacity.Thousands(kv.ConcurrencyLen))})
	}
	if ck := kv.Check; ck != nil {
		var verdict string
		switch {
		case ck.Skipped != "":
			verdict = "not done: " + ck.Skipped
		case ck.Agrees():
			verdict = fmt.Sprintf("agrees (%s, %s)", ck.Model, ck.Source)
		default:
			verdict = fmt.Sprintf("DOES NOT AGREE (%s, %s): tokens %s, concurrency %s", ck.Model, ck.Source, agreeWord(ck.TokensAgree), agreeWord(ck.ConcurrencyAgree))
		}
		rows = append(rows, [2]string{"recomputed", verdict})
	}
	st.fields(b, rows)
	if ck := kv.Check; ck != nil && len(ck.Explanation) > 0 {
		st.para(b, "The arithmetic:")
		st.bullets(b, ck.Explanation)
	}
	if len(kv.Notes) > 0 {
		st.para(b, "Notes:")
		st.bullets(b, kv.Notes)
	}
}

// maxTableRows bounds the stats table of the text and Markdown reports;
// the JSON report has every kept point.
const maxTableRows = 24

func cell(x float64, digits int) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.*f", digits, x)
}

func writeRuntime(b *bufio.Writer, r *Run, st style) {
	rt := &r.Runtime
	if len(rt.Engines) == 0 && len(rt.Requests) == 0 {
		return
	}
	for _, s := range rt.Engines {
		st.heading(b, fmt.Sprintf("Runtime: engine %s, %s stats lines from %s to %s", s.Engine, kvcapacity.Thousands(int(s.Lines)), s.First.Time, s.Last.Time))
		idx := sampleIndexes(len(s.Points), maxTableRows)
		var rows [][]string
		for _, i := range idx {
			p := s.Points[i]
			rows = append(rows, []string{p.Time, cell(p.PromptTPS, 1), cell(p.GenerationTPS, 1), cell(p.Running, 0), cell(p.Waiting, 0), cell(p.KVUsagePerc, 1), cell(p.PrefixHitPerc, 1)})
		}
		st.table(b, []string{"time", "prompt tok/s", "generation tok/s", "running", "waiting", "KV usage %", "prefix hit %"}, rows,
			[]bool{false, true, true, true, true, true, true})
		var notes []string
		if len(idx) < len(s.Points) || s.Stride > 1 {
			notes = append(notes, fmt.Sprintf("%d of %d rows shown (each the mean of %d lines); the JSON report holds them all.", len(idx), len(s.Points), s.Stride))
		}
		if s.Preemptions > 0 {
			notes = append(notes, fmt.Sprintf("%s preemptions in all.", trimNum(s.Preemptions)))
		}
		st.bullets(b, notes)
	}
	if len(rt.Requests) > 0 {
		var parts []string
		for _, q := range rt.Requests {
			parts = append(parts, fmt.Sprintf("%s × %s %s %d", kvcapacity.Thousands(int(q.Count)), q.Method, q.Path, q.Status))
		}
		st.para(b, "Requests (access lines): "+strings.Join(parts, ", ")+".")
	}
}

// sampleIndexes picks at most k indexes of n, evenly, keeping the first
// and the last.
func sampleIndexes(n, k int) []int {
	var out []int
	if n <= k {
		for i := range n {
			out = append(out, i)
		}
		return out
	}
	for j := range k {
		out = append(out, j*(n-1)/(k-1))
	}
	return out
}

func writeDecay(b *bufio.Writer, r *Run, st style) {
	d := r.Runtime.Decay
	if d == nil {
		return
	}
	st.heading(b, "Decay: throughput while only decoding")
	rows := [][2]string{
		{"generation throughput", fmt.Sprintf("%s → %s tokens/s (%s)", f1(d.StartTPS), f1(d.EndTPS), signedPct(d.Change))},
	}
	if !math.IsNaN(d.StartKVPerc) {
		rows = append(rows, [2]string{"KV-cache usage", fmt.Sprintf("%s %% → %s %%", f1(d.StartKVPerc), f1(d.EndKVPerc))})
	}
	if d.ContextBasis != "" {
		rows = append(rows, [2]string{"context in flight", fmt.Sprintf("about %s → %s tokens", about(d.StartContext), about(d.EndContext))})
	}
	if !math.IsNaN(d.Streams) {
		rows = append(rows, [2]string{"running requests", trimNum(d.Streams)})
	}
	if f := d.Fit; f != nil {
		rows = append(rows, [2]string{"decode law", fmt.Sprintf("time per token per request ≈ %s ms + %s ns × context in flight (R² %s)", trimNum(f.InterceptMS), trimNum(f.SlopeNSPerToken), r2(f.R2))})
	}
	st.fields(b, rows)
	st.bullets(b, d.Explanation)
}

// writeDiagnoses writes what the figures imply, each with the lines it
// rests on.
func writeDiagnoses(b *bufio.Writer, r *Run, st style) {
	if len(r.Diagnoses) == 0 {
		return
	}
	st.heading(b, "Diagnosis")
	var items []string
	for _, d := range r.Diagnoses {
		var ev []string
		for _, e := range d.Evidence {
			at := "line " + kvcapacity.Thousands(int(e.Line))
			if e.Time != "" {
				at += " (" + e.Time + ")"
			}
			ev = append(ev, at+": "+e.What)
		}
		s := "[" + d.ID + "] " + d.Text
		if len(ev) > 0 {
			s += " Evidence: " + strings.TrimRight(strings.Join(ev, "; "), ".…") + "."
		}
		items = append(items, s)
	}
	st.bullets(b, items)
}
