package scenario

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/servebench/servebench/internal/tokenizer"
	"github.com/servebench/servebench/results"
)

// Prompt is the content of one request.
type Prompt struct {
	Text         string // the user message (chat) or the prompt (completions)
	InputTokens  int    // tokens in Text under the scenario's tokenizer (or the server's)
	OutputTokens int    // the max_tokens to ask for
}

// Prompts produces the prompt of every request of a scenario. The prompt of
// sequence number seq is a pure function of (scenario seed, seq): two runs
// of a scenario send the same prompts.
//
// Synthetic prompts have exactly their drawn token length under the
// scenario's tokenizer (with prompts.tokenizer: server, under the
// server's, whose words were calibrated through its /tokenize): they are
// runs of words that are one token each, taken from a corpus generated
// once from the seed. The first
// shared_prefix_tokens of every prompt are the same text. Distinct sequence
// numbers start at distinct corpus positions, so prompts do not share a
// prefix beyond the intended one (for the first 65,536 requests; then the
// positions repeat).
//
// Dataset prompts cycle through the dataset's usable entries in a seeded
// order that visits each entry once per pass; input lengths are counted
// with the tokenizer, once per entry. A shard's prompts (NewShardPrompts)
// cycle through its part of the entries only.
//
// At is cheap (no allocation for synthetic prompts without a shared prefix)
// and Prompts is safe for concurrent use.
type Prompts struct {
	tok      *tokenizer.Tokenizer // counts dataset prompts; nil with the server's tokenizer
	words    *tokenizer.Words     // synthetic prompts' single-token words
	overhead int
	seed     uint64
	in       *Dist        // nil for a dataset
	out      *Dist        // nil: the dataset's output lengths
	turns    *Dist        // a synthetic conversation's turns per session; nil: no conversation
	cache    *PrefixCache // shared prefixes at a target hit rate; nil: none

	// Synthetic prompts.
	prefix       string
	prefixTokens int
	corpus       string
	offs         []int32 // byte offset of each corpus word; one more for the end
	starts       uint64  // number of distinct start positions
	stride       uint64  // coprime with starts
	shift        uint64
	// Trace stages: each one's records by stage index, and a second
	// permutation of the start positions for their blocks' second halves.
	traces          map[int][]TraceRecord
	sessionTraces   map[int][]TraceSession // session stages replaying a sessions trace
	stride2, shift2 uint64

	// Dataset prompts.
	entries []entry
	shards  uint64 // sequence numbers are strided by the shard count: seq / shards counts the shard's own requests
}

// corpusStarts is the number of distinct start positions of synthetic
// prompts. The corpus holds corpusStarts-1 more words than the longest
// suffix; at ≈ 7 bytes a word that is 450 KB plus the longest prompt.
const corpusStarts = 1 << 16

// entry is one dataset prompt. Token counts are computed on first use (0:
// not yet); counting is deterministic, so racing first uses agree.
type entry struct {
	prompt  string
	answer  string // ShareGPT: the reply whose length is the output length
	output  atomic.Int32
	counted atomic.Int32

	// A conversation scenario's sessions: the system message and every
	// turn (the first is prompt and answer again), counted by countAll.
	system string
	turns  []turn

	// at is where the entry is in its file, for messages: the line (jsonl,
	// messages) or the element index (sharegpt).
	at int32
}

// move sets e, a zero entry, to the content of src (an entry holds
// atomics, so it is not copied whole).
func (e *entry) move(src *entry) {
	e.prompt, e.answer, e.system, e.turns, e.at = src.prompt, src.answer, src.system, src.turns, src.at
	e.output.Store(src.output.Load())
	e.counted.Store(src.counted.Load())
}

// longest is the length in bytes of the entry's longest text.
func (e *entry) longest() int {
	n := max(len(e.prompt), len(e.answer), len(e.system))
	for _, t := range e.turns {
		n = max(n, len(t.prompt), len(t.answer))
	}
	return n
}

// turn is one turn of a dataset conversation: the user's message and the
// answer it had in the dataset (whose length is the turn's output length
// unless output is set).
type turn struct {
	prompt, answer string
	in, output     int32
}

