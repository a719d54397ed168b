package results

import (
	"encoding/json"
	"fmt"
	"time"
)

// Schema is the version of the results-file format (header, request and
// scrape records). It changes only when a field changes meaning or is removed.
const Schema = 1

// Kind is the kind of a record: the "kind" field of every line in a
// results file, written by the codec.
type Kind string

// Record kinds.
const (
	KindHeader  Kind = "header"
	KindRequest Kind = "request"
	KindScrape  Kind = "scrape"
	KindWarning Kind = "warning"
	KindEnd     Kind = "end"
)

// API names the OpenAI endpoint a request went to (Result.API).
const (
	APIChat        = "chat"        // POST /v1/chat/completions
	APICompletions = "completions" // POST /v1/completions
	APIEmbeddings  = "embeddings"  // POST /v1/embeddings
)

// Warning is a non-fatal problem met during a run (a server without
// /metrics, a harness that fell behind, …), kept in the results file so
// that a report rebuilt from the file shows it.
type Warning struct {
	At      time.Duration `json:"at_ns"`
	Source  string        `json:"source"` // the component that warned: "scrape", "runner", "harness"
	Message string        `json:"message"`
}

// Harness is what a run measured of its own client: whether the load
// generator, not the server, limited the figures. A run is limited by its
// client when its goroutines waited long to run (it did not get the CPU in
// time), used
// most of its cores, paused long for garbage collection, or blocked on its
// results writer; Reason then says which, with the numbers.
type Harness struct {
	Limited            bool    `json:"limited"`
	Reason             string  `json:"reason,omitempty"`
	Cores              int     `json:"cores"`                // GOMAXPROCS
	CPUShare           float64 `json:"cpu_share"`            // process CPU over the load's wall time × cores
	SimulatorInProcess bool    `json:"simulator_in_process"` // the simulator shared the process's CPU
	LatenessP50MS      float64 `json:"sched_latency_p50_ms"` // how long goroutines waited, runnable, to run, ms
	LatenessP99MS      float64 `json:"sched_latency_p99_ms"`
	LatenessMaxMS      float64 `json:"sched_latency_max_ms"`
	GCPauseMS          float64 `json:"gc_pause_ms"` // garbage-collection pauses during the run, in all
	GCCycles           int     `json:"gc_cycles"`
	BlockedMS          float64 `json:"writer_blocked_ms"` // request goroutines blocked on the results writer, in all
	// OtherCores is how many cores other processes kept busy during the
	// load, on average (Linux; 0 elsewhere): the machine's CPU not left
	// to this one.
	OtherCores float64 `json:"other_processes_cores,omitempty"`
	// FullReadShare is the share of the stream readers' reads that found
	// a full buffer waiting: near 1 when the readers, not the server, set
	// the pace, near 0 when they wait for each chunk. ReaderBusyShare is
	// the share of their reading time spent between reads (decoding,
	// recording, waiting for a CPU) rather than inside them.
	ReaderBusyShare float64 `json:"reader_busy_share,omitempty"`
	FullReadShare   float64 `json:"full_read_share,omitempty"`
}

// End is the last record of a run that ended by itself, interrupted or
// not. A results file whose header says Ends and that has no End was cut
// short: the process was killed.
type End struct {
	At        time.Duration `json:"at_ns"`             // when the run ended, from the epoch
	Completed bool          `json:"completed"`         // every stage ran to its own bound
	Reason    string        `json:"reason,omitempty"`  // why not: the interruption, load.max_duration, a writer failure
	Harness   *Harness      `json:"harness,omitempty"` // the client's own figures and verdict
	// Began is when the load began, from the epoch: after the connections
	// were opened, the first scrape taken and, for a shard, the agreed
	// start (Shard.StartAt) reached. 0 when the load never began.
	Began time.Duration `json:"began_ns,omitempty"`
	// Until says how each stage with a precision goal (load.stages[].until)
	// ended.
	Until []Until `json:"until,omitempty"`
}

