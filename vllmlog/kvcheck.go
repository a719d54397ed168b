package vllmlog

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/servebench/servebench/internal/kvcapacity"
)

// defaultBudgets are vLLM's API-server defaults for max_num_batched_tokens:
// 2048 on GPUs under 70 GiB and on A100, 8192 on larger GPUs (and 16384 for
// the offline LLM class).
var defaultBudgets = []int{2048, 8192, 16384}

const gib = 1 << 30

// kvBytes is the size of one KV element for the run's settings, or 0.
func kvBytes(c *Config) (int, string) {
	switch kv := strings.ToLower(c.KVCacheDtype); {
	case strings.HasPrefix(kv, "fp8"):
		return 1, "fp8 KV cache"
	case kv == "" || kv == "auto":
		switch d := strings.ToLower(strings.TrimPrefix(c.Dtype, "torch.")); d {
		case "bfloat16", "float16", "half", "":
			if d == "" {
				d = "bfloat16"
			}
			return 2, d
		case "float32", "float":
			return 4, "float32"
		}
	case kv == "bfloat16" || kv == "float16":
		return 2, kv
	}
	return 0, c.KVCacheDtype
}

// layout is the KV-cache layout a check settled on: the model as the
// cache sees it (heads per GPU, KV element size) and its geometry.
type layout struct {
	model kvcapacity.Model
	geom  kvcapacity.Geometry
}

// candidate is the KV check under one assumed budget.
type candidate struct {
	budget int
	layout
	check Check
}

// kvCheck recomputes the printed KV-cache figures from the model's layers.
// With a model description from --model-config it uses that; otherwise a
// built-in description named by the model path, or, failing that, the
// built-in descriptions of the run's architecture (keeping one that
// reproduces the log). When the log does not say the step budget, the
// budgets vLLM defaults to are tried.
func (p *Parser) kvCheck(r *run) (*Check, *layout) {
	c, kv := &r.Config, &r.KV
	if kv.Tokens == 0 || kv.Concurrency == 0 || kv.AvailableGiB <= 0 {
		return nil, nil
	}
	maxLen := kv.ConcurrencyLen
	if maxLen == 0 {
		maxLen = c.MaxModelLen
	}
	if kv.AvailableGiB > 1<<20 || kv.Tokens > 1<<40 || maxLen < 1 || maxLen > 1<<31 || c.BlockSize > 1<<16 || c.MaxNumBatchedTokens > 1<<31 {
		return &Check{Skipped: "the printed figures are out of any real range"}, nil
	}
	var descs []*modelDesc
	source := "built-in description"
	switch d, byArch := findModel([]string{c.Model, c.ServedModelName}, c.Architecture); {
	case p.model != nil:
		descs, source = []*modelDesc{p.model}, "--model-config"
	case d != nil:
		descs = []*modelDesc{d}
	case len(byArch) > 0:
		// No description has the model's name: one of its architecture
		// is used only if it reproduces the printed figures (below).
		descs, source = byArch, "built-in description of the same architecture ("+c.Architecture+")"
	default:
		what := c.Model
		if what == "" {
			what = "this model"
		}
		return &Check{Skipped: fmt.Sprintf("servebench has no layer description of %s (%s); pass its config.json with --model-config", what, orUnknown(c.Architecture))}, nil
	}
	if c.PipelineParallel > 1 {
		return &Check{Model: descs[0].name, Source: source, Skipped: "pipeline parallelism splits the layers over GPUs, which the check does not model"}, nil
	}
	if c.ContextParallel > 1 {
		return &Check{Model: descs[0].name, Source: source, Skipped: "decode context parallelism multiplies the printed token count, which the check does not model"}, nil
	}
	bytes, dtypeName := kvBytes(c)
	if bytes == 0 {
		return &Check{Model: descs[0].name, Source: source, Skipped: "the KV-cache dtype " + dtypeName + " is not modelled"}, nil
	}
	block := c.BlockSize
	if block == 0 {
		block = 16
	}
	budgets, budgetKnown := []int{c.MaxNumBatchedTokens}, true
	if c.MaxNumBatchedTokens == 0 {
		budgets, budgetKnown = defaultBudgets, false
	}
	tp := max(1, c.TensorParallel)
	var best *candidate
	var bestDesc *modelDesc
	for _, d := range descs {
		m := kvcapacity.Model{DtypeBytes: bytes}
		for _, a := range d.layers {
			a.KVHeads = max(1, a.KVHeads/tp)
			m.Attention = append(m.Attention, a)
		}
		for _, b := range budgets {
			g, err := kvcapacity.New(m, kvcapacity.Settings{BlockSize: block, MaxModelLen: maxLen, MaxNumBatchedTokens: b})
			if err != nil {
				continue
			}
			cand := &candidate{budget: b, layout: layout{m, g}, check: evaluate(g, r)}
			if best == nil || (!best.check.Agrees() && cand.check.Agrees()) {
				best, bestDesc = cand, d
			}
		}
	}
	if best == nil {
		return &Check{Model: descs[0].name, Source: source, Skipped: "the model's layers give no valid KV-cache layout"}, nil
	}
	ck := best.check
	if strings.HasPrefix(source, "built-in description of the same architecture") && !ck.Agrees() {
		what := c.modelName()
		if what == "" {
			what = "the model"
		}
		return &Check{Skipped: fmt.Sprintf("servebench has no layer description of %s, and none of its built-in descriptions of %s reproduces the printed figures; pass the model's config.json with --model-config", what, c.Architecture)}, nil
	}
	ck.Model, ck.Source, ck.KVBytes = bestDesc.name, source, bytes
	if len(descs) > 1 {
		ck.Source = source + ", the one that reproduces the log"
	}
	if !budgetKnown && best.geom.Hybrid() {
		if ck.Agrees() {
			c.MaxNumBatchedTokens = best.budget
			c.BatchedTokensSource = fmt.Sprintf("not printed; %s reproduces the printed concurrency (vLLM's default %s)", kvcapacity.Thousands(best.budget), budgetDefaultWhere(best.budget))
		}
	}
	if !best.geom.Hybrid() && !budgetKnown {
		ck.Budget = 0 // irrelevant without sliding windows
	}
	ck.Explanation = explainCheck(&ck, best.geom, bestDesc, dtypeName, tp, r)
	ck.lay = &best.layout
	return &ck, &best.layout
}

