package vllmlog

import (
	"fmt"
	"regexp"
)

// foreignSigns are line shapes of other serving engines, so that a log
// of one is named rather than silently explained as an empty vLLM log.
var foreignSigns = []struct {
	engine string
	re     *regexp.Regexp
}{
	{"SGLang", regexp.MustCompile(`Decode batch[.,] #running-req:|Prefill batch[.,] #new-seq:|KV Cache is allocated\. (?:dtype: \S+, )?#tokens:|server_args=ServerArgs\(|The server is fired up and ready to roll|Load weight end\. type=|Capture cuda graph (?:begin|end)\.|Memory pool end\. avail mem=`)},
	{"TGI (text-generation-inference)", regexp.MustCompile(`text_generation_(?:launcher|router|server)`)},
	{"llama.cpp (llama-server)", regexp.MustCompile(`^(?:slot +\w+|srv +\w+): +|^llama_model_loader: |^main: server is listening|^(?:prompt eval|eval|total) time = |^request: (?:GET|POST) /`)},
}

// detectEngine names the engine whose line s is, or "".
func detectEngine(s string) string {
	for _, f := range foreignSigns {
		if f.re.MatchString(s) {
			return f.engine
		}
	}
	return ""
}

// foreign counts a line of another engine in the file's reading.
func (p *Parser) foreign(fs *FileStat, engine, s string) {
	if fs.Engine == "" {
		fs.Engine, fs.EngineExample = engine, cut(s, 160)
	}
	if fs.Engine == engine {
		fs.EngineLines++
	}
}

// readingWarnings says, per file, what could not be read: another
// engine's log, or nothing understood at all.
func readingWarnings(rep *Report) []string {
	var out []string
	for i := range rep.FileStats {
		f := &rep.FileStats[i]
		found := false
		for _, r := range rep.Runs {
			found = found || r.File == f.File
		}
		switch {
		case f.Foreign(rep):
			out = append(out, fmt.Sprintf("%s: this is a log of %s, not of vLLM (%d lines like %q); bench logs explains vLLM server logs only", f.File, f.Engine, f.EngineLines, f.EngineExample))
		case !found && f.Understood == 0:
			out = append(out, fmt.Sprintf("%s: nothing in it was understood: none of its %d lines has the shape of a vLLM log line", f.File, f.Lines))
		case !found:
			out = append(out, fmt.Sprintf("%s: no vLLM server output recognised (%d of %d lines have the shape of vLLM log lines, but state none of the figures bench logs reads)", f.File, f.Understood, f.Lines))
		case f.NotUnderstood > 0:
			out = append(out, fmt.Sprintf("%s: %d of %d lines not understood (the first at line %d: %q)", f.File, f.NotUnderstood, f.Lines, f.FirstNotUnderstood, f.Example))
		}
	}
	return out
}

// Unreadable reports the files bench logs could not explain: logs of
// another engine, or files with no vLLM server output. Each entry says
// which and why; an empty result means every file was read.
func (rep *Report) Unreadable() []string {
	var out []string
	for i := range rep.FileStats {
		f := &rep.FileStats[i]
		found := false
		for _, r := range rep.Runs {
			found = found || r.File == f.File
		}
		switch {
		case f.Foreign(rep):
			out = append(out, fmt.Sprintf("%s is a log of %s, not of vLLM", f.File, f.Engine))
		case !found && f.Understood == 0:
			out = append(out, fmt.Sprintf("nothing in %s was understood", f.File))
		case !found:
			out = append(out, fmt.Sprintf("%s holds no vLLM server output bench logs can explain", f.File))
		}
	}
	return out
}