// ErrServerTokenizer is NewShardPrompts' refusal of a scenario whose
// prompts.tokenizer is server: its words come from the target (see
// NewServerPrompts).
var ErrServerTokenizer = errors.New("prompts.tokenizer server: the words come from the target's /tokenize (calibrate, then NewServerPrompts)")

// NewPrompts builds the prompts of a scenario whose defaults are applied:
// it loads the tokenizer and generates the synthetic corpus (a few
// milliseconds) or reads the dataset file and counts its prompts' tokens
// (seconds to minutes for a large one). It stops, with ctx's cause, when
// ctx ends.
func NewPrompts(ctx context.Context, sc *Scenario) (*Prompts, error) {
	return NewShardPrompts(ctx, sc, Shard{}, nil)
}

// NewShardPrompts builds the prompts of one shard of a sharded run (see
// Shard), whose sequence numbers are strided by the shard count. Synthetic
// prompts are those of NewPrompts: distinct sequence numbers give distinct
// prompts. A dataset is partitioned: the shard keeps the usable entries at
// positions i with i mod Count = Index and cycles through them alone; a
// dataset with fewer usable entries than shards is an error.
//
// A scenario whose prompts.tokenizer is server gets ErrServerTokenizer.
// progress, when not nil, is told how the reading and counting of a
// dataset go.
func NewShardPrompts(ctx context.Context, sc *Scenario, sh Shard, progress Progress) (*Prompts, error) {
	if sc.Prompts.Tokenizer == tokenizer.Server {
		return nil, ErrServerTokenizer
	}
	tok, err := tokenizer.Load(sc.TokenizerPath())
	if err != nil {
		return nil, fmt.Errorf("prompts: %w", err)
	}
	overhead := 0
	if sc.Target.API == results.APIChat && sc.Request.System != "" {
		overhead = tok.Count(sc.Request.System)
	}
	return newPrompts(ctx, sc, sh, tok, tok.Words(), overhead, progress)
}

// NewServerPrompts builds the synthetic prompts of a scenario whose
// prompts.tokenizer is server, from the words calibrated on the target
// (tokenizer.Calibrate with the server's /tokenize): each prompt has
// exactly its drawn length under the server's tokenizer. overhead is what
// the server was measured to count beyond a prompt's own tokens (its
// special tokens, chat template and system message); see Overhead.
func NewServerPrompts(ctx context.Context, sc *Scenario, sh Shard, words *tokenizer.Words, overhead int) (*Prompts, error) {
	if sc.Prompts.Dataset.Path != "" {
		return nil, fmt.Errorf("prompts: %w", ErrServerTokenizer)
	}
	return newPrompts(ctx, sc, sh, nil, words, overhead, nil)
}

