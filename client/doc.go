// Package client is servebench's streaming client: it sends one request to
// an OpenAI-compatible server (vLLM first) and records what happened as one
// Result, with monotonic timestamps taken the moment bytes arrive.
//
// It consumes a Request from the run's scheduler (chat or completions,
// streaming or not, with vLLM's extra body fields) and produces a
// results.Result: raw observations only (offsets from the run's epoch,
// per-chunk arrival times, token counts, outcome and error class), which
// the run writes to the results file and report aggregates. Failures are
// data: Do never returns an error. The record types live in package
// results, which imports the standard library only, so that a program
// that reads results files links none of this package's dependencies.
//
// # Timestamps
//
// Every offset is time.Now() − epoch, with the monotonic clock, where the
// epoch is the run's start (Config.Epoch). Scheduled is when the load model
// wanted the request sent; Sent is taken just before the request is handed
// to the transport (so it includes a dial when no pooled connection is
// free); Headers when the response headers have been read. In a stream each
// SSE line is stamped with the moment the read that brought its last bytes
// returned, before any decoding: the lines of one read arrived together.
// ChunkTimes are offsets from Sent, not from the epoch.
//
// # Reading chunks
//
// A chunk is read by a byte scanner (scan.go) that finds the facts the
// client records (a token-bearing delta, finish_reason, usage) while
// checking the chunk is well-formed JSON, and by a per-stream template
// for the chunks that differ from the previous one only in their token's
// string. Whatever the scanner does not read exactly as the full decoder
// would (an in-band error, an odd member name, invalid JSON) goes to the
// full decoder; fuzz tests hold the two to the same facts, and
// testdata/chunks holds each engine's chunk shapes with their sources.
//
// # Connections
//
// One Client serves a run. Do sends on connections of its own (wire.go):
// HTTP/1.1, one stream per connection, no compression, no proxy, no
// redirects, loopback addresses only, an idle pool of Config.MaxConns
// connections to the one host. Each stream costs one goroutine, the
// caller's (net/http's transport adds a reader and a writer goroutine per
// connection), and one read buffer per connection: about 26 KiB per
// in-flight stream in all (BenchmarkInFlight); a connection whose stream
// outpaced its reader reads the next through a 64 KiB buffer. The request
// is written in one write; the response head is read with net/http's
// ReadResponse. An idle connection the server closed is found by a peek
// before it is reused, and a request that failed on a reused connection
// before any response byte is sent once more on a new one
// (Result.Retries, and Result.ResentWritten when the first send had been
// written whole on a connection closed in order). Client.WarmUp opens that
// many connections before the load starts (a GET /v1/models on each), so
// that the first requests neither pay for a dial nor queue behind a burst
// of them; it keeps those the server answers and stops waiting once
// answers stop (a server with few HTTP threads serves only so many at
// once), so it never holds a run back for long, and it reports what it
// opened and how long it took (results.WarmUp). A stream that ended with
// [DONE] is read to its end (at most 200 ms more) so that its connection
// returns to the pool. The other calls (models, version, tokenize) go
// through net/http.
//
// # Tokens and chunks
//
// A token-bearing chunk is one whose choices carry non-empty content
// (chat), text (completions), reasoning or reasoning_content, or a
// tool-call delta that names a function or carries a piece of its
// arguments. A role-only chunk, an empty string, "content": null and
// "tool_calls": [] are not tokens. FirstToken is the first token-bearing
// chunk; FirstContent the first chunk carrying content, text or a tool
// call (the answer, not the reasoning), which for a reasoning model comes
// after the reasoning; LastToken the last token-bearing chunk. So the TTFT
// of an agent's turn that answers with a tool call is the time to the
// call's first delta, and its ITL the gaps between the argument pieces.
//
// Token counts come from the server's usage (stream_options.include_usage);
// the last usage object seen is authoritative. With vLLM's
// continuous_usage_stats every chunk carries the cumulative
// completion_tokens, and ChunkTokens holds each token-bearing chunk's
// increase (tokens reported by chunks without text are carried into the
// next token-bearing chunk). When the server sends no usage, a stream counts
// one token per token-bearing chunk and a non-streaming response is counted
// with the offline o200k_base tokenizer; both set Estimated.
//
// llama.cpp's server adds a timings object to a stream's last chunk (or,
// with timings_per_token, to every chunk, cumulative) and to a whole
// answer: its cache_n fills CachedTokens when the usage reports none,
// and its draft_n and draft_n_accepted (sent only when the request
// speculated) fill DraftTokens and DraftAccepted; the last seen wins.
//
// # Derived figures (methods on results.Result)
//
// Each is defined only for an OK request and reports ok=false otherwise:
//
//	TTFT             = FirstToken − Sent          time to first token (content or reasoning)
//	TTFTFromSchedule = FirstToken − Scheduled     as seen on the load model's schedule
//	TTFC             = FirstContent − Sent        time to first content (after reasoning)
//	E2E              = End − Sent                 end-to-end latency
//	E2EFromSchedule  = End − Scheduled
//	ScheduleLag      = Sent − Scheduled           defined for every sent request
//	TPOT             = (LastToken − FirstToken) / (OutputTokens − 1)
//
// Inter-token latency (ITL) is reported per token by AppendITLs: a chunk
// of k tokens arriving Δ after the previous token-bearing chunk contributes
// k gaps of Δ/k, with k from ChunkTokens when recorded, else the
// OutputTokens − 1 tokens after the first spread evenly over the chunks
// after the first (so that the mean per-token ITL equals TPOT). AppendChunkITLs reports ITL per chunk (the
// gaps between consecutive token-bearing chunks), as vLLM's `bench serve`
// does. Both ITL and TPOT exclude the first token: its latency is TTFT.
// A non-streaming request has no chunk times, so only E2E (and the schedule
// figures) are defined for it.
//
// # Failures
//
// A request that failed has Outcome Failed and one ErrorClass: connect (no
// response: dial refused or timed out, connection reset), http_4xx/http_5xx
// (Status and a body excerpt of at most errorExcerptBytes in Error; a 3xx
// counts as http_4xx since redirects are not followed, and so does a request
// the client could not encode, which is not sent),
// timeout (first-byte, idle-stream or total, see Config),
// stream_truncated (the body ended or broke without finish_reason or
// [DONE]), malformed_chunk (a data line that is not a JSON chunk, or longer
// than maxLineBytes), server_error_event (an in-band {"error": …} chunk or
// an "event: error" line). A request whose context was canceled has Outcome
// Canceled and class canceled.
package client
