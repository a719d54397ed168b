package kvcapacity

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Attention is one kind of attention layer of a model.
type Attention struct {
	// Layers is how many layers of the model are of this kind.
	Layers int
	// SlidingWindow is the window in tokens; 0 is full attention.
	SlidingWindow int
	// KVHeads is the number of KV heads of one layer on one GPU (the
	// model's count divided by the tensor-parallel size, at least 1).
	KVHeads int
	// HeadDim is the size of one head.
	HeadDim int
}

// Model is a model's attention layers as vLLM's KV cache sees them.
type Model struct {
	// Attention lists the kinds of layers. Kinds with the same spec are
	// merged; the order of first appearance is the order of the groups.
	Attention []Attention
	// DtypeBytes is the size of one KV element in bytes (2 for bf16, 1
	// for an fp8 KV cache).
	DtypeBytes int
}

// Settings are the vLLM settings the geometry depends on.
type Settings struct {
	BlockSize           int // tokens per block (--block-size, 16 on CUDA)
	MaxModelLen         int // --max-model-len, tokens
	MaxNumBatchedTokens int // the per-step token budget
}

// Group is one KV-cache group: layers of one kind that share block IDs.
type Group struct {
	SlidingWindow int   // tokens; 0 is full attention
	Layers        int   // real layers in the group; the last group of a kind may hold fewer (vLLM pads it)
	BlockSize     int   // tokens per block of this group
	PageBytes     int64 // bytes of one block in one layer (equal across groups)
	// MaxBlocks is the worst case one request of max_model_len holds in
	// this group: ⌈L / block⌉ for full attention, ⌈min(W − 1 + budget, L) /
	// block⌉ + 1 for a sliding window W (the window, one step's new
	// tokens, and one block for a window that does not start on a block
	// boundary).
	MaxBlocks int
}

// Geometry is the KV-cache layout vLLM derives for a model and settings,
// independent of how much memory there is.
type Geometry struct {
	Settings Settings
	Groups   []Group
	// PageBytes is the size of one layer's block, equal in every group.
	PageBytes int64
	// GroupSize is the number of layers per group: one pool block holds a
	// page in GroupSize layers (one layer of every group shares each
	// memory tensor).
	GroupSize int
	// MinBlockSize is the smallest block size over the groups; the printed
	// token count is in units of it.
	MinBlockSize int
	// BlocksPerRequest is the worst-case blocks one request of
	// max_model_len holds, summed over groups.
	BlocksPerRequest int
}

// New computes the geometry of m under s, as vLLM's V1 engine groups and
// sizes the KV cache.
func New(m Model, s Settings) (Geometry, error) {
	g := Geometry{Settings: s}
	if s.BlockSize < 1 || s.MaxModelLen < 1 || s.MaxNumBatchedTokens < 1 {
		return g, errors.New("kv cache: block size, max_model_len and max_num_batched_tokens must be positive")
	}
	if m.DtypeBytes < 1 {
		return g, errors.New("kv cache: the KV element size must be positive")
	}
	// Merge kinds with the same spec, keeping the order of appearance.
	var kinds []Attention
	for _, a := range m.Attention {
		if a.Layers < 0 || a.SlidingWindow < 0 || a.KVHeads < 1 || a.HeadDim < 1 {
			return g, fmt.Errorf("kv cache: attention kind %+v: layers and window must be >= 0, heads and head size positive", a)
		}
		if a.Layers == 0 {
			continue
		}
		merged := false
		for i := range kinds {
			k := &kinds[i]
			if k.SlidingWindow == a.SlidingWindow && k.KVHeads == a.KVHeads && k.HeadDim == a.HeadDim {
				k.Layers += a.Layers
				merged = true
				break
			}
		}
		if !merged {
			kinds = append(kinds, a)
		}
	}
	if len(kinds) == 0 {
		return g, errors.New("kv cache: the model has no attention layers")
	}
	// Page sizes: a kind whose page is smaller gets proportionally larger
	// blocks, so that every group's page has the largest size.
	pages := make([]int64, len(kinds))
	for i, k := range kinds {
		pages[i] = 2 * int64(s.BlockSize) * int64(k.KVHeads) * int64(k.HeadDim) * int64(m.DtypeBytes)
		g.PageBytes = max(g.PageBytes, pages[i])
	}
	blockSizes := make([]int, len(kinds))
	g.MinBlockSize = math.MaxInt
	for i := range kinds {
		if g.PageBytes%pages[i] != 0 {
			return g, fmt.Errorf("kv cache: page sizes %d and %d bytes are not multiples of each other", pages[i], g.PageBytes)
		}
		blockSizes[i] = s.BlockSize * int(g.PageBytes/pages[i])
		g.MinBlockSize = min(g.MinBlockSize, blockSizes[i])
	}
	// Group size: the smallest kind's layer count, or the largest's when
	// the two are within 25 % (padding the smaller kinds).
	lo, hi := math.MaxInt, 0
	for _, k := range kinds {
		lo, hi = min(lo, k.Layers), max(hi, k.Layers)
	}
	g.GroupSize = lo
	if float64(hi) < 1.25*float64(lo) {
		g.GroupSize = hi
	}
	for i, k := range kinds {
		for n := k.Layers; n > 0; n -= g.GroupSize {
			grp := Group{SlidingWindow: k.SlidingWindow, Layers: min(n, g.GroupSize), BlockSize: blockSizes[i], PageBytes: g.PageBytes}
			grp.MaxBlocks = grp.blocksAt(s.MaxModelLen, s.MaxNumBatchedTokens)
			g.BlocksPerRequest += grp.MaxBlocks
			g.Groups = append(g.Groups, grp)
		}
	}
	return g, nil
}

