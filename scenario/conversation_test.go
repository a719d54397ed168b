package scenario

import (
	"errors"
	"strings"
	"testing"
)

// TestMessagesSessions reads testdata/messages.jsonl as conversations:
// every turn in order, the system message, and each turn's output length
// from the line's output_tokens or else its answer's token count.
func TestMessagesSessions(t *testing.T) {
	t.Parallel()
	p := mustPrompts(t, "name: m\nprompts: {dataset: {path: messages.jsonl, format: messages}, conversation: {}}\n"+stages)
	if p.Len() != 3 {
		t.Fatalf("%d sessions, want 3", p.Len())
	}
	byFirst := map[string]Session{}
	for key := range uint64(3) {
		s := p.Session(key)
		first := p.Turn(&s, 0, key)
		byFirst[first.Text] = s
	}
	s, ok := byFirst["What is a KV cache?"]
	if !ok {
		t.Fatalf("sessions %v lack the first line's", byFirst)
	}
	if s.System != "You answer in one sentence." || s.Turns != 3 {
		t.Errorf("first line: system %q, %d turns: want its system message and 3 turns", s.System, s.Turns)
	}
	want := []string{"What is a KV cache?", "Why does it grow?", "And prefix caching?"}
	for i, w := range want {
		tp := p.Turn(&s, i, uint64(i))
		if tp.Text != w || tp.OutputTokens != 24 || tp.InputTokens != p.Tokenizer().Count(w) {
			t.Errorf("turn %d = %+v: want %q, 24 output tokens (the line's), %d input tokens", i, tp, w, p.Tokenizer().Count(w))
		}
	}
	s = byFirst["Name a prime number."]
	if s.Turns != 2 || s.System != "" {
		t.Fatalf("second line: %d turns, system %q", s.Turns, s.System)
	}
	if got, want := p.Turn(&s, 1, 0).OutputTokens, p.Tokenizer().Count("Eleven, which is also prime."); got != want {
		t.Errorf("second line, turn 2: %d output tokens, want the answer's %d", got, want)
	}

	// Without a conversation, a line is its first turn.
	single := mustPrompts(t, "name: m\nprompts: {dataset: {path: messages.jsonl, format: messages}}\n"+stages)
	seen := map[string]bool{}
	for seq := range uint64(3) {
		seen[single.At(seq).Text] = true
	}
	if !seen["What is a KV cache?"] || !seen["Name a prime number."] || !seen["Say hello."] {
		t.Errorf("single-turn prompts %v: want each line's first user message", seen)
	}
}

// TestShareGPTSessions: in a conversation scenario ShareGPT uses every
// turn of a conversation, not the first only.
func TestShareGPTSessions(t *testing.T) {
	t.Parallel()
	p := mustPrompts(t, "name: s\nprompts: {dataset: {path: sharegpt.json}, conversation: {}}\n"+stages)
	turns := map[string]int{}
	for key := range uint64(p.Len()) {
		s := p.Session(key)
		turns[p.Turn(&s, 0, key).Text] = s.Turns
		if s.Turns == 2 {
			if got := p.Turn(&s, 1, key).Text; got != "Another one." {
				t.Errorf("the haiku conversation's second turn is %q", got)
			}
			if s.System != "ignored" {
				t.Errorf("the haiku conversation's system message is %q", s.System)
			}
		}
	}
	if turns["Write a haiku about GPUs."] != 2 || turns["What is the capital of France?"] != 1 {
		t.Errorf("turns by first message = %v: want the haiku conversation's 2 turns", turns)
	}
}

