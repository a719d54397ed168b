package vllmlog

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Bounds that keep a parse's memory independent of the log's length.
const (
	// maxRuns is the number of server starts a report keeps; later
	// starts are counted in a warning.
	maxRuns = 64
	// maxPoints is the number of stats points kept per engine (see Series).
	maxPoints = 1024
	// maxFindings, maxRoutes and maxRequests bound the distinct warning
	// kinds, announced routes and access-line keys kept per run.
	maxFindings = 200
	maxRoutes   = 200
	maxRequests = 200
	maxValue    = 300 // characters kept of a printed value or message
)

// Options configure a parse.
type Options struct {
	// ModelConfig is the path of a Hugging Face config.json describing the
	// served model, for the KV check; empty uses the built-in descriptions
	// of the models servebench knows.
	ModelConfig string
}

// Parser reads vLLM log lines one at a time and keeps only the figures.
// The zero value is not usable; call NewParser. A Parser is not safe for
// concurrent use.
type Parser struct {
	model *modelDesc // from Options.ModelConfig
	rep   Report
	runs  []*run
	cur   *run
	file  string
	line  int64
	year  int
	last  time.Time
	cut   int   // lines cut at maxLineBytes
	extra int64 // server starts beyond maxRuns
	// onPoint, when set, is called with each stats line as it is read.
	onPoint func(r *Run, engine string, p Point)
}

// run is a Run with the parser's state for it.
type run struct {
	Run
	began, loadStart, initAt, ready time.Time
	substantial                     bool // a new start marker now means a new server
	sawArgs, sawBanner, sawCommand  bool
	cmd                             Config              // what the pasted command line asked for
	cfgTail                         string              // the cut end of an engine-config line the copy wrapped
	tb                              map[string]*tbState // open tracebacks, by process
	lastFinding                     map[string]string   // the finding the previous record of a process made
	errs                            map[string]Evidence // error kinds seen (see errorKinds)
	gen                             [2]genMark          // evidence of the V0 and V1 engines
	availByRank                     map[string]float64  // "Available KV cache memory" per worker rank
	gpuBlocksSeen                   bool
	negEv                           Evidence         // the line that left the KV cache no memory
	cmdOpen                         bool             // the pasted command continues on the next line
	firstRank                       string           // the first worker rank whose per-rank timings were read
	prevTB, prevErr                 bool             // the previous record was part of a traceback, or an error message (see wrapped)
	args                            *strings.Builder // a multi-line "non-default args: {" being collected
	argLines                        int
	availText                       string // the KV memory as printed, for its rounding
	findings                        map[string]*Finding
	findingOrder                    []string
	findingsDropped                 int64
	requests                        map[RouteCount]int64
	engines                         map[string]*Series
	printed                         map[string]string // figures printed once per start (see once)
	memoryNotes                     []string          // notes from memory lines, for KVCache.Notes
	conflicts                       []string
	seen                            int64 // lines recognised; a run with none is not reported
}

// NewParser returns a parser; it reads opts.ModelConfig if one is given.
func NewParser(opts Options) (*Parser, error) {
	p := &Parser{year: 2000, rep: Report{Schema: Schema}}
	if opts.ModelConfig != "" {
		d, err := loadModelConfig(opts.ModelConfig)
		if err != nil {
			return nil, err
		}
		p.model = d
	}
	return p, nil
}

// Parse reads one log from r; name labels it in the report.
func Parse(ctx context.Context, name string, r io.Reader, opts Options) (*Report, error) {
	p, err := NewParser(opts)
	if err != nil {
		return nil, err
	}
	if err := p.ReadFrom(ctx, name, r); err != nil {
		return nil, err
	}
	return p.Report(), nil
}

// ParseFiles reads every file in order into one report.
func ParseFiles(ctx context.Context, paths []string, opts Options) (*Report, error) {
	p, err := NewParser(opts)
	if err != nil {
		return nil, err
	}
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("logs: %w", err)
		}
		err = p.ReadFrom(ctx, path, f)
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	return p.Report(), nil
}

// ReadFrom reads every line of r as the log named name. A log's lines
// never belong to a server start of another log. It stops early, with the
// context's error, when ctx is done.
func (p *Parser) ReadFrom(ctx context.Context, name string, r io.Reader) error {
	p.StartFile(name)
	sc := bufio.NewScanner(r)
	var sl splitLines
	sc.Buffer(make([]byte, 64<<10), maxLineBytes+1)
	sc.Split(sl.split)
	for n := 0; sc.Scan(); n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		p.Line(sc.Text())
	}
	p.cut += sl.cut
	if err := sc.Err(); err != nil {
		return fmt.Errorf("logs: %s: %w", name, err)
	}
	return nil
}

