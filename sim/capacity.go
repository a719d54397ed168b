package sim

import (
	"fmt"
	"strconv"
)

// KVGroup is one KV-cache group: a set of layers with the same attention
// spec. Every group draws its blocks from one shared pool.
type KVGroup struct {
	// SlidingWindow is the group's window in tokens; 0 means full attention.
	SlidingWindow int
	// Layers is the number of layers in the group.
	Layers int
}

// Capacity is the KV-cache geometry vLLM derives at start-up from the
// available memory and the model's layers.
type Capacity struct {
	// Groups are the KV-cache groups (one for a uniform model; one per
	// attention type, or more, for a hybrid model such as gpt-oss).
	Groups []KVGroup
	// PageBytes is the size of one layer's block in bytes:
	// 2 × block_size × num_kv_heads × head_dim × dtype bytes.
	PageBytes int64
	// GroupSize is the number of layers per group; one pool block holds a
	// page for one layer of every group.
	GroupSize int
	// NumBlocks is the number of blocks in the shared pool (block 0 is the
	// reserved null block, so NumBlocks−1 are usable).
	NumBlocks int
	// Tokens is what vLLM logs as "GPU KV cache size: N tokens":
	// NumBlocks / len(Groups) × block_size.
	Tokens int
	// BlocksPerRequest is the worst-case blocks one request at
	// max_model_len needs, summed over groups.
	BlocksPerRequest int
	// MaxConcurrency is NumBlocks / BlocksPerRequest, what vLLM logs as
	// "Maximum concurrency for L tokens per request".
	MaxConcurrency float64
}

// Capacity computes the KV-cache geometry the way vLLM's V1 engine does
// (vllm/v1/core/kv_cache_utils.py): page size per layer, layers grouped by
// attention type into groups of equal size, blocks = memory / page /
// group size, and the worst case per request summed over groups (a
// sliding-window group needs ⌈min(W − 1 + max_num_batched_tokens,
// max_model_len) / block_size⌉ + 1 blocks).
func (c *Config) Capacity() (Capacity, error) {
	var k Capacity
	if c.BlockSize < 1 || c.NumLayers < 1 {
		return k, fmt.Errorf("kv cache: block_size and num_layers must be positive")
	}
	k.PageBytes = 2 * int64(c.BlockSize) * int64(c.NumKVHeads) * int64(c.HeadDim) * int64(c.KVDtypeBytes)
	full := c.NumLayers - c.SlidingWindowLayers
	sliding := c.SlidingWindowLayers
	switch {
	case sliding == 0:
		k.GroupSize = full
		k.Groups = []KVGroup{{Layers: full}}
	case full == 0:
		k.GroupSize = sliding
		k.Groups = []KVGroup{{SlidingWindow: c.SlidingWindow, Layers: sliding}}
	default:
		// vLLM groups every attention type into groups of the smallest
		// type's size (or of the largest when the two are within 25 %,
		// padding the smaller).
		lo, hi := min(full, sliding), max(full, sliding)
		k.GroupSize = lo
		if float64(hi) < 1.25*float64(lo) {
			k.GroupSize = hi
		}
		split := func(n, window int) {
			for n > 0 {
				l := min(n, k.GroupSize)
				k.Groups = append(k.Groups, KVGroup{SlidingWindow: window, Layers: l})
				n -= l
			}
		}
		split(full, 0)
		split(sliding, c.SlidingWindow)
	}
	if c.NumGPUBlocksOverride > 0 {
		k.NumBlocks = c.NumGPUBlocksOverride
	} else {
		k.NumBlocks = int(c.KVCacheMemoryBytes / k.PageBytes / int64(k.GroupSize))
	}
	if k.NumBlocks < 2 {
		return k, fmt.Errorf("kv cache: %d bytes hold %d blocks; need at least 2 (raise kv_cache_memory_bytes)", c.KVCacheMemoryBytes, k.NumBlocks)
	}
	k.Tokens = k.NumBlocks / len(k.Groups) * c.BlockSize
	for _, g := range k.Groups {
		k.BlocksPerRequest += g.maxBlocks(c.MaxModelLen, c.MaxNumBatchedTokens, c.BlockSize)
	}
	k.MaxConcurrency = float64(k.NumBlocks) / float64(k.BlocksPerRequest)
	return k, nil
}

// maxBlocks is the worst-case number of blocks one request of maxLen
// tokens holds in this group.
func (g KVGroup) maxBlocks(maxLen, budget, blockSize int) int {
	if g.SlidingWindow == 0 {
		return ceilDiv(maxLen, blockSize)
	}
	return ceilDiv(min(g.SlidingWindow-1+budget, maxLen), blockSize) + 1
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// StartupLines returns the messages of vLLM's three KV-capacity log lines,
// in order, as vLLM prints them (without the log-record prefix):
// "Available KV cache memory: 8.99 GiB", "GPU KV cache size: 130,960
// tokens", "Maximum concurrency for 98,304 tokens per request: 2.46x".
func (k Capacity) StartupLines(c Config) []string {
	mem := float64(c.KVCacheMemoryBytes)
	if c.NumGPUBlocksOverride > 0 {
		mem = float64(int64(k.NumBlocks) * k.PageBytes * int64(k.GroupSize))
	}
	return []string{
		fmt.Sprintf("Available KV cache memory: %.2f GiB", mem/(1<<30)),
		fmt.Sprintf("GPU KV cache size: %s tokens", thousands(k.Tokens)),
		fmt.Sprintf("Maximum concurrency for %s tokens per request: %.2fx", thousands(c.MaxModelLen), k.MaxConcurrency),
	}
}

// thousands formats n with comma separators, as Python's f"{n:,}".
func thousands(n int) string {
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
