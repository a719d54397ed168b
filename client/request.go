package client

// Request is one request to send: what the run's scheduler hands the
// client. It is read, never modified, by Client.Do. It carries no
// scheduling fields: the scheduler owns Seq, Stage, Warmup and Scheduled
// on the Result and sets them on the record Do returns.
type Request struct {
	API    string // APIChat or APICompletions
	Model  string
	System string // optional system message (chat only)
	Prompt string // the user message (chat) or the prompt (completions)

	InputTokens int // intended prompt length in tokens, recorded in the Result
	// PromptOverhead is what the server is expected to count beyond
	// InputTokens (a system message, a chat template, special tokens),
	// as far as known: Result.PromptTokensDiff is the server's count minus
	// their sum.
	PromptOverhead int
	MaxTokens      int // max_tokens; 0 leaves it to the server
	MinTokens      int // vLLM min_tokens; 0 omits it
	IgnoreEOS      bool
	Temperature    *float64 // nil omits it; a pointer to 0 sends "temperature": 0

	Stream          bool // stream with SSE (the default in scenarios)
	IncludeUsage    bool // stream_options.include_usage
	ContinuousUsage bool // stream_options.continuous_usage_stats (vLLM): per-chunk token counts

	// Extra holds arbitrary top-level body fields merged into the JSON
	// request (for example vLLM's top_k or chat_template_kwargs). Keys the
	// client sets itself are overridden by Extra.
	Extra map[string]any
}