// StartFile begins a new log: line numbers restart and the next line
// belongs to a new server start.
func (p *Parser) StartFile(name string) {
	p.file, p.line, p.cur = name, 0, nil
	p.year, p.last = 2000, time.Time{}
	p.rep.Files = append(p.rep.Files, name)
	p.rep.FileStats = append(p.rep.FileStats, FileStat{File: name})
}

// Line reads one line of the current log (without its newline). A line
// holding carriage returns (a progress bar redrawn in place) is read as
// the lines it drew.
func (p *Parser) Line(raw string) {
	p.line++
	p.rep.Lines++
	p.fs().Lines++
	if strings.IndexByte(raw, '\r') < 0 {
		p.segment(raw)
	} else {
		for _, seg := range strings.Split(raw, "\r") {
			p.segment(seg)
		}
	}
	if p.cur != nil {
		p.cur.LastLine = p.line
	}
}

func (p *Parser) segment(raw string) {
	s := clean(raw)
	if s == "" {
		return
	}
	if parts := splitRecords(s); parts != nil {
		for _, part := range parts {
			p.record(part)
		}
		return
	}
	p.record(s)
}

// record reads one log record (usually one line).
func (p *Parser) record(s string) {
	if r := p.cur; r != nil && r.args != nil {
		if s[0] == '\'' || s[0] == '"' || s[0] == '}' {
			p.collectArgs(r, s)
			p.fs().Understood++
			return
		}
		p.collectArgs(r, "}") // the dump ended without its brace
	}
	if p.command(s) {
		p.fs().Understood++
		return
	}
	rec := parseRecord(s, p.year)
	if !rec.at.IsZero() {
		if !p.last.IsZero() && rec.at.Before(p.last.Add(-180*24*time.Hour)) {
			p.year++ // the timestamps carry no year: a log that crosses New Year
			rec.at = stampTime(rec.stamp, p.year)
		}
		p.last = rec.at
	}
	if p.interpret(&rec) || (rec.level != "" && (rec.stamp != "" || rec.access)) {
		p.fs().Understood++
		return
	}
	p.notUnderstood(s)
}

// interpret applies the grammar of each line family to a record and
// reports whether one understood it.
func (p *Parser) interpret(rec *record) bool {
	if rec.msg == "" {
		return rec.proc != ""
	}
	if p.cur != nil {
		p.cur.noteGeneration(rec)
	}
	if rec.access {
		if method, path, status, ok := parseAccess(rec.msg); ok {
			p.request(method, path, status)
			return true
		}
	}
	if strings.Contains(rec.msg, "throughput:") {
		if engine, pt, ok := parseStats(rec.msg); ok {
			p.stats(rec, engine, pt)
			p.cur.noteGeneration(rec)
			return true
		}
	}
	r := p.current()
	if r.continuation(rec) {
		r.seen++
		return true
	}
	matched := p.match(rec)
	r = p.current()
	r.noteGeneration(rec)
	if r.began.IsZero() && !rec.at.IsZero() {
		r.began, r.Startup.Began = rec.at, rec.stamp
	}
	if !matched && strings.IndexByte(rec.msg, '=') > 0 && bareConfigRe.MatchString(rec.msg) {
		matched = applyEngineConfig(&r.Config, pyKeywords(rec.msg))
	}
	if r.wrapped(rec) {
		return true // the flags stay: the message may wrap again
	}
	r.prevTB, r.prevErr = false, false
	if p.traceback(r, rec) {
		r.seen++
		r.prevTB = true
		return true
	}
	if p.finding(r, rec) || matched {
		r.seen++
		return true
	}
	return false
}

// wrapped reads a line that a terminal wrapped off the end of a traceback
// line or an error message: a bare line, without prefix, level or time,
// beginning in the middle of a word.
func (r *run) wrapped(rec *record) bool {
	if !(r.prevTB || r.prevErr) || rec.proc != "" || rec.level != "" || rec.stamp != "" {
		return false
	}
	c, _ := utf8.DecodeRuneInString(rec.msg)
	if !(unicode.IsLower(c) || c == '_') {
		return false
	}
	if r.prevErr && len(r.FinalError) < maxValue {
		r.FinalError = cut(r.FinalError+rec.msg, maxValue)
	}

	return true
}

