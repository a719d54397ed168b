package scenario

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/servebench/servebench/results"
)

// Conversation makes a scenario's requests the turns of multi-turn
// sessions (PromptSpec.Conversation). Each closed-loop worker is a user:
// it runs a session's turns in order, each turn's request carrying the
// session's earlier user messages and the replies actually received, then
// starts the next session.
type Conversation struct {
	// Turns is the number of turns of a synthetic session, drawn per
	// session (a fixed count or a distribution, like a token length). A
	// dataset's conversations have their own turns.
	Turns *Dist `yaml:"turns" json:"turns,omitempty"`
	// ThinkTime is the pause between a reply's end and the session's next
	// turn (0: none).
	ThinkTime Duration `yaml:"think_time" json:"think_time,omitzero"`
}

// FormatMessages is the chat-messages dataset format: one {"messages":
// [{"role": ..., "content": ...}, ...], "output_tokens": N} per line.
const FormatMessages = "messages"

// maxTurns bounds a synthetic session's turns (a typo, not a need).
const maxTurns = 1000

// conversation checks prompts.conversation.
func (v *validator) conversation(sc *Scenario) {
	c := sc.Prompts.Conversation
	if c == nil {
		return
	}
	const f = "prompts.conversation"
	if sc.Target.API != results.APIChat {
		v.add(f, "applies to the chat API only: a turn carries the earlier turns as messages (target.api is %s)", sc.Target.API)
	}
	if c.ThinkTime < 0 {
		v.add(f+".think_time", "must be ≥ 0, got %s", c.ThinkTime)
	}
	switch {
	case sc.Prompts.Dataset.Path != "":
		if c.Turns != nil {
			v.add(f+".turns", "applies to synthetic prompts: a dataset's conversations have their own turns")
		}
		if sc.Prompts.Dataset.Format == FormatJSONL {
			v.add(f, "a %s dataset holds single prompts: use the %s or %s format", FormatJSONL, FormatShareGPT, FormatMessages)
		}
	case c.Turns == nil:
		v.add(f+".turns", "is required with synthetic prompts: the turns per session, like 4 or {dist: uniform, min: 2, max: 8}")
	default:
		v.distIn(f+".turns", c.Turns, 1, maxTurns, "turns")
	}
	if sc.Prompts.SharedPrefixTokens > 0 {
		v.add("prompts.shared_prefix_tokens", "would start every turn's new message again: a conversation's turns share their history, and request.system is a prefix every session shares")
	}
	for i, st := range sc.Load.Stages {
		if st.Warmup.Shapes {
			v.add(fmt.Sprintf("load.stages[%d].warmup.shapes", i), "does not apply to a conversation: its turns' lengths grow with their history")
		}
		field := "rate"
		if st.Trace != nil {
			field = "trace"
		}
		if st.Open() && st.Session == nil {
			v.add(fmt.Sprintf("load.stages[%d].%s", i, field),
				"a conversation runs in closed-loop stages: concurrency is the number of users, each sending its next turn after the reply")
		}
	}
}

// Session is the content of one conversation: its system message and the
// number of its turns. Prompts.Turn gives each turn's prompt.
type Session struct {
	System string // the session's own system message; "" leaves the scenario's request.system
	Turns  int
	turns  []turn // a dataset's; nil for synthetic sessions
}

// Session returns the conversation of key (a session number: a shard's
// are Index, Index+Count, …). With a dataset it is an entry's
// conversation, cycling through the shard's entries as At does; a
// synthetic session draws its number of turns. Sessions are a pure
// function of (seed, key).
func (p *Prompts) Session(key uint64) Session {
	if p.entries != nil {
		own := key / p.shards
		e := &p.entries[(p.stride*(own%p.starts)+p.shift)%p.starts]
		if len(e.turns) == 0 {
			return Session{Turns: 1, turns: []turn{{prompt: e.prompt, in: e.counted.Load(), output: e.output.Load()}}}
		}
		return Session{System: e.system, Turns: len(e.turns), turns: e.turns}
	}
	if p.turns == nil {
		return Session{Turns: 1}
	}
	var src rand.PCG
	src.Seed(p.seed^0x7e55_1075, mix(key))
	return Session{Turns: p.turns.draw(rand.New(&src))}
}

// Turn returns turn t (from 0) of session s, to be sent as the request of
// sequence number seq: a dataset turn's message, or the synthetic prompt
// of seq (a new message of the drawn length, as At gives it).
// prompts.output_tokens, when set, draws every turn's output length.
func (p *Prompts) Turn(s *Session, t int, seq uint64) Prompt {
	if s.turns == nil {
		return p.At(seq)
	}
	tt := &s.turns[t]
	out := int(tt.output)
	if p.out != nil {
		var src rand.PCG
		src.Seed(p.seed, mix(seq))
		out = p.out.draw(rand.New(&src))
	}
	return Prompt{Text: tt.prompt, InputTokens: int(tt.in), OutputTokens: max(out, 1)}
}