// blocksAt is the worst case a request of n tokens holds in the group
// while a step may add budget tokens.
func (grp Group) blocksAt(n, budget int) int {
	if grp.SlidingWindow == 0 {
		return ceilDiv(n, grp.BlockSize)
	}
	return ceilDiv(min(grp.SlidingWindow-1+budget, n), grp.BlockSize) + 1
}

// windowBlocks is what a decoding request holds in a sliding-window group
// once its context exceeds the window: the window's blocks plus the one
// being written.
func (grp Group) windowBlocks() int { return ceilDiv(grp.SlidingWindow-1, grp.BlockSize) + 1 }

// BlockBytes is the memory one pool block takes: one page in GroupSize
// layers.
func (g Geometry) BlockBytes() int64 { return g.PageBytes * int64(g.GroupSize) }

// Blocks is the number of pool blocks memBytes of KV-cache memory hold.
func (g Geometry) Blocks(memBytes int64) int {
	if memBytes <= 0 {
		return 0
	}
	return int(memBytes / g.BlockBytes())
}

// Tokens is the "GPU KV cache size" vLLM prints for a pool of numBlocks:
// the blocks divided among the groups, in units of the smallest block.
// It is the context one request could hold if each of its tokens needed
// a block in every group.
func (g Geometry) Tokens(numBlocks int) int {
	return numBlocks / len(g.Groups) * g.MinBlockSize
}

// BlocksFromTokens inverts Tokens: the smallest and largest pool sizes
// that print tokens.
func (g Geometry) BlocksFromTokens(tokens int) (lo, hi int) {
	lo = tokens / g.MinBlockSize * len(g.Groups)
	return lo, lo + len(g.Groups) - 1
}

// Concurrency is the "Maximum concurrency" vLLM prints for a pool of
// numBlocks: how many requests of max_model_len fit at once.
func (g Geometry) Concurrency(numBlocks int) float64 {
	return float64(numBlocks) / float64(g.BlocksPerRequest)
}

// Hybrid reports whether some group keeps only a sliding window.
func (g Geometry) Hybrid() bool {
	for _, grp := range g.Groups {
		if grp.SlidingWindow > 0 {
			return true
		}
	}
	return false
}

// blocksAt is what one decoding request with c tokens of context holds,
// summed over groups, as a continuous function of c: c / block in every
// full-attention group, and as much in every sliding-window group until
// the window is full.
func (g Geometry) blocksAt(c float64) float64 {
	var b float64
	for _, grp := range g.Groups {
		per := c / float64(grp.BlockSize)
		if grp.SlidingWindow > 0 {
			per = min(per, float64(grp.windowBlocks()))
		}
		b += per
	}
	return b
}

// contextAt inverts blocksAt: the context one request has when it holds
// b blocks. It returns NaN when no context holds that many (a model whose
// layers all have sliding windows holds a bounded number).
func (g Geometry) contextAt(b float64) float64 {
	if b <= 0 {
		return 0
	}
	hi := float64(g.Settings.MaxModelLen)
	for g.blocksAt(hi) < b {
		if hi > 1<<40 || g.blocksAt(2*hi) == g.blocksAt(hi) {
			return math.NaN()
		}
		hi *= 2
	}
	lo := 0.0
	for range 100 {
		mid := (lo + hi) / 2
		if g.blocksAt(mid) < b {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// ContextFromBlocks estimates the context in flight, in tokens summed
// over streams, from the blocks that many decoding streams hold (a
// KV-usage reading times the usable pool), assuming they hold equal
// shares: each stream holds its context in every full-attention group and
// up to a window in every sliding-window group. It returns NaN when the
// blocks cannot be explained by context (no full-attention layer).
func (g Geometry) ContextFromBlocks(used, streams float64) float64 {
	if streams <= 0 {
		return math.NaN()
	}
	return streams * g.contextAt(used/streams)
}

// MaxContext is the longest context each of streams concurrent requests
// can reach before a pool of numBlocks (one of them reserved) runs out:
// beyond it, vLLM preempts. It returns NaN when the pool never runs out
// (no full-attention layer and the windows fit).
func (g Geometry) MaxContext(numBlocks, streams int) float64 {
	if streams < 1 {
		return math.NaN()
	}
	return g.contextAt(float64(numBlocks-1) / float64(streams))
}

// Streams is how many decoding requests of context tokens each a pool of
// numBlocks (one reserved) holds at once.
func (g Geometry) Streams(numBlocks int, context float64) int {
	per := g.blocksAt(context)
	if per <= 0 {
		return 0
	}
	return int(float64(numBlocks-1) / per)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// Thousands formats n with comma separators, as vLLM prints token counts
// (Python's f"{n:,}"): 130960 → "130,960".
func Thousands(n int) string {
	s := strconv.Itoa(n)
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
