package vllmlog

import (
	"regexp"
	"strconv"
	"strings"
)

// commandRe finds the server's start command in a pasted shell line:
// "vllm serve MODEL --flag value …" or "python -m
// vllm.entrypoints.openai.api_server --flag value …".
var commandRe = regexp.MustCompile(`(?:^|[\s$/=])(vllm serve|vllm\.entrypoints\.openai\.api_server|vllm\.entrypoints\.api_server)(?:\s|$)(.*)$`)

// booleanFlags take no value.
var booleanFlags = map[string]bool{
	"enforce-eager": true, "trust-remote-code": true, "enable-prefix-caching": true, "no-enable-prefix-caching": true,
	"enable-chunked-prefill": true, "no-enable-chunked-prefill": true, "enable-auto-tool-choice": true,
	"disable-log-requests": true, "disable-log-stats": true, "enable-expert-parallel": true,
	"disable-custom-all-reduce": true, "async-scheduling": true, "enable-reasoning": true,
}

// command reads a pasted shell command that starts the server, and the
// lines that continue it ("--flag value \"). It reports whether s was one.
func (p *Parser) command(s string) bool {
	if r := p.cur; r != nil && r.cmdOpen {
		if strings.HasPrefix(s, "-") {
			r.applyFlags(s, false)
			r.cmdOpen = strings.HasSuffix(s, `\`)
			return true
		}
		r.cmdOpen = false
	}
	if !strings.Contains(s, "vllm") {
		return false
	}
	m := commandRe.FindStringSubmatch(s)
	if m == nil {
		return false
	}
	p.startMarker(markCommand, nil)
	r := p.cur
	r.seen++
	r.applyFlags(m[2], m[1] == "vllm serve")
	r.cmdOpen = strings.HasSuffix(s, `\`)
	return true
}

// applyFlags records the settings a command's flags ask for.
func (r *run) applyFlags(s string, positional bool) {
	toks := strings.Fields(s)
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t == `\` || t == "&&" || t == "|" {
			if t != `\` {
				return // another command follows
			}
			continue
		}
		if !strings.HasPrefix(t, "-") {
			if positional && r.cmd.Model == "" {
				r.cmd.Model = unquote(t)
			}
			continue
		}
		positional = false
		name, val, hasVal := strings.Cut(strings.TrimLeft(t, "-"), "=")
		name = strings.ReplaceAll(name, "_", "-")
		if !hasVal && !booleanFlags[name] && i+1 < len(toks) && !strings.HasPrefix(toks[i+1], "-") && toks[i+1] != `\` {
			val, hasVal = toks[i+1], true
			i++
		}
		r.cmd.flag(name, unquote(val), hasVal)
	}
}

func unquote(s string) string { return strings.Trim(s, `'"`) }

// flag sets one setting of a command line; values that are shell
// variables ($NAME) are not known and are left out.
func (c *Config) flag(name, val string, hasVal bool) {
	if strings.HasPrefix(val, "$") {
		return
	}
	atoi := func(dst *int) {
		if n, err := strconv.Atoi(val); err == nil && n > 0 {
			*dst = n
		}
	}
	switch name {
	case "model":
		c.Model = val
	case "served-model-name":
		c.ServedModelName = val
	case "tensor-parallel-size", "tp":
		atoi(&c.TensorParallel)
	case "pipeline-parallel-size", "pp":
		atoi(&c.PipelineParallel)
	case "data-parallel-size", "dp":
		atoi(&c.DataParallel)
	case "max-model-len":
		atoi(&c.MaxModelLen)
	case "max-num-seqs":
		atoi(&c.MaxNumSeqs)
	case "max-num-batched-tokens":
		atoi(&c.MaxNumBatchedTokens)
	case "block-size":
		atoi(&c.BlockSize)
	case "gpu-memory-utilization":
		if f, err := strconv.ParseFloat(val, 64); err == nil && f > 0 && f <= 1 {
			c.GPUMemoryUtilization = f
		}
	case "dtype":
		if val != "auto" {
			c.Dtype = val
		}
	case "quantization", "q":
		c.Quantization = val
	case "kv-cache-dtype":
		c.KVCacheDtype = val
	case "enforce-eager":
		c.EnforceEager = yes(!hasVal || val == "true" || val == "True")
	case "enable-prefix-caching", "no-enable-prefix-caching":
		c.PrefixCaching = yes(name == "enable-prefix-caching")
	case "enable-chunked-prefill", "no-enable-chunked-prefill":
		c.ChunkedPrefill = yes(name == "enable-chunked-prefill")
	}
}

// mergeCommand fills the settings the log does not state with what the
// pasted command line asked for.
func (r *run) mergeCommand() {
	c, k := &r.Config, &r.cmd
	str := func(dst *string, v string) {
		if *dst == "" {
			*dst = v
		}
	}
	num := func(dst *int, v int) {
		if *dst == 0 {
			*dst = v
		}
	}
	flag := func(dst **bool, v *bool) {
		if *dst == nil {
			*dst = v
		}
	}
	str(&c.Model, k.Model)
	str(&c.ServedModelName, k.ServedModelName)
	str(&c.Dtype, k.Dtype)
	str(&c.Quantization, k.Quantization)
	str(&c.KVCacheDtype, k.KVCacheDtype)
	num(&c.TensorParallel, k.TensorParallel)
	num(&c.PipelineParallel, k.PipelineParallel)
	num(&c.DataParallel, k.DataParallel)
	num(&c.MaxModelLen, k.MaxModelLen)
	num(&c.BlockSize, k.BlockSize)
	flag(&c.EnforceEager, k.EnforceEager)
	flag(&c.PrefixCaching, k.PrefixCaching)
	flag(&c.ChunkedPrefill, k.ChunkedPrefill)
	if c.GPUMemoryUtilization == 0 {
		c.GPUMemoryUtilization = k.GPUMemoryUtilization
	}
	if c.MaxNumSeqs == 0 && k.MaxNumSeqs > 0 {
		c.MaxNumSeqs, c.MaxNumSeqsSource = k.MaxNumSeqs, srcCommand
	}
	if c.MaxNumBatchedTokens == 0 && k.MaxNumBatchedTokens > 0 {
		c.MaxNumBatchedTokens, c.BatchedTokensSource = k.MaxNumBatchedTokens, srcCommand
	}
}

// continuation reads a raw line that continues an engine-config line the
// copy wrapped: the cut end of that line joined with this one.
func (r *run) continuation(rec *record) bool {
	tail := r.cfgTail
	r.cfgTail = ""
	if tail == "" || rec.level != "" || !rec.at.IsZero() || !strings.Contains(rec.msg, "=") ||
		strings.HasSuffix(tail, "...") || strings.HasSuffix(tail, "…") || bareConfigRe.MatchString(rec.msg) {
		return false // an elided line, or settings listed one per line
	}
	head := tail
	if k := strings.LastIndex(tail, ", "); k >= 0 {
		head = tail[k+2:]
	}
	text := head + rec.msg // the token the wrap cut, made whole
	if !applyEngineConfig(&r.Config, pyKeywords(text)) && !strings.Contains(text, "=") {
		return false
	}
	if t := strings.TrimSpace(rec.msg); !strings.HasSuffix(t, ")") && !strings.HasSuffix(t, "}") {
		r.cfgTail = text
	}
	return true
}
