package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/servebench/servebench/internal/loopback"
	"github.com/servebench/servebench/sim"
)

const simUsage = `Usage: bench sim [--preset NAME | --config FILE] [--addr 127.0.0.1:8000] [--set key=value ...]
       bench sim --list-settings [--preset NAME | --config FILE] [--set key=value ...]

Serves the built-in vLLM-like simulator (continuous batching, a paged KV
cache, chunked prefill, prefix caching and preemption, with step times
calibrated to real vLLM logs) as an OpenAI-compatible server with vLLM's
/metrics names and vLLM-format logs on stderr, on loopback, until Ctrl-C.

In a scenario, target.url: sim://PRESET starts the same simulator in-process
for the run; settings go in the query: sim://tiny?max_num_batched_tokens=512.

Presets: %s

--list-settings prints every setting (the names --set, preset files and
sim:// queries take) with its value in the chosen preset and its meaning.

Examples:
  bench sim                                   # tiny preset on 127.0.0.1:8000
  bench sim --preset gpt-oss-120b-h100 --addr 127.0.0.1:9000
  bench sim --preset tiny --set max_num_batched_tokens=256 --set seed=7
  bench sim --config my-gpu.yaml              # a preset file; may start with 'base: NAME'
`

func simCmd(ctx context.Context, e env, args []string) error {
	fs := newFlagSet(e, "sim", fmt.Sprintf(simUsage, strings.Join(sim.PresetNames(), ", ")))
	preset := choiceFlag(fs, "preset", "tiny", sim.PresetNames(), "embedded preset (bench sim --list-settings --preset NAME shows its settings)")
	config := fs.String("config", "", "preset YAML `file` (overrides --preset)")
	addr := fs.String("addr", "127.0.0.1:8000", "listen address (loopback only)")
	list := fs.Bool("list-settings", false, "list every setting with its value and meaning, and exit")
	var sets multiFlag
	fs.Var(&sets, "set", "override a preset setting, `key=value` (repeatable), e.g. max_num_seqs=64")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageFor(fs, "sim: unexpected argument %q", pos[0])
	}
	var cfg sim.Config
	if *config != "" {
		cfg, err = sim.LoadConfig(*config)
	} else {
		cfg, err = sim.Preset(*preset)
	}
	if err != nil {
		return usageError{err: fmt.Errorf("sim: %w", err)}
	}
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			return usagef("sim: --set %q: want key=value", s)
		}
		if err := cfg.Set(k, v); err != nil {
			return usageError{err: fmt.Errorf("sim: %w", err)}
		}
	}
	if *list {
		return listSettings(e.stdout, cfg)
	}
	if !loopback.Addr(*addr) {
		return usagef("sim: --addr %s: the simulator listens on loopback addresses only", *addr)
	}
	srv, err := sim.Listen(ctx, *addr, cfg, e.stderr)
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	defer srv.Close()
	fmt.Fprintf(e.stderr, "simulator %q serving at %s (Ctrl-C to stop)\n", cfg.ServedModelName, srv.URL())
	<-ctx.Done()
	return nil
}

// listSettings prints every simulator setting with its value in cfg and
// its meaning, wrapped.
func listSettings(w io.Writer, cfg sim.Config) error {
	all, err := sim.Settings()
	if err != nil {
		return err
	}
	vals, err := cfg.Values()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "settings of the simulator, with their values in %q:\n\n", cfg.Name)
	for _, st := range all {
		v := vals[st.Name]
		if v == "" {
			v = `""`
		}
		fmt.Fprintf(w, "%s = %s  (%s)\n", st.Name, v, st.Kind)
		line := "   "
		for _, word := range strings.Fields(st.Meaning) {
			if len(line)+1+len(word) > 78 {
				fmt.Fprintln(w, line)
				line = "   "
			}
			line += " " + word
		}
		fmt.Fprintln(w, line)
	}
	return nil
}
