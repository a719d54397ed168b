// Package vllmlog reads vLLM server logs and says what they mean: for
// each server start, the configuration and why each figure is what it
// is, where start-up time went, the KV cache's size and concurrency
// recomputed from the model's layers, the throughput series of the
// periodic stats lines and why it changed, the warnings and errors
// explained, and tuning hints. It stands beside the load path: where
// package correlate explains a run from the client's records and scraped
// metrics, vllmlog explains the server from its own log, live (Follow) or
// after the fact.
//
// It consumes vLLM server logs of the V0 and V1 engines (0.2 to 0.24 are
// in its corpus) as people have them: raw, or pasted from a terminal, a
// web page, CI output, docker or journalctl — with or without the
// "(APIServer pid=N)", "(Worker_TP1 pid=N)" or "(VllmWorkerProcess
// pid=N)" prefixes, with ANSI colours raw or pasted as "^[[0;36m", CR line
// ends raw or as "^M", progress bars redrawn in place, records whose line
// breaks were lost, lines the copy or the terminal wrapped, markdown
// quoting and fences, the shell command that started the server, and
// several server starts in one file, in any order. Each line family has its
// own grammar (record prefixes and forms in line.go, figures in
// matchers.go, tracebacks in traceback.go, commands in command.go, other
// engines in engines.go); the engine generation (V0 or V1) is told from
// the shapes of the lines (generation.go). Lines are read one at a time
// (bufio.Scanner, lines up to maxLineBytes) and only the figures are kept,
// in bounded memory (maxRuns, maxPoints); a line it does not recognise is
// counted as not understood (FileStat), never an error. A log of SGLang,
// TGI or llama.cpp is named as such. It produces a Report (JSON schema
// Schema): per server start the settings, start-up, KV cache, the stats
// series, Diagnoses that name what the numbers imply (a stalled engine,
// what held requests waiting, a decode-throughput change measured over
// full decode-only intervals, why the engine failed) each with the lines
// it rests on or saying that the log does not tell, the grouped warnings
// and errors with tracebacks folded into their exception, and hints;
// written as text, Markdown or JSON by Write, plots and logs.json by
// WriteFiles (through package chart), or, with Follow, one line per new
// stats line as a growing log is written. testdata/corpus holds the real
// logs it is tested on, with their sources and hand-written ground truth.
//
// The KV check shares its arithmetic with the simulator
// (internal/kvcapacity). Its model descriptions are built in for the
// models of the project's seed logs (gpt-oss-120b and -20b,
// DeepSeek-R1-Distill-Qwen-32B, Gemma 4 31B and 26B-A4B); any other model
// is described by its Hugging Face config.json (Options.ModelConfig). A
// built-in description of the same architecture serves a model it does not
// name only when it reproduces the printed figures, so the check never
// reports a disagreement measured against the wrong model.
package vllmlog