// Until is how a stage with a precision goal ended: whether its figure
// reached the margin at the confidence, and the figure's last estimate
// and interval (milliseconds) over the samples it had.
type Until struct {
	Stage      int     `json:"stage"`
	Metric     string  `json:"metric"`     // "ttft_ms.p99"
	Margin     float64 `json:"margin"`     // the goal: relative half-width
	Confidence float64 `json:"confidence"` // the interval's level
	Reached    bool    `json:"reached"`    // the stage ended because the goal was met
	Samples    int     `json:"samples"`    // measured successful requests' observations
	// Estimate, Lo and Hi are the figure and its interval when the stage
	// ended; Achieved is the interval's larger half-width relative to
	// the estimate. Absent (Lo = Hi = 0, Achieved 0) while the samples
	// were too few for an interval.
	Estimate float64 `json:"estimate_ms"`
	Lo       float64 `json:"lo_ms,omitempty"`
	Hi       float64 `json:"hi_ms,omitempty"`
	Achieved float64 `json:"achieved_margin,omitempty"`
}

// Outcome is how a scheduled request ended. Every scheduled request ends as
// exactly one record with one of these outcomes.
type Outcome string

// Outcomes.
const (
	OK       Outcome = "ok"       // the response completed (finish_reason or [DONE] seen, or a whole JSON body)
	Failed   Outcome = "failed"   // the request failed; ErrorClass says how
	Canceled Outcome = "canceled" // the run was stopped while the request was in flight
	Dropped  Outcome = "dropped"  // open loop: the arrival found no free slot and was never sent
)

// ErrorClass is a stable classification of a failed request. Reports count
// failures by class; the classes never change meaning.
type ErrorClass string

// Error classes.
const (
	ErrConnect          ErrorClass = "connect"            // dial or TLS failure, connection refused or reset before a response
	ErrHTTP4xx          ErrorClass = "http_4xx"           // the server answered 4xx (Status and Error hold the code and a body excerpt)
	ErrHTTP5xx          ErrorClass = "http_5xx"           // the server answered 5xx
	ErrTimeout          ErrorClass = "timeout"            // a first-byte, idle-stream or total timeout expired
	ErrStreamTruncated  ErrorClass = "stream_truncated"   // EOF without finish_reason or [DONE]
	ErrMalformedChunk   ErrorClass = "malformed_chunk"    // a data line that is not the expected JSON
	ErrServerErrorEvent ErrorClass = "server_error_event" // the server sent an error object inside the stream
	ErrCanceled         ErrorClass = "canceled"           // the run's context was canceled mid-request
	ErrNotSSE           ErrorClass = "not_sse"            // a streaming request answered 2xx with no event stream (HTML, JSON, binary, compressed)
)

// Outcomes lists every Outcome, in the order reports give them.
func Outcomes() []Outcome { return []Outcome{OK, Failed, Canceled, Dropped} }

// ErrorClasses lists every ErrorClass.
func ErrorClasses() []ErrorClass {
	return []ErrorClass{ErrConnect, ErrHTTP4xx, ErrHTTP5xx, ErrTimeout, ErrStreamTruncated, ErrMalformedChunk,
		ErrServerErrorEvent, ErrCanceled, ErrNotSSE}
}

