package client

// Request is one request to send: what the run's scheduler hands the
// client. It is read, never modified, by Client.Do. It carries no
// scheduling fields: the scheduler owns Seq, Stage, Warmup and Scheduled
// on the Result and sets them on the record Do returns.
type Request struct {
	API    string // results.APIChat, APICompletions or APIEmbeddings
	Model  string
	System string // optional system message (chat only)
	Prompt string // the user message (chat), the prompt (completions) or the one input (embeddings)

	// History holds the earlier turns of a conversation (chat only), sent
	// between the system message and Prompt: each turn's user message and
	// the assistant's reply as received; or a session's messages, tool
	// calls and results included. With History, an empty Prompt sends no
	// user message after it: History ends with the message to answer.
	History []Message
	// Inputs are the texts of an embeddings request that embeds several at
	// once; when empty, Prompt is the one input.
	Inputs []string
	// Tools are tool definitions sent as the body's "tools" (chat only),
	// as the scenario gives them.
	Tools []any

	InputTokens int // intended prompt length in tokens (all inputs of an embeddings request), recorded in the Result
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

// Message is one message of a conversation's history.
type Message struct {
	Role    string // "user", "assistant" or "tool"
	Content string // omitted when empty (an assistant message that only calls tools)
	// ToolCalls are an assistant message's function calls.
	ToolCalls []ToolCall
	// ToolCallID is the call a tool message answers.
	ToolCallID string
}

// ToolCall is one function call of an assistant message, sent as
// {"id", "type": "function", "function": {"name", "arguments"}}.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // JSON text
}

// Body returns the JSON body Do sends for r.
func (r *Request) Body() ([]byte, error) { return encodeBody(r) }