// TestSyntheticSessions: a synthetic session draws its turn count from
// conversation.turns, as a pure function of the seed and the session.
func TestSyntheticSessions(t *testing.T) {
	t.Parallel()
	const doc = "name: s\nprompts: {input_tokens: 32, output_tokens: 8, conversation: {turns: {dist: uniform, min: 2, max: 5}}}\n" + stages
	p, q := mustPrompts(t, doc), mustPrompts(t, doc)
	counts := map[int]int{}
	for key := range uint64(200) {
		s := p.Session(key)
		if s.Turns < 2 || s.Turns > 5 || q.Session(key).Turns != s.Turns {
			t.Fatalf("session %d: %d turns (again: %d)", key, s.Turns, q.Session(key).Turns)
		}
		counts[s.Turns]++
		if tp := p.Turn(&s, 1, 1000+key); tp != p.At(1000+key) {
			t.Errorf("a synthetic turn is not the prompt of its sequence number")
		}
	}
	if len(counts) != 4 {
		t.Errorf("turn counts %v: want each of 2 to 5", counts)
	}
}

func TestMessagesErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, data string
		o          readOpts
		want       string
	}{
		{"not json", "{", readOpts{}, `d:1: want a JSON object {"messages": [{"role": ..., "content": ...}, ...], "output_tokens": N}`},
		{"missing", `{"output_tokens": 3}`, readOpts{}, "d:1: messages: is missing"},
		{"empty", `{"messages": []}`, readOpts{}, "d:1: messages: is empty"},
		{"role", `{"messages": [{"role": "tool", "content": "x"}]}`, readOpts{}, `d:1: messages[0].role: want system, user or assistant, got "tool"`},
		{"no role", `{"messages": [{"content": "x"}]}`, readOpts{}, `d:1: messages[0].role: is missing`},
		{"parts", `{"messages": [{"role": "user", "content": [{"type": "text"}]}]}`, readOpts{}, `d:1: messages[0].content: want a string`},
		{"empty content", `{"messages": [{"role": "user", "content": ""}]}`, readOpts{}, `d:1: messages[0].content: is empty`},
		{"two users", "\n" + `{"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}`, readOpts{}, `d:2: messages[1].role: two user messages in a row`},
		{"assistant first", `{"messages": [{"role": "assistant", "content": "a"}]}`, readOpts{}, `d:1: messages[0].role: an assistant message answers the user message before it`},
		{"late system", `{"messages": [{"role": "user", "content": "a"}, {"role": "system", "content": "s"}]}`, readOpts{}, `d:1: messages[1].role: a system message comes first`},
		{"only system", `{"messages": [{"role": "system", "content": "s"}]}`, readOpts{}, `d:1: messages: has no user message`},
		{"no output", `{"messages": [{"role": "user", "content": "a"}]}`, readOpts{}, `d:1: output_tokens: is missing: the user message of turn 1 has no assistant reply`},
		{"last turn without output", `{"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]}`, readOpts{turns: true}, `d:1: output_tokens: is missing: the user message of turn 2`},
		{"bad output", `{"messages": [{"role": "user", "content": "a"}], "output_tokens": 0}`, readOpts{}, `d:1: output_tokens: want 1 to 2097152, got 0`},
		{"jsonl hint", `{"messages": [{"role": "user", "content": "a"}]}`, readOpts{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var err error
			if tc.want == "" {
				// A messages line read as the jsonl format says which
				// format it is.
				_, err = parseJSONL(t.Context(), "d", strings.NewReader(tc.data), readOpts{})
				tc.want = "d:1: prompt: is missing: a line of messages is the messages format (prompts.dataset.format: messages)"
			} else {
				_, err = parseMessages(t.Context(), "d", strings.NewReader(tc.data), tc.o)
			}
			var fe *FieldError
			if err == nil || !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want a *FieldError containing %q", err, tc.want)
			}
			for _, e := range unwrapAll(err) {
				if g := goTypeIn(e); g != "" {
					t.Errorf("%q names a Go type (%s)", e, g)
				}
			}
		})
	}
	// A line whose last turn lacks an output length is fine when the
	// scenario gives every length, or when only its first turn is sent.
	for _, o := range []readOpts{{turns: true, haveOut: true}, {}} {
		if _, err := parseMessages(t.Context(), "d", strings.NewReader(`{"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]}`), o); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
}
