package replay

import (
	"fmt"
	"math"

	"github.com/servebench/servebench/internal/kvcapacity"
	"github.com/servebench/servebench/sim"
	"github.com/servebench/servebench/vllmlog"
)

// kvModel turns KV-cache usage into context in flight, and context into
// the attention reads the simulator charges a step for, with the layout
// the preset gives the simulator.
type kvModel struct {
	geom   *kvcapacity.Geometry // nil: one uniform group of blocks
	usable float64              // usable blocks; 0 when the log states no pool
	block  int                  // tokens per block (uniform layout)
	// fullFrac and swFrac are the shares of the layers that read the whole
	// context and at most window tokens of it.
	fullFrac, swFrac float64
	window           int
	basis            string // how the layout was chosen
}

// contextAt is the context in flight (tokens summed over the streams) that
// kvPerc percent of the pool holds for streams decoding requests; NaN when
// the log does not tell.
func (k *kvModel) contextAt(kvPerc, streams float64) float64 {
	if k.usable <= 0 || math.IsNaN(kvPerc) || streams <= 0 {
		return math.NaN()
	}
	used := kvPerc / 100 * k.usable
	if k.geom != nil {
		return k.geom.ContextFromBlocks(used, streams)
	}
	return used * float64(k.block)
}

// read is the context a step reads for one stream of c tokens, weighted by
// the share of layers that read it, as the simulator charges it.
func (k *kvModel) read(c float64) float64 {
	if k.geom == nil {
		return c
	}
	return c*k.fullFrac + min(c, float64(k.window))*k.swFrac
}

// layout sets the KV-cache geometry of cfg from the log's KV check (the
// model's layers, heads per GPU, element size) and its pool of usable
// blocks (0: the log states none), and returns the kvModel that matches
// it. Notes say what was assumed.
func layout(cfg *sim.Config, run *vllmlog.Run, usable int, lines []Line) (*kvModel, []string) {
	var notes []string
	stated := usable > 0
	if !stated {
		var note string
		usable, note = impliedPool(lines, cfg)
		notes = append(notes, note)
	}
	k := &kvModel{usable: float64(usable), block: cfg.BlockSize}
	if usable <= 0 {
		// Ample: no preemption the log would not show.
		usable = max(8*cfg.MaxModelLen/cfg.BlockSize, 1<<16)
		k.usable = 0
	}
	cfg.NumGPUBlocksOverride = usable + 1 // one is vLLM's reserved null block
	ck := run.KV.Check
	m, g, ok := ck.Layout()
	if ok && ck.Agrees() && g.Settings.BlockSize == cfg.BlockSize {
		full, sw, window := 0, 0, 0
		var heads, dim int
		for _, a := range m.Attention {
			if a.SlidingWindow == 0 {
				full += a.Layers
				if heads == 0 {
					heads, dim = a.KVHeads, a.HeadDim
				}
			} else {
				sw += a.Layers
				window = max(window, a.SlidingWindow)
			}
		}
		if heads == 0 {
			heads, dim = m.Attention[0].KVHeads, m.Attention[0].HeadDim
		}
		if full > 0 {
			cfg.NumLayers, cfg.SlidingWindowLayers, cfg.SlidingWindow = full+sw, sw, window
			cfg.NumKVHeads, cfg.HeadDim, cfg.KVDtypeBytes = heads, dim, m.DtypeBytes
			if sw == 0 {
				cfg.SlidingWindow = 0
			}
			cfg.KVCacheMemoryBytes = int64(cfg.NumGPUBlocksOverride) * g.BlockBytes()
			k.geom = &g
			k.fullFrac, k.swFrac, k.window = float64(full)/float64(full+sw), float64(sw)/float64(full+sw), window
			k.basis = fmt.Sprintf("the KV-cache layout of %s (%d layers, %d with a %d-token sliding window), as the log's KV check reproduced it", ck.Model, full+sw, sw, window)
			if sw == 0 {
				k.basis = fmt.Sprintf("the KV-cache layout of %s (%d full-attention layers), as the log's KV check reproduced it", ck.Model, full)
			}
			return k, notes
		}
	}
	// One uniform layer: usage is blocks of context, as twin presets count.
	cfg.NumLayers, cfg.NumKVHeads, cfg.HeadDim, cfg.KVDtypeBytes = 1, 1, 1, 2
	cfg.SlidingWindow, cfg.SlidingWindowLayers = 0, 0
	cfg.KVCacheMemoryBytes = int64(cfg.NumGPUBlocksOverride) * int64(2*cfg.BlockSize*2)
	if stated {
		k.basis = fmt.Sprintf("the printed KV-cache size as %s blocks of %d tokens, every layer holding the whole context (the model's layers are not known to servebench, or the KV check did not reproduce the log)", kvcapacity.Thousands(usable), cfg.BlockSize)
		notes = append(notes, "KV cache: "+k.basis)
	}
	return k, notes
}

// impliedPool is the KV-cache pool, in usable blocks of one uniform layer,
// that the first stats line's KV usage implies for the context the replay
// gives its requests (their prompts, assumed when the log shows none, and
// the tokens generated in the interval), when the log states no KV-cache
// size; 0, with a note, when that line shows no usage to tell it.
func impliedPool(lines []Line, cfg *sim.Config) (int, string) {
	l := lines[0]
	if !(l.KVPerc > 0) || l.Running <= 0 {
		return 0, fmt.Sprintf("the log states no KV-cache size: the simulator gets an ample pool (%s blocks), so it never preempts, and its KV-usage figures do not compare with the log's",
			kvcapacity.Thousands(max(8*cfg.MaxModelLen/cfg.BlockSize, 1<<16)))
	}
	prompt, _ := estimatePrompt(lines)
	ctx := l.Running * orDefaultPrompt(prompt)
	if l.Prompt > 0 {
		ctx = l.Prompt * l.Interval
	}
	ctx += l.Gen * l.Interval
	blocks := int(math.Round(ctx / float64(cfg.BlockSize) / (l.KVPerc / 100)))
	return max(blocks, 1), fmt.Sprintf("the log states no KV-cache size: the pool is taken as %s blocks of %d tokens, what the first stats line's KV usage (%.1f %%) implies for the %s tokens of context the replay gives its %g running request(s) there; with another context the pool would differ in proportion",
		kvcapacity.Thousands(max(blocks, 1)), cfg.BlockSize, l.KVPerc, kvcapacity.Thousands(int(ctx)), l.Running)
}
