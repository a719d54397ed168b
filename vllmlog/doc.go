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
// It consumes log text of vLLM 0.11 to 0.19 as people have it: raw, or
// pasted from a terminal or a web page, with or without the "(APIServer
// pid=N)" / "(EngineCore_DP0 pid=N)" prefixes, with ANSI colours, CR line
// ends, progress bars redrawn in place, markdown quoting and fences, and
// several server starts in one file. Lines are read one at a time
// (bufio.Scanner, lines up to MaxLineBytes) and only the figures are kept,
// in bounded memory (MaxRuns, MaxPoints); a line it does not recognise is
// skipped, never an error. It produces a Report (JSON schema Schema),
// written as text, Markdown or JSON by Write, plots and logs.json by
// WriteFiles (through package chart), or, with Follow, one line per new
// stats line as a growing log is written.
//
// The KV check shares its arithmetic with the simulator
// (internal/kvcapacity). Its model descriptions are built in for the
// models of the project's seed logs (gpt-oss-120b and -20b,
// DeepSeek-R1-Distill-Qwen-32B, Gemma 4 31B and 26B-A4B); any other model
// is described by its Hugging Face config.json (Options.ModelConfig).
package vllmlog