func newPrompts(ctx context.Context, sc *Scenario, sh Shard, tok *tokenizer.Tokenizer, words *tokenizer.Words, overhead int, progress Progress) (*Prompts, error) {
	spec := &sc.Prompts
	var err error
	p := &Prompts{tok: tok, words: words, overhead: overhead, seed: spec.Seed, in: spec.InputTokens, out: spec.OutputTokens, shards: uint64(sh.n())}
	if c := spec.Conversation; c != nil {
		p.turns = c.Turns
	}
	if spec.Dataset.Path != "" {
		p.in = nil
		p.entries, err = readDataset(ctx, sc.DatasetPath(), spec.Dataset.Format, sc.readOpts(progress))
		if err != nil {
			return nil, err
		}
		if n := sh.n(); n > 1 {
			if len(p.entries) < n {
				return nil, &FieldError{File: sc.DatasetPath(), Msg: fmt.Sprintf(
					"%d usable prompts cannot be split over %d shards: each shard needs at least one", len(p.entries), n)}
			}
			// Keep this shard's part. The entries hold atomics: move them
			// one by one rather than copy the slice.
			part := make([]entry, 0, len(p.entries)/n+1)
			for i := sh.Index; i < len(p.entries); i += n {
				part = append(part, entry{})
				part[len(part)-1].move(&p.entries[i])
			}
			p.entries = part
		}
		p.starts = uint64(len(p.entries))
		p.stride, p.shift = permutation(p.starts, spec.Seed)
		if err := p.countAll(ctx, sc.DatasetPath(), spec.Dataset.Format, progress); err != nil {
			return nil, err
		}
		return p, nil
	}
	if p.in == nil || !p.in.valid() || (p.out != nil && !p.out.valid()) {
		return nil, fmt.Errorf("prompts: input_tokens and output_tokens must be valid distributions (apply Defaults and Validate first)")
	}
	run := p.in.highest() - spec.SharedPrefixTokens
	if blocks, err := p.readTraces(ctx, sc); err != nil {
		return nil, err
	} else if blocks {
		// Trace prompts, session messages and shared prefixes are runs of
		// up to half a block of corpus words.
		run = max(run, TraceBlockTokens/2)
	}
	if spec.SharedPrefixTokens > p.in.lowest() {
		return nil, fmt.Errorf("prompts: shared_prefix_tokens %d exceeds the smallest input length %d", spec.SharedPrefixTokens, p.in.lowest())
	}
	// The salt changes the words (corpus, shared prefix, where each prompt
	// starts in the corpus), never the lengths, which At draws from the
	// seed alone.
	textSeed := spec.Seed
	if spec.Salt != "" {
		h := fnv.New64a()
		h.Write([]byte(spec.Salt))
		textSeed = mix(spec.Seed ^ h.Sum64())
	}
	r := rand.New(rand.NewPCG(textSeed, 0xc0de_c0de))
	p.prefixTokens = spec.SharedPrefixTokens
	p.prefix = words.Text(p.prefixTokens, r.IntN)

	n := corpusStarts - 1 + run
	var b strings.Builder
	b.Grow(n * 8)
	p.offs = make([]int32, n+1)
	for i := range n {
		p.offs[i] = int32(b.Len())
		b.WriteString(words.Word(r.IntN(words.Len())))
	}
	p.offs[n] = int32(b.Len())
	p.corpus = b.String()
	p.starts = corpusStarts
	p.stride, p.shift = permutation(p.starts, textSeed)
	p.stride2, p.shift2 = permutation(p.starts, mix(textSeed+2))
	return p, nil
}

// readTraces reads the trace and sessions-trace files of sc's stages and
// notes prompts.prefix_cache; blocks reports whether any prompt is built
// of blocks of text (a trace's, a session's messages, shared prefixes).
func (p *Prompts) readTraces(ctx context.Context, sc *Scenario) (blocks bool, err error) {
	if c := sc.Prompts.PrefixCache; c != nil {
		p.cache, blocks = c, true
	}
	for i := range sc.Load.Stages {
		st := &sc.Load.Stages[i]
		blocks = blocks || st.Session != nil
		if path := sc.SessionTracePath(i); path != "" {
			ss, err := readSessionTrace(ctx, path, sessionTraceLimit(st.Session.Trace, i))
			if err != nil {
				return false, err
			}
			if p.sessionTraces == nil {
				p.sessionTraces = map[int][]TraceSession{}
			}
			p.sessionTraces[i] = ss
		}
		if path := sc.TracePath(i); path != "" {
			recs, err := readTrace(ctx, path, traceLimit(st.Trace, i))
			if err != nil {
				return false, err
			}
			if p.traces == nil {
				p.traces = map[int][]TraceRecord{}
			}
			p.traces[i], blocks = recs, true
		}
	}
	return blocks, nil
}

