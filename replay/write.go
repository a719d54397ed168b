package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/servebench/servebench/internal/atomicfile"
)

// The files Write writes, in the directory it is given.
const (
	ScenarioFile = "replay.yaml" // the scenario
	PresetFile   = "server.yaml" // the simulator preset the scenario targets
	TraceFile    = "trace.jsonl" // the arrivals, in Mooncake's trace format
)

// Write writes the scenario, its preset and its trace into dir (created
// when missing) and returns the scenario's path. It refuses to replace
// existing files unless force.
func (r *Replay) Write(dir string, force bool) (string, error) {
	files := map[string]func() ([]byte, error){ScenarioFile: r.scenarioYAML, PresetFile: r.presetYAML, TraceFile: r.traceJSONL}
	if !force {
		for _, name := range []string{ScenarioFile, PresetFile, TraceFile} {
			p := filepath.Join(dir, name)
			if _, err := os.Stat(p); err == nil {
				return "", fmt.Errorf("replay: %s exists: choose another directory, or pass --force to replace it", p)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return "", fmt.Errorf("replay: %w", err)
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("replay: %w", err)
	}
	for _, name := range []string{TraceFile, PresetFile, ScenarioFile} {
		data, err := files[name]()
		if err != nil {
			return "", err
		}
		if err := atomicfile.WriteBytes(filepath.Join(dir, name), data); err != nil {
			return "", fmt.Errorf("replay: %w", err)
		}
	}
	return filepath.Join(dir, ScenarioFile), nil
}

// traceJSONL is the trace: one {"timestamp": ms, "input_length": N,
// "output_length": N} line per arrival.
func (r *Replay) traceJSONL() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, a := range r.Trace {
		rec := struct {
			Timestamp    int64 `json:"timestamp"`
			InputLength  int   `json:"input_length"`
			OutputLength int   `json:"output_length"`
		}{a.At.Milliseconds(), a.Input, a.Output}
		if err := enc.Encode(rec); err != nil {
			return nil, fmt.Errorf("replay: trace: %w", err)
		}
	}
	return b.Bytes(), nil
}

// presetYAML is the simulator preset, headed by where each figure came
// from.
func (r *Replay) presetYAML() ([]byte, error) {
	body, err := marshal(r.Config)
	if err != nil {
		return nil, fmt.Errorf("replay: preset: %w", err)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# The simulator of the server in %s, written by `bench logs --replay`\n", r.Source)
	fmt.Fprintf(&b, "# (the server start at line %d). Step cost per engine step:\n", r.Run.FirstLine)
	b.WriteString("#   step_overhead_us + per_seq_us·requests + per_kv_token_ns/1000·context read + per_prefill_token_us·prompt tokens\n")
	for _, n := range r.presetNotes {
		b.WriteString(comment(n))
	}
	b.WriteString("\n")
	b.Write(body)
	return b.Bytes(), nil
}

// marshal is YAML with two-space indents, as the project's files are.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	err := enc.Close()
	return b.Bytes(), err
}

// comment wraps s as "# - " lines of at most 100 characters.
func comment(s string) string { return bullet(s, "# - ", "#   ") }

// bullet wraps s into lines of at most 100 characters, the first starting
// with first, the others with rest.
func bullet(s, first, rest string) string {
	var b strings.Builder
	line, fresh := first, true
	for _, w := range strings.Fields(s) {
		if !fresh && len([]rune(line))+1+len([]rune(w)) > 100 {
			b.WriteString(line + "\n")
			line, fresh = rest, true
		}
		if fresh {
			line, fresh = line+w, false
		} else {
			line += " " + w
		}
	}
	b.WriteString(line + "\n")
	return b.String()
}

// scenarioDoc is the scenario as written: the fields a replay sets.
type scenarioDoc struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Target      struct {
		URL      string `yaml:"url"`
		API      string `yaml:"api"`
		Timeouts struct {
			FirstByte string `yaml:"first_byte"`
			Idle      string `yaml:"idle"`
			Total     string `yaml:"total"`
		} `yaml:"timeouts"`
	} `yaml:"target"`
	Request struct {
		IgnoreEOS   bool    `yaml:"ignore_eos"`
		Temperature float64 `yaml:"temperature"`
	} `yaml:"request"`
	Scrape struct {
		Interval string `yaml:"interval"`
	} `yaml:"scrape"`
	Load struct {
		MaxDuration string     `yaml:"max_duration"`
		Stages      []stageDoc `yaml:"stages"`
	} `yaml:"load"`
}

