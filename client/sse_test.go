package client

import (
	"github.com/servebench/servebench/results"

	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSSEStreams runs the SSE reader over recorded-shape streams from
// several engines (testdata/sse, quirks from ENGINES.md and VLLM-NOTES §5).
func TestSSEStreams(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file         string
		class        results.ErrorClass // "" for OK
		chunks       int                // token-bearing chunks
		contentAfter int                // index of the first content chunk among them; -1 for none
		output       int
		prompt       int
		cached       int
		reasoning    int
		chunkTokens  []int32
		drafted      int // llama.cpp's timings.draft_n, draft_n_accepted
		accepted     int
		estimated    bool
		finish       string
		errContains  string
	}{
		{file: "vllm_chat.sse", chunks: 3, output: 3, prompt: 9, finish: "stop"},
		{file: "vllm_completions.sse", chunks: 3, output: 3, prompt: 5, finish: "length"},
		{file: "vllm_reasoning.sse", chunks: 3, contentAfter: 2, output: 6, prompt: 4, reasoning: 3, finish: "stop"},
		{file: "vllm_tool_calls.sse", chunks: 3, output: 12, prompt: 21, finish: "tool_calls"},
		{file: "vllm_continuous.sse", chunks: 2, contentAfter: 1, output: 6, prompt: 4, cached: 2, chunkTokens: []int32{3, 2}, finish: "stop"},
		{file: "vllm_error_event.sse", class: results.ErrServerErrorEvent, chunks: 1, output: 1, estimated: true, errContains: "KV cache load failed"},
		{file: "llamacpp_chat.sse", chunks: 2, contentAfter: 1, output: 3, prompt: 7, finish: "stop"},
		{file: "llamacpp_spec.sse", chunks: 2, output: 8, prompt: 12, cached: 4, drafted: 11, accepted: 5, finish: "length"},
		{file: "llamacpp_spec_per_chunk.sse", chunks: 2, output: 2, cached: 7, drafted: 30, accepted: 12, estimated: true, finish: "stop"},
		{file: "llamacpp_error.sse", class: results.ErrServerErrorEvent, chunks: 1, output: 1, estimated: true, errContains: "slot unavailable"},
		{file: "sglang_chat.sse", chunks: 1, output: 1, prompt: 3, finish: "stop"},
		{file: "tgi_chat.sse", chunks: 2, output: 3, prompt: 2, finish: "eos_token"},
		{file: "tgi_error_old.sse", class: results.ErrServerErrorEvent, chunks: 1, output: 1, estimated: true, errContains: "CUDA OOM"},
		{file: "trtllm_chat.sse", chunks: 2, output: 2, prompt: 5, cached: 4, chunkTokens: []int32{1, 1}, finish: "stop"},
		{file: "ollama_nousage.sse", chunks: 3, contentAfter: 1, output: 3, estimated: true, finish: "stop"},
		{file: "crlf_ping.sse", chunks: 1, output: 1, estimated: true, finish: "length"},
		{file: "event_error.sse", class: results.ErrServerErrorEvent, chunks: 1, output: 1, estimated: true, errContains: "overloaded"},
		{file: "truncated.sse", class: results.ErrStreamTruncated, chunks: 1, output: 1, estimated: true},
		{file: "finish_no_done.sse", chunks: 2, output: 2, estimated: true, finish: "stop"},
		{file: "malformed.sse", class: results.ErrMalformedChunk, chunks: 1, output: 1, estimated: true},
	}
	for _, tc := range tests {
		t.Run(strings.TrimSuffix(tc.file, ".sse"), func(t *testing.T) {
			t.Parallel()
			body, err := os.ReadFile(filepath.Join("testdata", "sse", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			var res results.Result
			fail, _ := pumpBytes(newStream(), body, &res)
			var class results.ErrorClass
			if fail != nil {
				class = fail.class
				if !strings.Contains(fail.msg, tc.errContains) {
					t.Errorf("message %q does not contain %q", fail.msg, tc.errContains)
				}
			}
			if class != tc.class {
				t.Fatalf("class %q (%v), want %q", class, fail, tc.class)
			}
			if len(res.ChunkTimes) != tc.chunks {
				t.Errorf("%d token chunks, want %d", len(res.ChunkTimes), tc.chunks)
			}
			if res.OutputTokens != tc.output || res.PromptTokens != tc.prompt || res.CachedTokens != tc.cached || res.ReasoningTokens != tc.reasoning {
				t.Errorf("tokens output %d prompt %d cached %d reasoning %d, want %d %d %d %d",
					res.OutputTokens, res.PromptTokens, res.CachedTokens, res.ReasoningTokens, tc.output, tc.prompt, tc.cached, tc.reasoning)
			}
			if res.DraftTokens != tc.drafted || res.DraftAccepted != tc.accepted {
				t.Errorf("drafts %d accepted %d, want %d %d", res.DraftTokens, res.DraftAccepted, tc.drafted, tc.accepted)
			}
			if res.Estimated != tc.estimated {
				t.Errorf("estimated %v, want %v", res.Estimated, tc.estimated)
			}
			if class == "" && !slices.Equal(res.ChunkTokens, tc.chunkTokens) {
				t.Errorf("chunk tokens %v, want %v", res.ChunkTokens, tc.chunkTokens)
			}
			if res.FinishReason != tc.finish {
				t.Errorf("finish %q, want %q", res.FinishReason, tc.finish)
			}
			if tc.chunks > 0 {
				if res.FirstToken == 0 || res.LastToken < res.FirstToken {
					t.Errorf("first token %v, last %v", res.FirstToken, res.LastToken)
				}
				// The first content chunk is the (contentAfter)th token chunk:
				// its stamp is at least that chunk's stamp.
				if res.FirstContent != 0 && res.FirstContent < res.FirstToken {
					t.Errorf("first content %v before first token %v", res.FirstContent, res.FirstToken)
				}
				if tc.contentAfter > 0 && res.FirstContent == 0 && class == "" {
					t.Errorf("no first content")
				}
			}
		})
	}
}

// TestSSELongLine checks lines beyond the bufio buffer, up to maxLineBytes,
// and the refusal beyond it.
func TestSSELongLine(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 3<<20)
	tests := []struct {
		name  string
		body  string
		class results.ErrorClass
	}{
		{"3MiB", `data: {"choices":[{"delta":{"content":"` + long + `"},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n", ""},
		{"over4MiB", `data: {"choices":[{"delta":{"content":"` + long + long + `"}}]}` + "\n\n", results.ErrMalformedChunk},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newStream()
			var res results.Result
			epoch := time.Now()
			s.reset(strings.NewReader(tc.body), &res, epoch, epoch)
			_, fail, readErr := s.pump(&watchdog{epoch: epoch}, func(t time.Time) time.Duration { return t.Sub(epoch) })
			if fail == nil && readErr == errLineTooLong {
				fail = &failure{results.ErrMalformedChunk, readErr.Error()}
			}
			if fail == nil {
				fail = s.finish(readErr)
			}
			var class results.ErrorClass
			if fail != nil {
				class = fail.class
			}
			if class != tc.class {
				t.Fatalf("class %q (%v), want %q", class, fail, tc.class)
			}
		})
	}
}

// FuzzSSE feeds arbitrary bytes to the SSE reader: it must never panic, and
// what it records must be consistent whatever the input.
func FuzzSSE(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "sse", "*.sse"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("event: error\n\n"))
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"content\":null}}]}\n\ndata: [DONE]"))
	f.Add([]byte("data:{\"error\":null,\"choices\":[{\"text\":\"a\"}],\"usage\":null}\r\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		var res results.Result
		fail, _ := pumpBytes(newStream(), body, &res)
		if fail != nil {
			switch fail.class {
			case results.ErrMalformedChunk, results.ErrServerErrorEvent, results.ErrStreamTruncated:
			default:
				t.Fatalf("unexpected class %q", fail.class)
			}
			if len(fail.msg) > 4*errorExcerptBytes {
				t.Fatalf("message of %d bytes", len(fail.msg))
			}
		}
		if n := len(res.ChunkTokens); n != 0 && n != len(res.ChunkTimes) {
			t.Fatalf("%d chunk token counts for %d chunks", n, len(res.ChunkTimes))
		}
		if !slices.IsSorted(res.ChunkTimes) {
			t.Fatalf("chunk times not in order: %v", res.ChunkTimes)
		}
		if len(res.ChunkTimes) > 0 && (res.FirstToken == 0 || res.LastToken < res.FirstToken) {
			t.Fatalf("first token %v, last %v with %d chunks", res.FirstToken, res.LastToken, len(res.ChunkTimes))
		}
		if res.FirstContent != 0 && res.FirstContent < res.FirstToken {
			t.Fatalf("first content %v before first token %v", res.FirstContent, res.FirstToken)
		}
		if len(res.ChunkTimes) > bytes.Count(body, []byte("data")) {
			t.Fatalf("%d token chunks from %d data fields", len(res.ChunkTimes), bytes.Count(body, []byte("data")))
		}
		if res.OutputTokens < 0 || res.PromptTokens < 0 {
			t.Fatalf("negative counts: %+v", res)
		}
	})
}