// permutation returns a stride coprime with n and a shift, so that
// (stride·i + shift) mod n visits every residue once per n steps, in an
// order that scatters neighbours.
func permutation(n, seed uint64) (stride, shift uint64) {
	if n <= 1 {
		return 1, 0
	}
	stride = mix(seed)%n | 1
	for range n {
		if gcd(stride, n) == 1 {
			break
		}
		stride = (stride + 1) % n
	}
	return stride, mix(seed+1) % n
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// At returns the prompt of sequence number seq.
func (p *Prompts) At(seq uint64) Prompt {
	var src rand.PCG
	src.Seed(p.seed, mix(seq))
	r := rand.New(&src)
	if p.entries != nil {
		// A shard numbers its requests Index, Index+Count, …: its own
		// request number walks its own part of the dataset.
		own := seq / p.shards
		return p.entry((p.stride*(own%p.starts)+p.shift)%p.starts, r)
	}
	pos := (p.stride*(seq%p.starts) + p.shift) % p.starts
	n := p.in.draw(r)
	out := 0 // embeddings: no output
	if p.out != nil {
		out = p.out.draw(r)
	}
	if p.cache != nil {
		shared := p.cache.PrefixTokens(n, p.overhead)
		text := p.Text(TextID(TextPrefix, seq%uint64(p.cache.Prefixes)), shared) + p.corpus[p.offs[pos]:p.offs[pos+uint64(n-shared)]]
		return Prompt{Text: text, InputTokens: n, OutputTokens: out}
	}
	text := p.corpus[p.offs[pos]:p.offs[pos+uint64(n-p.prefixTokens)]]
	if p.prefixTokens > 0 {
		text = p.prefix + text
	}
	return Prompt{Text: text, InputTokens: n, OutputTokens: out}
}

func (p *Prompts) entry(i uint64, r *rand.Rand) Prompt {
	e := &p.entries[i]
	in := int(e.counted.Load())
	if in == 0 {
		in = p.tok.Count(e.prompt)
		e.counted.Store(int32(in))
	}
	var out int
	if p.out != nil {
		out = p.out.draw(r)
	} else if out = int(e.output.Load()); out == 0 {
		out = max(p.tok.Count(e.answer), 1)
		e.output.Store(int32(out))
	}
	return Prompt{Text: e.prompt, InputTokens: in, OutputTokens: out}
}

// countAll tokenizes every dataset entry now, on every core, so that no
// request pays for it on its way out (a 200,000-character prompt took 58
// ms to count). A text over MaxPromptTokens is refused, as a synthetic
// prompt would be; the first found is the error (name and format place
// it). The workers stop when ctx ends; progress, when not nil, is told the
// entries counted a few times a second.
func (p *Prompts) countAll(ctx context.Context, name, format string, progress Progress) error {
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	var done atomic.Int64
	var tooLong atomic.Pointer[FieldError]
	stop := func() bool { return ctx.Err() != nil || tooLong.Load() != nil }
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(p.entries) && !stop(); i += workers {
				if fe := p.count(&p.entries[i]); fe != nil {
					fe.File = name
					if format == FormatShareGPT {
						fe.Field = fmt.Sprintf("[%d].conversations", p.entries[i].at)
					} else {
						fe.Line = int(p.entries[i].at)
					}
					tooLong.CompareAndSwap(nil, fe)
				}
				done.Add(1)
			}
		})
	}
	if progress != nil {
		progress("count tokens", 0, int64(len(p.entries)), "prompts")
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case <-tick.C:
			if progress != nil {
				progress("count tokens", done.Load(), int64(len(p.entries)), "prompts")
			}
		case <-finished:
			waiting = false
		}
	}
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("%s: counting tokens stopped after %d of %d prompts: %w", name, done.Load(), len(p.entries), context.Cause(ctx))
	case tooLong.Load() != nil:
		return tooLong.Load()
	}
	return nil
}

// count counts entry e's texts, and returns the problem of one over
// MaxPromptTokens (File and position unset).
func (p *Prompts) count(e *entry) *FieldError {
	check := func(what string, n int) *FieldError {
		if n > MaxPromptTokens {
			return &FieldError{Msg: fmt.Sprintf("%s of %d tokens is over the %d-token cap on a prompt (synthetic prompts have it too)", what, n, MaxPromptTokens)}
		}
		return nil
	}
	if e.counted.Load() == 0 {
		e.counted.Store(int32(min(p.tok.Count(e.prompt), math.MaxInt32)))
	}
	if fe := check("the prompt", int(e.counted.Load())); fe != nil {
		return fe
	}
	if p.out == nil && e.output.Load() == 0 {
		e.output.Store(int32(min(max(p.tok.Count(e.answer), 1), math.MaxInt32)))
		if fe := check("the reply", int(e.output.Load())); fe != nil {
			return fe
		}
	}
	for k := range e.turns {
		t := &e.turns[k]
		t.in = int32(min(p.tok.Count(t.prompt), math.MaxInt32))
		if fe := check(fmt.Sprintf("turn %d's message", k+1), int(t.in)); fe != nil {
			return fe
		}
		if p.out == nil && t.output == 0 {
			t.output = int32(min(max(p.tok.Count(t.answer), 1), math.MaxInt32))
			if fe := check(fmt.Sprintf("turn %d's reply", k+1), int(t.output)); fe != nil {
				return fe
			}
		}
	}
	return nil
}

