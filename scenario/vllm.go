package scenario

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// VLLMCommand is a `vllm bench serve` command line translated into a run:
// the flags and --set overrides of the closest honest equivalent, what was
// assumed where vLLM has a default, and what has no equivalent.
type VLLMCommand struct {
	Flags Flags
	Sets  []string // --set path=value overrides
	Notes []string // assumptions, approximations and ignored arguments
	Args  []string // the equivalent servebench arguments, for people
}

// vllmDefaults are `vllm bench serve`'s defaults that change what is run.
const (
	vllmDefaultPrompts   = 1000
	vllmDefaultInputLen  = 1024
	vllmDefaultOutputLen = 128
)

// ParseVLLMCommand translates a `vllm bench serve …` (or benchmark_serving.py)
// command line. Unknown arguments are errors; arguments that change
// nothing servebench measures (result files, labels, progress bars) are
// noted as ignored.
func ParseVLLMCommand(line string) (*VLLMCommand, error) {
	words, err := shellWords(line)
	if err != nil {
		return nil, err
	}
	for len(words) > 0 && !strings.HasPrefix(words[0], "--") {
		words = words[1:] // vllm bench serve, python benchmark_serving.py
	}
	args := map[string]string{}
	var order []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		if !strings.HasPrefix(w, "--") {
			return nil, fmt.Errorf("%q: want --name value arguments", w)
		}
		name, value, eq := strings.Cut(strings.TrimPrefix(w, "--"), "=")
		name = strings.ReplaceAll(name, "_", "-")
		if !eq {
			if vllmBoolArgs[name] {
				value = "true"
			} else if i+1 < len(words) && !strings.HasPrefix(words[i+1], "--") {
				value = words[i+1]
				i++
			} else {
				return nil, fmt.Errorf("--%s: a value is missing", name)
			}
		}
		args[name] = value
		order = append(order, name)
	}
	c := &VLLMCommand{}
	var errs []error
	for _, name := range order {
		if err := c.arg(name, args[name], args); err != nil {
			errs = append(errs, fmt.Errorf("--%s %s: %w", name, args[name], err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	c.defaults(args)
	return c, nil
}

// vllmBoolArgs are the arguments that take no value.
var vllmBoolArgs = map[string]bool{"ignore-eos": true, "disable-tqdm": true, "save-result": true, "save-detailed": true,
	"trust-remote-code": true, "profile": true, "append-result": true, "disable-shuffle": true, "no-oversample": true}

// vllmIgnored are the arguments that change nothing servebench measures.
var vllmIgnored = []string{"disable-tqdm", "save-result", "save-detailed", "append-result", "result-dir", "result-filename",
	"label", "metadata", "percentile-metrics", "metric-percentiles", "trust-remote-code", "profile", "ready-check-timeout-sec",
	"disable-shuffle", "no-oversample", "served-model-name"}

// arg translates one argument; all holds every argument, for those that
// depend on another.
func (c *VLLMCommand) arg(name, value string, all map[string]string) error {
	f := &c.Flags
	num := func() (float64, error) { return strconv.ParseFloat(value, 64) }
	switch name {
	case "base-url":
		f.Target = strings.TrimSuffix(value, "/")
	case "host", "port":
		if all["base-url"] == "" {
			host, port := all["host"], all["port"]
			if host == "" {
				host = "127.0.0.1"
			}
			if port == "" {
				port = "8000"
			}
			f.Target = "http://" + host + ":" + port
		}
	case "model":
		f.Model = value
	case "seed":
		f.Seed = value
	case "tokenizer":
		if !strings.HasSuffix(strings.ToLower(value), ".json") {
			value = strings.TrimSuffix(value, "/") + "/tokenizer.json"
			c.note("--tokenizer %s: servebench reads the model's tokenizer.json from disk (%s); a Hugging Face id is not downloaded", all["tokenizer"], value)
		}
		f.Tokenizer = value
	case "num-prompts":
		n, err := strconv.Atoi(value)
		if err != nil || n < 1 {
			return fmt.Errorf("want a count")
		}
		f.Requests = n
	case "request-rate":
		if strings.EqualFold(value, "inf") {
			return nil
		}
		r, err := num()
		if err != nil || r <= 0 {
			return fmt.Errorf("want requests per second or inf")
		}
		f.Rate = r
	case "burstiness":
		b, err := num()
		if err != nil || b <= 0 {
			return fmt.Errorf("want a gamma shape above 0")
		}
		f.Burstiness = b
	case "max-concurrency":
		n, err := strconv.Atoi(value)
		if err != nil || n < 1 {
			return fmt.Errorf("want a count")
		}
		f.MaxConcurrency = n
	case "num-warmups":
		n, err := strconv.Atoi(value)
		if err != nil || n < 0 {
			return fmt.Errorf("want a count")
		}
		f.Warmups = n
	default:
		return c.dataArg(name, value, all)
	}
	return nil
}

// dataArg translates the arguments of the dataset, the endpoint and the
// requests' sampling.
func (c *VLLMCommand) dataArg(name, value string, all map[string]string) error {
	f := &c.Flags
	switch name {
	case "dataset-name":
		if value != "random" && value != "sharegpt" {
			return fmt.Errorf("servebench translates the random and sharegpt datasets (write a scenario with prompts.dataset for the others)")
		}
	case "dataset-path":
		if all["dataset-name"] != "sharegpt" {
			return fmt.Errorf("applies to --dataset-name sharegpt")
		}
		f.Dataset = value
	case "random-input-len", "random-output-len":
		n, err := strconv.Atoi(value)
		if err != nil || n < 1 {
			return fmt.Errorf("want a token count")
		}
		if name == "random-input-len" {
			f.InputTokens = n
		} else {
			f.OutputTokens = n
		}
	case "random-range-ratio", "random-prefix-len":
		// Read with the lengths, in defaults.
	case "backend", "endpoint-type":
		switch value {
		case "openai-chat":
			c.Sets = append(c.Sets, "target.api=chat")
		case "vllm", "openai":
		default:
			return fmt.Errorf("servebench sends chat or completions requests (backends openai-chat, openai, vllm)")
		}
	case "endpoint":
		switch strings.TrimSuffix(value, "/") {
		case "/v1/chat/completions":
			c.Sets = append(c.Sets, "target.api=chat")
		case "/v1/completions":
		default:
			return fmt.Errorf("want /v1/completions or /v1/chat/completions")
		}
	case "ignore-eos":
		c.Sets = append(c.Sets, "request.ignore_eos=true")
	case "temperature":
		c.Sets = append(c.Sets, "request.temperature="+value)
	case "goodput":
		return c.goodput(value)
	default:
		for _, ig := range vllmIgnored {
			if name == ig {
				c.note("--%s is ignored: servebench always writes its results, percentiles and report (bench report --format vllm writes vLLM's JSON)", name)
				return nil
			}
		}
		return fmt.Errorf("not an argument servebench can translate")
	}
	return nil
}

// goodput translates --goodput ttft:MS tpot:MS e2el:MS into slo objectives.
func (c *VLLMCommand) goodput(value string) error {
	for _, kv := range strings.Fields(value) {
		k, v, ok := strings.Cut(kv, ":")
		ms, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil {
			return fmt.Errorf("want KEY:MS pairs like ttft:500")
		}
		switch k {
		case "ttft", "tpot":
			c.Sets = append(c.Sets, fmt.Sprintf("slo.%s_ms=%g", k, ms))
		case "e2el":
			c.Sets = append(c.Sets, fmt.Sprintf("slo.e2e_ms=%g", ms))
		default:
			return fmt.Errorf("%q: want ttft, tpot or e2el", k)
		}
	}
	return nil
}

// defaults applies vLLM's defaults where the command left them out, and
// notes what differs between the two clients.
func (c *VLLMCommand) defaults(args map[string]string) {
	f := &c.Flags
	if f.Target == "" {
		f.Target = "http://127.0.0.1:8000"
	}
	if f.Requests == 0 {
		f.Requests = vllmDefaultPrompts
	}
	if args["dataset-name"] != "sharegpt" {
		if f.InputTokens == 0 {
			f.InputTokens = vllmDefaultInputLen
		}
		if f.OutputTokens == 0 {
			f.OutputTokens = vllmDefaultOutputLen
		}
		if r, err := strconv.ParseFloat(args["random-range-ratio"], 64); err == nil && r > 0 && r < 1 {
			for path, n := range map[string]int{"prompts.input_tokens": f.InputTokens, "prompts.output_tokens": f.OutputTokens} {
				c.Sets = append(c.Sets, fmt.Sprintf("%s={dist: uniform, min: %d, max: %d}", path, max(int(float64(n)*(1-r)), 1), int(float64(n)*(1+r))))
			}
		}
		c.note("random prompts: servebench's synthetic prompts have exactly the drawn length under its tokenizer; vLLM's random dataset decodes random token ids")
	}
	if args["endpoint"] == "" && args["backend"] != "openai-chat" && args["endpoint-type"] != "openai-chat" {
		c.Sets = append(c.Sets, "target.api=completions") // vLLM's default endpoint
	}
	switch {
	case f.Rate == 0 && f.MaxConcurrency == 0:
		f.MaxConcurrency = f.Requests
		c.note("--request-rate inf without --max-concurrency sends every request at once: a closed loop of %d workers, each sending one", f.Requests)
	case f.Rate == 0:
		c.note("--request-rate inf with --max-concurrency %d: a closed loop of %d workers", f.MaxConcurrency, f.MaxConcurrency)
	case f.MaxConcurrency != 0:
		c.note("--max-concurrency %d with a rate: arrivals beyond %d in flight wait client-side (overflow: queue), all sent; their wait is the schedule lag, and latency from the schedule includes it", f.MaxConcurrency, f.MaxConcurrency)
	}
	if f.Warmups > 0 {
		c.note("--num-warmups %d: %d warmup requests sent first, then the %d measured ones", f.Warmups, f.Warmups, f.Requests)
	}
	c.Args = c.Flags.Args(c.Sets)
}

func (c *VLLMCommand) note(format string, args ...any) {
	c.Notes = append(c.Notes, fmt.Sprintf(format, args...))
}

// Args returns f as `bench run` arguments, with sets as --set, for people.
func (f Flags) Args(sets []string) []string {
	var out []string
	add := func(name, value string) {
		if value != "" && value != "0" {
			out = append(out, "--"+name, value)
		}
	}
	add("target", f.Target)
	add("model", f.Model)
	add("concurrency", strconv.Itoa(f.Concurrency))
	add("rate", strconv.FormatFloat(f.Rate, 'g', -1, 64))
	add("arrival", f.Arrival)
	add("burstiness", strconv.FormatFloat(f.Burstiness, 'g', -1, 64))
	add("max-concurrency", strconv.Itoa(f.MaxConcurrency))
	add("overflow", f.Overflow)
	add("requests", strconv.Itoa(f.Requests))
	add("num-warmups", strconv.Itoa(f.Warmups))
	add("input-tokens", strconv.Itoa(f.InputTokens))
	add("output-tokens", strconv.Itoa(f.OutputTokens))
	add("dataset", f.Dataset)
	add("tokenizer", f.Tokenizer)
	add("seed", f.Seed)
	for _, s := range sets {
		out = append(out, "--set", shellQuote(s))
	}
	return out
}

// shellWords splits a command line as a POSIX shell would for plain words,
// single and double quotes and backslashes (a backslash before a newline
// joins lines). No expansion.
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case quote == '\'':
			if ch == '\'' {
				quote = 0
			} else {
				cur.WriteByte(ch)
			}
		case ch == '\\' && i+1 < len(s):
			i++
			if s[i] != '\n' {
				cur.WriteByte(s[i])
				in = true
			}
		case quote == '"':
			if ch == '"' {
				quote = 0
			} else {
				cur.WriteByte(ch)
			}
		case ch == '\'' || ch == '"':
			quote, in = ch, true
		case ch == ' ' || ch == '\t' || ch == '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(ch)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unclosed %c quote", quote)
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}