// Header is the first record of a results file.
type Header struct {
	Schema  int       `json:"schema"` // Schema
	Tool    string    `json:"tool"`   // "servebench"
	Version string    `json:"version"`
	Started time.Time `json:"started"` // wall-clock time of the run's epoch; every *_ns offset counts from it
	Host    string    `json:"host,omitempty"`
	// RunID identifies the run (random, set by the run); merging refuses
	// two files of one run.
	RunID  string `json:"run_id,omitempty"`
	Target string `json:"target"` // base URL requests went to (sim://PRESET is resolved to its loopback URL)
	Model  string `json:"model"`
	// ServerVersion is what the server answered to GET /version at the
	// start of the run ("0.11.2" from vLLM); empty when it did not answer.
	ServerVersion string          `json:"server_version,omitempty"`
	Scenario      json.RawMessage `json:"scenario"` // the resolved scenario, defaults applied; never holds secrets

	// Ends is true when the file's last record is an End once the run
	// ended by itself (files from before End existed lack both), so that a
	// file without one is known to be cut short.
	Ends bool `json:"ends,omitempty"`

	// Shard says which share of a sharded run's load the file holds (bench
	// run --shard); nil for a whole run. Scenario is then the whole
	// scenario, the same in every shard's file: the shard's own share of
	// each stage follows from it and the shard (scenario.Shard).
	Shard *Shard `json:"shard,omitempty"`
	// Virtual is true for a run of the built-in simulator in virtual time
	// (`bench run --virtual`, `bench predict`): no HTTP and no client, the
	// engine's clock only. Target is then the sim:// URL.
	Virtual bool `json:"virtual,omitempty"`
	// Slots is how many requests the server said it runs at once, and
	// where it said so (llama.cpp's GET /props total_slots); nil when it
	// did not say.
	Slots *Slots `json:"slots,omitempty"`
	// WarmUp is the connection warm-up that preceded the load (within
	// the time before End.Began); nil when none ran.
	WarmUp *WarmUp `json:"warm_up,omitempty"`

	// Spec is the part of Scenario that reports read, decoded once by the
	// Reader (nil when the header has no scenario). It is not written:
	// Scenario is the record of what ran.
	Spec *Spec `json:"-"`
}