// parseMessages reads one {"messages": [...], "output_tokens": N} object
// per line; blank lines are skipped. Messages are {"role": "system" |
// "user" | "assistant", "content": "..."}: an optional system message
// first, then turns, each a user message and, optionally, the assistant's
// reply. A turn's output length is output_tokens when the line gives it,
// else its reply's token count; a turn with neither is an error unless
// o.haveOut (prompts.output_tokens gives every length). Only the first
// turn is kept unless o.turns.
func parseMessages(ctx context.Context, name string, r io.Reader, o readOpts) ([]entry, error) {
	l := o.lines(ctx, name, r)
	var entries []entry
	for b, ok := l.next(); ok; b, ok = l.next() {
		c, lineErrs := parseMessagesLine(b, o)
		for _, le := range lineErrs {
			le.File, le.Line = name, l.line
			if l.add(le) {
				break
			}
		}
		if len(lineErrs) == 0 {
			entries = append(entries, entry{prompt: c.turns[0].prompt, answer: c.turns[0].answer, system: c.system, at: int32(l.line)})
			e := &entries[len(entries)-1]
			e.output.Store(c.turns[0].output)
			if o.turns {
				e.turns = c.turns
			}
		}
	}
	if err := l.err(); err != nil {
		return nil, err
	}
	return entries, nil
}

// conversation is one parsed line of the messages format.
type conversation struct {
	system string
	turns  []turn // at least one
}

// parseMessagesLine parses one line of the messages format. The errors
// carry the field only; the caller sets the file and line.
func parseMessagesLine(b []byte, o readOpts) (conversation, []*FieldError) {
	var errs []*FieldError
	fail := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	var rec struct {
		Messages *[]struct {
			Role    *string         `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		OutputTokens *int `json:"output_tokens"`
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		fail("", "want a JSON object {\"messages\": [{\"role\": ..., \"content\": ...}, ...], \"output_tokens\": N}: %s", plainJSONDecode(err))
		return conversation{}, errs
	}
	switch {
	case rec.Messages == nil:
		fail("messages", "is missing")
		return conversation{}, errs
	case len(*rec.Messages) == 0:
		fail("messages", "is empty")
		return conversation{}, errs
	}
	var out int32
	if n := rec.OutputTokens; n != nil {
		if *n < 1 || *n > maxTokens {
			fail("output_tokens", "want 1 to %d, got %d", maxTokens, *n)
			return conversation{}, errs
		}
		out = int32(*n)
	}
	var c conversation
	var turns []turn
	prev := ""
	for i, m := range *rec.Messages {
		f := fmt.Sprintf("messages[%d]", i)
		var content string
		switch {
		case m.Role == nil:
			fail(f+".role", "is missing")
		case len(m.Content) == 0 || bytes.Equal(m.Content, []byte("null")):
			fail(f+".content", "is missing")
		case json.Unmarshal(m.Content, &content) != nil:
			fail(f+".content", "want a string (the message's text)")
		case content == "":
			fail(f+".content", "is empty")
		case len(content) > MaxPromptBytes:
			fail(f+".content", "%s", promptTooLong(len(content)))
		}
		if len(errs) > 0 {
			return conversation{}, errs
		}
		switch role := *m.Role; role {
		case "system":
			if i != 0 {
				fail(f+".role", "a system message comes first, before the conversation")
				return conversation{}, errs
			}
			c.system = content
		case "user":
			if prev == "user" {
				fail(f+".role", "two user messages in a row: a turn is a user message and the assistant's reply after it")
				return conversation{}, errs
			}
			turns = append(turns, turn{prompt: content, output: out})
		case "assistant":
			if prev != "user" {
				fail(f+".role", "an assistant message answers the user message before it")
				return conversation{}, errs
			}
			turns[len(turns)-1].answer = content
		default:
			fail(f+".role", "want system, user or assistant, got %q", role)
			return conversation{}, errs
		}
		prev = *m.Role
	}
	if len(turns) == 0 {
		fail("messages", "has no user message")
		return conversation{}, errs
	}
	if !o.haveOut && out == 0 {
		// Only the turns that are sent need an output length.
		last := len(turns) - 1
		if !o.turns {
			last = 0
		}
		if turns[last].answer == "" {
			fail("output_tokens", "is missing: the user message of turn %d has no assistant reply after it to give its output length", last+1)
			return conversation{}, errs
		}
	}
	c.turns = turns
	return c, nil
}