type stageDoc struct {
	Name  string `yaml:"name"`
	Trace struct {
		Path string `yaml:"path"`
	} `yaml:"trace"`
	MaxConcurrency int `yaml:"max_concurrency"`
}

// scenarioYAML is the scenario: one trace replay stage on the preset,
// headed by the log's stats lines and the replay times they fall at.
func (r *Replay) scenarioYAML() ([]byte, error) {
	var d scenarioDoc
	d.Name, d.Description = r.Name, r.description()
	d.Target.URL, d.Target.API = "sim://./"+PresetFile, "completions"
	span := time.Duration(math.Ceil(r.Span)) * time.Second
	limit := (3*span + 5*time.Minute).Round(time.Minute)
	d.Target.Timeouts.FirstByte, d.Target.Timeouts.Idle, d.Target.Timeouts.Total = limit.String(), "5m0s", limit.String()
	d.Request.IgnoreEOS = true
	d.Scrape.Interval = r.Config.LogStatsInterval.String()
	d.Load.MaxDuration = limit.String()
	peak := 0.0
	for _, l := range r.Lines {
		peak = max(peak, l.Running+l.Waiting)
	}
	st := stageDoc{Name: "replay", MaxConcurrency: max(2*int(peak)+16, len(r.Trace))}
	st.Trace.Path = TraceFile
	d.Load.Stages = []stageDoc{st}
	body, err := marshal(&d)
	if err != nil {
		return nil, fmt.Errorf("replay: scenario: %w", err)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Replays the load of %s (the server start at line %d, engine %s),\n", r.Source, r.Run.FirstLine, r.Engine)
	b.WriteString("# written by `bench logs --replay`. Run it on the simulator:\n")
	b.WriteString("#   bench run replay.yaml             (wall clock; the run's sim.log prints the stats lines)\n")
	b.WriteString("#   bench run --virtual replay.yaml   (virtual time, seconds)\n")
	b.WriteString("# The log's stats lines and the replay time each falls at:\n")
	for _, l := range r.Lines {
		fmt.Fprintf(&b, "#   %s  %7.1f s  prompt %8.1f  generation %8.1f tok/s  running %g  waiting %g%s\n",
			l.Time, l.At-r.Origin, l.Prompt, l.Gen, l.Running, l.Waiting, kvText(l.KVPerc))
	}
	b.WriteString("\n")
	b.Write(body)
	return b.Bytes(), nil
}

func kvText(p float64) string {
	if math.IsNaN(p) {
		return ""
	}
	return fmt.Sprintf("  KV %.1f %%", p)
}

// description is the scenario's description: what it replays, what it
// assumed, what the log could not tell.
func (r *Replay) description() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Replays the load that the %d stats lines of %s show (%s to %s): %d request(s) in a trace, on a simulator built from the log's settings and KV-cache figures.\n",
		len(r.Lines), filepath.Base(r.Source), r.Lines[0].Time, r.Lines[len(r.Lines)-1].Time, len(r.Trace))
	b.WriteString("Assumed:\n")
	for _, n := range r.Assumed {
		b.WriteString("- " + n + "\n")
	}
	b.WriteString("The log does not tell:\n")
	for _, n := range r.Unknown {
		b.WriteString("- " + n + "\n")
	}
	return b.String()
}
