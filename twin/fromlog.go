package twin

import (
	"fmt"

	"github.com/servebench/servebench/vllmlog"
)

// FromLog fills the capacity settings opts leaves unknown (zero) from what
// a vLLM server log states: max_num_seqs, max_num_batched_tokens,
// max_model_len, the block size and the KV cache's size in tokens (as
// usable blocks of that size). It reads the log's last server start, the
// one a load run after it met. Settings given explicitly win. It returns
// one line per setting taken, naming the figure and its line of the log,
// and an error when the log states none of them.
func (o *Options) FromLog(rep *vllmlog.Report) ([]string, error) {
	if rep == nil || len(rep.Runs) == 0 {
		return nil, fmt.Errorf("the server log has no vLLM server start")
	}
	r := rep.Runs[len(rep.Runs)-1]
	where := fmt.Sprintf("%s, the server start at line %d", r.File, r.FirstLine)
	var taken []string
	take := func(dst *int, v int, name, from string) {
		if *dst != 0 || v <= 0 {
			return
		}
		*dst = v
		o.setOrigin(name, "from the server log: "+from)
		label := name
		if name == "num_gpu_blocks_override" {
			label = "usable KV-cache blocks"
		}
		taken = append(taken, fmt.Sprintf("%s = %d (%s)", label, v, from))
	}
	c := r.Config
	take(&o.MaxNumSeqs, c.MaxNumSeqs, "max_num_seqs", orDefault(c.MaxNumSeqsSource, "the log's configuration"))
	budgetFrom := c.BatchedTokensSource
	if budgetFrom == "" || budgetFrom == "log" {
		budgetFrom = "the log's chunked-prefill line"
	}
	take(&o.MaxNumBatchedTokens, c.MaxNumBatchedTokens, "max_num_batched_tokens", budgetFrom)
	mmlFrom := "the log's configuration"
	if c.MaxModelLen == r.KV.ConcurrencyLen {
		mmlFrom = "the log's \"Maximum concurrency for N tokens per request\" line"
	}
	take(&o.MaxModelLen, c.MaxModelLen, "max_model_len", mmlFrom)
	bs := c.BlockSize
	if bs == 0 && r.KV.Check != nil && r.KV.Check.Skipped == "" {
		bs = r.KV.Check.BlockSize
	}
	take(&o.BlockSize, bs, "block_size", "the log's configuration")
	if n, from := kvBlocks(r, o.BlockSize); n > 0 {
		take(&o.KVBlocks, n, "num_gpu_blocks_override", from)
	}
	if len(taken) == 0 {
		return nil, fmt.Errorf("%s states no capacity setting (max_num_seqs, max_num_batched_tokens, max_model_len, KV cache size)", where)
	}
	return taken, nil
}

// kvBlocks is the usable KV-cache pool a log states, in blocks of the
// twin's size: V0's "# GPU blocks" as printed; for a model whose layers
// the KV check reproduced, the shared pool the check found (a model with
// sliding-window layers keeps several groups in one pool, so the printed
// token count, a per-group figure, understates it); otherwise the printed
// tokens in blocks.
func kvBlocks(r *vllmlog.Run, size int) (int, string) {
	if size == 0 {
		size = DefaultBlockSize
	}
	kv := &r.KV
	switch ck := kv.Check; {
	case kv.GPUBlocks > 0:
		return kv.GPUBlocks, fmt.Sprintf("the log's \"# GPU blocks: %d\"", kv.GPUBlocks)
	case ck.Agrees() && len(ck.Groups) > 1 && ck.Blocks > 1 && ck.BlockSize == size:
		return ck.Blocks - 1, fmt.Sprintf("the pool the KV check found for %s: %d blocks in %d groups (GPU KV cache size %d tokens is one group's share), less the null block",
			ck.Model, ck.Blocks, len(ck.Groups), kv.Tokens)
	case kv.Tokens > 0:
		// vLLM prints the cache's capacity in tokens of full attention;
		// the twin's one group of blocks holds as many.
		return kv.Tokens / size, fmt.Sprintf("GPU KV cache size %d tokens ÷ %d-token blocks", kv.Tokens, size)
	}
	return 0, ""
}

func (o *Options) setOrigin(name, note string) {
	if o.Origins == nil {
		o.Origins = map[string]string{}
	}
	o.Origins[name] = note
}

// given is the note of a setting given explicitly: where it came from.
func (o *Options) given(name string) string {
	if n := o.Origins[name]; n != "" {
		return n
	}
	return "given"
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