// Len returns the number of distinct prompts before the sequence repeats:
// the number of usable dataset entries, or of synthetic start positions.
func (p *Prompts) Len() int { return int(p.starts) }

// Tokenizer returns the tokenizer prompts are counted with; nil when the
// words were calibrated on the server (NewServerPrompts).
func (p *Prompts) Tokenizer() *tokenizer.Tokenizer { return p.tok }

// Overhead is the number of tokens a server is expected to count beyond a
// prompt's InputTokens: the system message (chat) under the scenario's
// tokenizer, or, with the server's tokenizer, what the server was
// measured to add (special tokens, the chat template, the system message).
// A local tokenizer knows nothing of a real server's template, so a
// difference of a few tokens per request remains against such a server.
func (p *Prompts) Overhead() int { return p.overhead }

// draw returns a length from d: rounded, clamped to d's bounds and ≥ 1.
func (d *Dist) draw(r *rand.Rand) int {
	switch d.Dist {
	case DistUniform:
		return d.Min + r.IntN(d.Max-d.Min+1)
	case DistNormal:
		x := math.Round(d.Mean + d.Stddev*r.NormFloat64())
		return int(max(float64(max(d.Min, 1)), min(float64(d.Max), x)))
	default:
		return max(d.Value, 1)
	}
}

// String describes the distribution in a few words: "128",
// "uniform 128–384", "normal mean 512 sd 64 in 256–704".
func (d *Dist) String() string {
	switch {
	case d == nil:
		return "none"
	case d.Dist == DistUniform:
		return fmt.Sprintf("uniform %d–%d", d.Min, d.Max)
	case d.Dist == DistNormal:
		return fmt.Sprintf("normal mean %g sd %g in %d–%d", d.Mean, d.Stddev, d.Min, d.Max)
	}
	return strconv.Itoa(d.Value)
}

// Shapes returns a prompt of every length shape of the synthetic prompts:
// the shortest and longest prompt lengths the distribution draws and every
// power of two between them, each with the longest output length, each
// text its own (not the measured requests' texts, so that no prefix they
// share is cached by it). Nil for a dataset's prompts.
func (p *Prompts) Shapes() []Prompt {
	if p.entries != nil || p.in == nil {
		return nil
	}
	lo, hi := p.in.bounds()
	lengths := []int{lo}
	for n := 1; n < hi; n *= 2 {
		if n > lo {
			lengths = append(lengths, n)
		}
	}
	if hi > lo {
		lengths = append(lengths, hi)
	}
	out := 0
	if p.out != nil {
		_, out = p.out.bounds()
	}
	shapes := make([]Prompt, 0, len(lengths))
	for i, n := range lengths {
		// Start positions from the end of the corpus's walk: the measured
		// requests' first 65,536 start elsewhere.
		pos := (p.stride*((p.starts-1-uint64(i))%p.starts) + p.shift) % p.starts
		n = max(n, p.prefixTokens+1)
		text := p.corpus[p.offs[pos]:p.offs[pos+uint64(n-p.prefixTokens)]]
		if p.prefixTokens > 0 {
			text = p.prefix + text
		}
		shapes = append(shapes, Prompt{Text: text, InputTokens: n, OutputTokens: out})
	}
	return shapes
}

// bounds are the shortest and longest values d draws.
func (d *Dist) bounds() (lo, hi int) {
	switch d.Dist {
	case DistUniform, DistNormal:
		return max(d.Min, 1), max(d.Max, 1)
	}
	v := max(d.Value, 1)
	return v, v
}