func budgetDefaultWhere(b int) string {
	switch b {
	case 2048:
		return "on GPUs under 70 GiB and on A100"
	case 8192:
		return "on GPUs of 70 GiB or more other than A100"
	}
	return "for offline inference"
}

func orUnknown(s string) string {
	if s == "" {
		return "architecture unknown"
	}
	return s
}

// evaluate compares the geometry's predictions with the printed figures.
func evaluate(g kvcapacity.Geometry, r *run) Check {
	kv := &r.KV
	ck := Check{BlockSize: g.Settings.BlockSize, MaxModelLen: g.Settings.MaxModelLen, Budget: g.Settings.MaxNumBatchedTokens,
		PageBytes: g.PageBytes, BlockBytes: g.BlockBytes(), BlocksPerRequest: g.BlocksPerRequest}
	for _, grp := range g.Groups {
		ck.Groups = append(ck.Groups, CheckGroup{Layers: grp.Layers, SlidingWindow: grp.SlidingWindow, BlockSize: grp.BlockSize, MaxBlocks: grp.MaxBlocks})
	}
	half := roundingHalf(r.availText)
	ck.BlocksMin = g.Blocks(int64((kv.AvailableGiB - half) * gib))
	ck.BlocksMax = g.Blocks(int64((kv.AvailableGiB + half) * gib))
	ck.TokensMin, ck.TokensMax = g.Tokens(ck.BlocksMin), g.Tokens(ck.BlocksMax)
	ck.TokensAgree = kv.Tokens >= ck.TokensMin && kv.Tokens <= ck.TokensMax
	lo, hi := g.BlocksFromTokens(kv.Tokens)
	ck.Blocks = lo
	ck.Concurrency = math.Round(g.Concurrency(lo)*100) / 100
	// Any pool that prints the logged token count may be the real one.
	printed := strconv.FormatFloat(kv.Concurrency, 'f', 2, 64)
	for nb := lo; nb <= hi; nb++ {
		if strconv.FormatFloat(g.Concurrency(nb), 'f', 2, 64) == printed {
			ck.Blocks, ck.Concurrency, ck.ConcurrencyAgree = nb, kv.Concurrency, true
			break
		}
	}
	if g.Settings.MaxModelLen > 0 {
		ck.NaiveConcurrency = math.Round(float64(kv.Tokens)/float64(g.Settings.MaxModelLen)*100) / 100
	}
	return ck
}

// roundingHalf is half a unit of the last digit vLLM printed: "8.99" is
// 8.985 to 8.995 GiB; "21.5" is vLLM's round(x, 2) and so also ±0.005.
func roundingHalf(printed string) float64 {
	decimals := 0
	if i := strings.IndexByte(printed, '.'); i >= 0 {
		decimals = len(printed) - i - 1
	}
	return 0.5 * math.Pow(10, -float64(max(decimals, 2)))
}