// Result is the record of one scheduled request. It holds raw observations
// only; every derived figure (TTFT, ITL, TPOT, …) is a method, so the
// definitions live in one place (figures.go). The client fills the
// observations; the run's scheduler owns Seq, Stage, Warmup and Scheduled.
//
// Times are offsets from the run's epoch (Header.Started) taken with the
// monotonic clock, encoded in nanoseconds. A zero offset means the event did
// not happen: the epoch precedes every send, so no real event is at zero.
type Result struct {
	Seq     uint64  `json:"seq"` // unique within a run, in scheduling order
	Stage   int     `json:"stage"`
	Warmup  bool    `json:"warmup,omitempty"` // excluded from statistics
	Outcome Outcome `json:"outcome"`
	API     string  `json:"api"` // "chat", "completions" or "embeddings"
	Stream  bool    `json:"stream"`

	// Session and Turn place a request in a conversation: Session numbers
	// the conversation (from 1, unique within a run, shards included) and
	// Turn is the request's turn in it (from 1). Both are 0 for a request
	// that is not part of one, as in files written before conversations.
	Session uint64 `json:"session,omitempty"`
	Turn    int    `json:"turn,omitempty"`
	// Agent is, in a session stage, 0 for the session's own requests and
	// k for those of its k-th sub-agent (whose Turn counts its own
	// requests). SessionEnd flags the session's last request: a session
	// completed when that request did.
	Agent      int  `json:"agent,omitempty"`
	SessionEnd bool `json:"session_end,omitempty"`

	Scheduled    time.Duration `json:"scheduled_ns"`               // when the load model wanted it sent
	Sent         time.Duration `json:"sent_ns,omitempty"`          // just before the request was written
	Written      time.Duration `json:"written_ns,omitempty"`       // the request was written to the connection (on the wire)
	Headers      time.Duration `json:"headers_ns,omitempty"`       // response headers arrived
	FirstToken   time.Duration `json:"first_token_ns,omitempty"`   // first chunk carrying content, text or reasoning
	FirstContent time.Duration `json:"first_content_ns,omitempty"` // first chunk carrying content or text (not reasoning)
	LastToken    time.Duration `json:"last_token_ns,omitempty"`    // last token-bearing chunk
	End          time.Duration `json:"end_ns,omitempty"`           // the response (or the failure) ended

	// ChunkTimes are the arrival offsets, from Sent, of every token-bearing
	// chunk, in order. ChunkTokens, when not empty, holds the number of
	// tokens in each chunk (known from continuous usage stats); when empty
	// each chunk counts as OutputTokens/len(ChunkTimes) tokens.
	ChunkTimes  []time.Duration `json:"chunk_ns,omitempty"`
	ChunkTokens []int32         `json:"chunk_tokens,omitempty"`

	InputTokens  int `json:"input_tokens,omitempty"`  // prompt length the scenario intended (all inputs of an embeddings request)
	Inputs       int `json:"inputs,omitempty"`        // texts embedded by an embeddings request; 0 for other APIs
	MaxTokens    int `json:"max_tokens,omitempty"`    // output length asked for
	PromptTokens int `json:"prompt_tokens,omitempty"` // from the server's usage
	// PromptTokensDiff is PromptTokens minus the count the run expected
	// the server to give: InputTokens plus what the server adds around a
	// prompt as far as the run knows it (the system message; with the
	// server's tokenizer, the measured chat template and special tokens).
	// A tokenizer that is not the model's shows here. Meaningful only when
	// PromptTokens and InputTokens are both set (see PromptCounts); files
	// written before it existed read 0.
	PromptTokensDiff int `json:"prompt_tokens_diff,omitempty"`
	OutputTokens     int `json:"output_tokens,omitempty"` // from the server's usage, or counted locally
	ReasoningTokens  int `json:"reasoning_tokens,omitempty"`
	CachedTokens     int `json:"cached_tokens,omitempty"` // prompt tokens served from the prefix cache, when reported
	// DraftTokens and DraftAccepted are the draft tokens the server tested
	// for this request's speculative decoding and those it accepted, when
	// it reports them per request (llama.cpp's timings.draft_n and
	// draft_n_accepted); 0 when it does not, or did not speculate.
	DraftTokens   int    `json:"draft_tokens,omitempty"`
	DraftAccepted int    `json:"draft_accepted_tokens,omitempty"`
	Estimated     bool   `json:"tokens_estimated,omitempty"` // no usage from the server: counts are local estimates
	FinishReason  string `json:"finish_reason,omitempty"`

	// Retries is how many times the request was sent again on a fresh
	// connection because the pooled connection it first got had been closed
	// by the server before any response byte (a broken keep-alive). Sent
	// stays the first attempt's time.
	Retries int `json:"retries,omitempty"`
	// ResentWritten is how many of those earlier sends had been written
	// whole before the connection failed: the server may have read and
	// processed them (a server that closes a connection while it works on
	// its request), work that no record counts. A send not written whole
	// cannot have been processed.
	ResentWritten int `json:"resent_written,omitempty"`

	Status     int        `json:"status,omitempty"` // HTTP status, when a response arrived
	ErrorClass ErrorClass `json:"error_class,omitempty"`
	Error      string     `json:"error,omitempty"` // message, with a body excerpt for HTTP errors
}

// Shed reports whether the request failed because the server refused it
// to shed load: HTTP 429 Too Many Requests or 503 Service Unavailable. Such
// a server is serving, and says it is full.
func (r *Result) Shed() bool {
	return r.Outcome == Failed && (r.Status == 429 || r.Status == 503)
}

// WarmUp is what a run's connection warm-up did before the load: it asks
// for the connections the load will need at once and keeps those the
// server answered before answers stopped coming.
type WarmUp struct {
	Wanted   int           `json:"wanted"`      // connections asked for
	Opened   int           `json:"opened"`      // connections the server answered, now in the pool
	Duration time.Duration `json:"duration_ns"` // how long it took
}

// String says what the warm-up did, in a line.
func (w WarmUp) String() string {
	s := fmt.Sprintf("connection warm-up: %d of %d connections opened in %s", w.Opened, w.Wanted, w.Duration.Round(time.Millisecond))
	if w.Opened < w.Wanted {
		s += " (the server answered no more at once; the load opens the others as it needs them, and they may wait for the server to free one)"
	}
	return s
}

// Slots is a server's own word on how many requests it runs at once.
type Slots struct {
	N      int    `json:"n"`
	Source string `json:"source"` // where the server said it: "GET /props total_slots", "GET /slots"
}
