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
	take(&o.MaxModelLen, c.MaxModelLen, "max_model_len", "the log's configuration")
	bs := c.BlockSize
	if bs == 0 && r.KV.Check != nil && r.KV.Check.Skipped == "" {
		bs = r.KV.Check.BlockSize
	}
	take(&o.BlockSize, bs, "block_size", "the log's configuration")
	if r.KV.Tokens > 0 {
		size := o.BlockSize
		if size == 0 {
			size = DefaultBlockSize
		}
		// vLLM prints the cache's capacity in tokens of full attention;
		// the twin's one group of blocks holds as many.
		take(&o.KVBlocks, r.KV.Tokens/size, "num_gpu_blocks_override",
			fmt.Sprintf("GPU KV cache size %d tokens ÷ %d-token blocks", r.KV.Tokens, size))
	}
	if len(taken) == 0 {
		return nil, fmt.Errorf("%s states no capacity setting (max_num_seqs, max_num_batched_tokens, max_model_len, KV cache size)", where)
	}
	return taken, nil
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