// match applies the first matcher whose key and pattern match.
func (p *Parser) match(rec *record) bool {
	for i := range matchers {
		m := &matchers[i]
		if !strings.Contains(rec.msg, m.key) {
			continue
		}
		if sub := m.re.FindStringSubmatch(rec.msg); sub != nil {
			m.fn(p, p.current(), sub, rec)
			return true
		}
	}
	return false
}

// fileStat is the reading of the current file.
func (p *Parser) fs() *FileStat {
	if len(p.rep.FileStats) == 0 {
		p.rep.FileStats = append(p.rep.FileStats, FileStat{File: p.file})
	}
	return &p.rep.FileStats[len(p.rep.FileStats)-1]
}

// notUnderstood counts a line no grammar recognised.
func (p *Parser) notUnderstood(s string) {
	fs := p.fs()
	if e := detectEngine(s); e != "" {
		p.foreign(fs, e, s)
		return
	}
	if !hasWord(s) {
		return // a rule, a fence, a progress-bar remnant
	}
	fs.NotUnderstood++
	if fs.FirstNotUnderstood == 0 {
		fs.FirstNotUnderstood = p.line
		fs.Example = cut(s, 160)
	}
}

// hasWord reports whether s holds a letter or a digit.
func hasWord(s string) bool {
	for _, c := range s {
		if unicode.IsLetter(c) || unicode.IsDigit(c) {
			return true
		}
	}
	return false
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// current returns the run the next line belongs to, creating one.
func (p *Parser) current() *run {
	if p.cur == nil {
		p.newRun()
	}
	return p.cur
}

func (p *Parser) newRun() {
	r := &run{printed: map[string]string{}, findings: map[string]*Finding{}, requests: map[RouteCount]int64{}, engines: map[string]*Series{},
		tb: map[string]*tbState{}, lastFinding: map[string]string{}, errs: map[string]Evidence{}}
	r.File, r.FirstLine, r.LastLine = p.file, p.line, p.line
	if len(p.runs) >= maxRuns {
		p.extra++
		// Keep reading into a scratch run, so lines still parse, but do
		// not keep it.
		p.cur = r
		return
	}
	p.runs = append(p.runs, r)
	p.cur = r
}

// Kinds of start marker: the lines that begin a server's output.
const (
	markCommand = iota // the pasted shell command
	markBanner         // "vLLM API server version"
	markArgs           // the argument dump
)

// startMarker is called by a line that begins a server's output: it
// starts a new run when the current one already shows a server's
// start-up (timestamped figures, or a marker of the same kind or a later
// one). A headless fragment (figures without any marker) followed by a
// marker timestamped earlier than its figures is one server pasted out of
// order: the marker joins it.
func (p *Parser) startMarker(kind int, rec *record) {
	r := p.cur
	if r == nil {
		p.newRun()
		p.cur.marked(kind)
		return
	}
	headless := !r.sawArgs && !r.sawBanner && !r.sawCommand
	if headless && rec != nil && !rec.at.IsZero() && !r.began.IsZero() && rec.at.Before(r.began) {
		r.began, r.Startup.Began = rec.at, rec.stamp
		r.marked(kind)
		return
	}
	split := r.substantial
	switch kind {
	case markCommand:
		split = split || r.sawCommand || r.sawBanner || r.sawArgs
	case markBanner:
		split = split || r.sawBanner || r.sawArgs
	case markArgs:
		split = split || r.sawArgs
	}
	if split {
		r.LastLine = p.line - 1
		p.newRun()
	}
	p.cur.marked(kind)
}

func (r *run) marked(kind int) {
	switch kind {
	case markCommand:
		r.sawCommand = true
	case markBanner:
		r.sawBanner = true
	case markArgs:
		r.sawArgs = true
	}
}

// loadPhase is called by a model-loading line: loading after the KV cache
// was sized is another server's start (pastes without banners or
// timestamps). It returns the run the line belongs to.
func (p *Parser) loadPhase(r *run) *run {
	if r.KV.Tokens > 0 || r.KV.GPUBlocks > 0 || r.gpuBlocksSeen || r.KV.Concurrency > 0 {
		r.LastLine = p.line - 1
		p.newRun()
	}
	return p.cur
}

// collectArgs gathers a "non-default args: {" dump spread over lines.
func (p *Parser) collectArgs(r *run, s string) {
	r.args.WriteString(" ")
	r.args.WriteString(s)
	r.argLines++
	if s == "}" || r.argLines > 64 || r.args.Len() > 64<<10 {
		text := r.args.String()
		r.args = nil
		applyArgs(&r.Config, pyDict(strings.TrimSpace(text)))
	}
}

var bareConfigRe = regexp.MustCompile(`^[a-z_]+=\S+(?:, [a-z_]+=\S+)*$`)

// parseAccess reads uvicorn's access line, `127.0.0.1:55440 - "GET
// /v1/models HTTP/1.1" 200 OK`.
func parseAccess(msg string) (method, path string, status int, ok bool) {
	q := strings.IndexByte(msg, '"')
	if q < 0 {
		return "", "", 0, false
	}
	req, rest, found := strings.Cut(msg[q+1:], "\"")
	f := strings.Fields(req)
	if !found || len(f) != 3 || !strings.HasPrefix(f[2], "HTTP/") {
		return "", "", 0, false
	}
	code := strings.Fields(rest)
	if len(code) == 0 || len(code[0]) != 3 || !isDigits(code[0]) {
		return "", "", 0, false
	}
	status, _ = strconv.Atoi(code[0])
	return f[0], f[1], status, true
}

// request counts one access line.
func (p *Parser) request(method, path string, status int) {
	r := p.current()
	r.seen++
	k := RouteCount{Method: method, Path: path, Status: status}
	if i := strings.IndexByte(k.Path, '?'); i >= 0 {
		k.Path = k.Path[:i]
	}
	if _, ok := r.requests[k]; !ok && len(r.requests) >= maxRequests {
		k = RouteCount{Method: "*", Path: "(other)", Status: 0}
	}
	r.requests[k]++
}

// stats adds one periodic stats line to its engine's series.
func (p *Parser) stats(rec *record, engine string, pt Point) {
	r := p.current()
	r.mark(rec)
	r.seen++
	if r.began.IsZero() && !rec.at.IsZero() {
		r.began = rec.at
		r.Startup.Began = rec.stamp
	}
	pt.Time, pt.Line = rec.stamp, p.line
	pt.OffsetS = math.NaN()
	if !rec.at.IsZero() {
		pt.OffsetS = rec.at.Sub(r.began).Seconds()
	}
	s := r.engines[engine]
	if s == nil {
		if len(r.engines) >= 64 {
			return
		}
		s = &Series{Engine: engine, Stride: 1}
		r.engines[engine] = s
		r.Runtime.Engines = append(r.Runtime.Engines, s)
	}
	s.add(pt)
	if p.onPoint != nil {
		p.onPoint(&r.Run, engine, pt)
	}
}

// parseStats reads vLLM's periodic line, "Engine 000: Avg prompt
// throughput: 0.0 tokens/s, Avg generation throughput: 544.8 tokens/s,
// Running: 6 reqs, Waiting: 0 reqs, GPU KV cache usage: 4.3%, Prefix cache
// hit rate: 81.6%", field by field, so that older, newer, aggregated and
// abridged forms all read. Fields it does not print stay NaN.
func parseStats(msg string) (engine string, p Point, ok bool) {
	nan := math.NaN()
	p = Point{PromptTPS: nan, GenerationTPS: nan, Running: nan, Waiting: nan, Preemptions: nan, Swapped: nan, KVUsagePerc: nan, PrefixHitPerc: nan}
	engine = "000"
	switch i := strings.Index(msg, "Engine "); {
	case strings.Contains(msg, "Engines Aggregated:"):
		engine = "aggregated"
		msg = msg[strings.Index(msg, "Engines Aggregated:")+len("Engines Aggregated:"):]
	case i >= 0:
		rest := msg[i+len("Engine "):]
		c := strings.IndexByte(rest, ':')
		if c < 1 || c > 8 || !isDigits(rest[:c]) {
			return "", p, false
		}
		engine, msg = rest[:c], rest[c+1:]
	}
	for _, field := range strings.Split(msg, ",") {
		colon := strings.LastIndexByte(field, ':')
		if colon < 0 {
			continue
		}
		label, value := field[:colon], field[colon+1:]
		v, err := strconv.ParseFloat(strings.TrimRight(strings.Fields(value + " x")[0], "%"), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		label = strings.TrimSpace(label)
		if i := strings.LastIndexAny(label, "]:"); i >= 0 { // what a source field without its bracket leaves
			label = strings.TrimSpace(label[i+1:])
		}
		switch label {
		case "Avg prompt throughput":
			p.PromptTPS = v
		case "Avg generation throughput":
			p.GenerationTPS = v
		case "Running":
			p.Running = v
		case "Waiting", "Pending":
			p.Waiting = v
		case "Preemptions":
			p.Preemptions = v
		case "Swapped":
			p.Swapped = v
		case "GPU KV cache usage", "KV cache usage":
			p.KVUsagePerc = v
		case "Prefix cache hit rate", "GPU prefix cache hit rate":
			p.PrefixHitPerc = v
		}
	}
	ok = !math.IsNaN(p.GenerationTPS) || !math.IsNaN(p.KVUsagePerc)
	return engine, p, ok
}

// add appends a point, halving the resolution when maxPoints is reached.
func (s *Series) add(p Point) {
	s.Lines++
	if s.Lines == 1 {
		s.First = p
	}
	s.Last = p
	s.MaxRunning = nanMax(s.MaxRunning, p.Running)
	s.MaxWaiting = nanMax(s.MaxWaiting, p.Waiting)
	s.MaxKVPerc = nanMax(s.MaxKVPerc, p.KVUsagePerc)
	if !math.IsNaN(p.Preemptions) {
		s.Preemptions += p.Preemptions
	}
	if s.Stride <= 1 {
		s.Stride = 1
		s.Points = append(s.Points, p)
	} else {
		if s.pending == nil {
			s.pending = &Point{}
			*s.pending = p
			s.pendingN = 1
		} else {
			*s.pending = mergePoints(*s.pending, p, s.pendingN, 1)
			s.pendingN++
		}
		if s.pendingN == s.Stride {
			s.Points = append(s.Points, *s.pending)
			s.pending, s.pendingN = nil, 0
		}
	}
	if len(s.Points) >= maxPoints {
		half := s.Points[:0]
		for i := 0; i+1 < len(s.Points); i += 2 {
			half = append(half, mergePoints(s.Points[i], s.Points[i+1], 1, 1))
		}
		s.Points = half
		s.Stride *= 2
	}
}

// mergePoints is the weighted mean of a (wa lines) and b (wb lines),
// timed at b.
func mergePoints(a, b Point, wa, wb int) Point {
	m := func(x, y float64) float64 { return (x*float64(wa) + y*float64(wb)) / float64(wa+wb) }
	out := Point{Line: b.Line, Time: b.Time, OffsetS: m(a.OffsetS, b.OffsetS), PromptTPS: m(a.PromptTPS, b.PromptTPS),
		GenerationTPS: m(a.GenerationTPS, b.GenerationTPS), Running: m(a.Running, b.Running), Waiting: m(a.Waiting, b.Waiting),
		KVUsagePerc: m(a.KVUsagePerc, b.KVUsagePerc), PrefixHitPerc: m(a.PrefixHitPerc, b.PrefixHitPerc)}
	out.Preemptions = a.Preemptions + b.Preemptions
	out.Swapped = max(a.Swapped, b.Swapped)
	return out
}

func nanMax(a, b float64) float64 {
	if math.IsNaN(b) {
		return a
	}
	return max(a, b)
}

// Report finishes the analysis of what has been read so far and returns
// it. It may be called again after more lines; each call recomputes the
// derived sections. The report shares the parser's state: lines read
// after the call change the runs it holds.
func (p *Parser) Report() *Report {
	rep := p.rep
	rep.Files = append([]string(nil), p.rep.Files...)
	rep.Runs = nil
	for _, r := range p.runs {
		if r.args != nil { // a dump cut short by the end of the log
			applyArgs(&r.Config, pyDict(strings.TrimSpace(r.args.String())))
		}
		if r.seen == 0 {
			continue
		}
		p.analyze(r)
		rep.Runs = append(rep.Runs, &r.Run)
	}
	if p.cut > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%d lines longer than %d bytes were cut there", p.cut, maxLineBytes))
	}
	rep.FileStats = append([]FileStat(nil), p.rep.FileStats...)
	rep.Warnings = append(rep.Warnings, readingWarnings(&rep)...)
	if p.extra > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%d more server starts after the first %d were read but not kept", p.extra, maxRuns))
	}
	return &rep
}
