package sim

import (
	"fmt"

	"github.com/servebench/servebench/internal/kvcapacity"
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

// Capacity computes the KV-cache geometry the way vLLM's V1 engine does,
// with the arithmetic shared with the log reader (internal/kvcapacity):
// page size per layer, layers grouped by attention type into groups of
// equal size, blocks = memory / page / group size, and the worst case per
// request summed over groups (a sliding-window group needs
// ⌈min(W − 1 + max_num_batched_tokens, max_model_len) / block_size⌉ + 1
// blocks).
func (c *Config) Capacity() (Capacity, error) {
	var k Capacity
	if c.BlockSize < 1 || c.NumLayers < 1 {
		return k, fmt.Errorf("kv cache: block_size and num_layers must be positive")
	}
	full := c.NumLayers - c.SlidingWindowLayers
	g, err := kvcapacity.New(kvcapacity.Model{DtypeBytes: c.KVDtypeBytes, Attention: []kvcapacity.Attention{
		{Layers: full, KVHeads: c.NumKVHeads, HeadDim: c.HeadDim},
		{Layers: c.SlidingWindowLayers, SlidingWindow: c.SlidingWindow, KVHeads: c.NumKVHeads, HeadDim: c.HeadDim},
	}}, kvcapacity.Settings{BlockSize: c.BlockSize, MaxModelLen: c.MaxModelLen, MaxNumBatchedTokens: c.MaxNumBatchedTokens})
	if err != nil {
		return k, err
	}
	k.PageBytes, k.GroupSize, k.BlocksPerRequest = g.PageBytes, g.GroupSize, g.BlocksPerRequest
	for _, grp := range g.Groups {
		k.Groups = append(k.Groups, KVGroup{SlidingWindow: grp.SlidingWindow, Layers: grp.Layers})
	}
	if c.NumGPUBlocksOverride > 0 {
		k.NumBlocks = c.NumGPUBlocksOverride
	} else {
		k.NumBlocks = g.Blocks(c.KVCacheMemoryBytes)
	}
	if k.NumBlocks < 2 {
		return k, fmt.Errorf("kv cache: %d bytes hold %d blocks; need at least 2 (raise kv_cache_memory_bytes)", c.KVCacheMemoryBytes, k.NumBlocks)
	}
	k.Tokens = g.Tokens(k.NumBlocks)
	k.MaxConcurrency = g.Concurrency(k.NumBlocks)
	return k, nil
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
		fmt.Sprintf("GPU KV cache size: %s tokens", kvcapacity.Thousands(k.Tokens)),
		fmt.Sprintf("Maximum concurrency for %s tokens per request: %.2fx", kvcapacity.Thousands(c.MaxModelLen), k.MaxConcurrency),
	}
}