// explainCheck states the arithmetic in sentences.
func explainCheck(ck *Check, g kvcapacity.Geometry, d *modelDesc, dtypeName string, tp int, r *run) []string {
	kv := &r.KV
	th := kvcapacity.Thousands
	var out []string
	out = append(out, fmt.Sprintf("%s: %s.", d.name, d.summary))
	var kinds []string
	for _, a := range d.layers {
		heads := max(1, a.KVHeads/tp)
		page := 2 * int64(g.Settings.BlockSize) * int64(heads) * int64(a.HeadDim) * int64(ck.KVBytes)
		kinds = append(kinds, fmt.Sprintf("2 (K and V) × %d tokens × %d heads × %d dims × %d bytes = %s bytes", g.Settings.BlockSize, heads, a.HeadDim, ck.KVBytes, th(int(page))))
	}
	if len(kinds) == 1 || kinds[0] == kinds[len(kinds)-1] {
		kinds = kinds[:1]
	}
	tpNote := ""
	if tp > 1 {
		tpNote = fmt.Sprintf(" (KV heads divided by tensor parallelism %d)", tp)
	}
	out = append(out, fmt.Sprintf("One %d-token block of one layer holds %s%s, in %s.", g.Settings.BlockSize, strings.Join(kinds, "; "), tpNote, dtypeName))
	if g.MinBlockSize != maxBlockSize(g) {
		out = append(out, fmt.Sprintf("vLLM makes every layer's page the same size, %s bytes, by giving the layers with smaller pages longer blocks (%d tokens).", th(int(g.PageBytes)), maxBlockSize(g)))
	}
	full, sliding := 0, 0
	for _, grp := range g.Groups {
		if grp.SlidingWindow > 0 {
			sliding++
		} else {
			full++
		}
	}
	groupText := fmt.Sprintf("%d group", len(g.Groups))
	if len(g.Groups) > 1 {
		groupText = fmt.Sprintf("%d groups (%d full-attention, %d sliding-window)", len(g.Groups), full, sliding)
	}
	out = append(out, fmt.Sprintf("vLLM puts layers of one kind into groups of %d layers, %s; one block of the shared pool is a page in one layer of every group, %d × %s = %s bytes.",
		g.GroupSize, groupText, g.GroupSize, th(int(g.PageBytes)), th(int(g.BlockBytes()))))
	blocksText := fmt.Sprintf("%s–%s", th(ck.BlocksMin), th(ck.BlocksMax))
	if ck.BlocksMin == ck.BlocksMax {
		blocksText = th(ck.BlocksMin)
	}
	out = append(out, fmt.Sprintf("%s GiB of KV-cache memory ÷ %s bytes = %s blocks (within the rounding of the printed GiB).",
		r.availText, th(int(g.BlockBytes())), blocksText))
	tokensText := fmt.Sprintf("%s to %s", th(ck.TokensMin), th(ck.TokensMax))
	if ck.TokensMin == ck.TokensMax {
		tokensText = th(ck.TokensMin)
	}
	out = append(out, fmt.Sprintf("GPU KV cache size = blocks ÷ %s × %d tokens = %s tokens; the log printed %s (%s), which means a pool of %s blocks.",
		map[bool]string{true: "1 group", false: fmt.Sprintf("%d groups", len(g.Groups))}[len(g.Groups) == 1], g.MinBlockSize, tokensText, th(kv.Tokens), agreeWord(ck.TokensAgree), th(ck.Blocks)))
	var per []string
	for _, grp := range g.Groups {
		if grp.SlidingWindow == 0 {
			per = append(per, fmt.Sprintf("⌈%s / %d⌉ = %s in a full-attention group", th(g.Settings.MaxModelLen), grp.BlockSize, th(grp.MaxBlocks)))
		} else {
			per = append(per, fmt.Sprintf("⌈(%s − 1 + %s) / %d⌉ + 1 = %s in a sliding-window group", th(grp.SlidingWindow), th(g.Settings.MaxNumBatchedTokens), grp.BlockSize, th(grp.MaxBlocks)))
		}
	}
	per = dedupe(per)
	if g.Hybrid() {
		out = append(out, fmt.Sprintf("One request of %s tokens needs %s blocks in all: %s (a sliding-window layer keeps only its window plus one step's max_num_batched_tokens, %s, plus one block).",
			th(g.Settings.MaxModelLen), th(g.BlocksPerRequest), strings.Join(per, ", "), th(g.Settings.MaxNumBatchedTokens)))
	} else {
		out = append(out, fmt.Sprintf("One request of %s tokens needs %s.", th(g.Settings.MaxModelLen), strings.Join(per, "")))
	}
	out = append(out, fmt.Sprintf("Maximum concurrency = %s ÷ %s = %s×; the log printed %s× (%s).",
		th(ck.Blocks), th(g.BlocksPerRequest), strconv.FormatFloat(ck.Concurrency, 'f', 2, 64), strconv.FormatFloat(kv.Concurrency, 'f', 2, 64), agreeWord(ck.ConcurrencyAgree)))
	if g.Hybrid() {
		out = append(out, fmt.Sprintf("Dividing the printed tokens by max_model_len, %s ÷ %s = %.2f, would assume every layer keeps the whole context; the sliding-window layers keep only their window, so the pool fits %.2f requests of full length, not %.2f.",
			th(kv.Tokens), th(g.Settings.MaxModelLen), ck.NaiveConcurrency, kv.Concurrency, ck.NaiveConcurrency))
	} else {
		out = append(out, fmt.Sprintf("With every layer keeping the whole context this is simply the printed tokens ÷ max_model_len, %s ÷ %s.", th(kv.Tokens), th(g.Settings.MaxModelLen)))
	}
	return out
}

func maxBlockSize(g kvcapacity.Geometry) int {
	m := 0
	for _, grp := range g.Groups {
		m = max(m, grp.BlockSize)
	}
	return m
}

func agreeWord(ok bool) string {
	if ok {
		return "agrees"
	}
	return "DOES NOT AGREE"
}

func dedupe(xs []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
