package client

import (
	"github.com/servebench/servebench/results"

	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// vllmChatStream returns a chat stream as vLLM v0.15 writes it: a role
// chunk, n one-token content chunks, a finish chunk, a usage chunk, [DONE].
// With continuous, every chunk carries cumulative usage.
func vllmChatStream(n int, continuous bool) []byte {
	var b bytes.Buffer
	usage := func(done int) string {
		if !continuous {
			return ""
		}
		return fmt.Sprintf(`,"usage":{"prompt_tokens":9,"total_tokens":%d,"completion_tokens":%d}`, 9+done, done)
	}
	fmt.Fprintf(&b, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"reasoning_content\":null},\"logprobs\":null,\"finish_reason\":null}],\"prompt_token_ids\":null%s}\n\n", usage(0))
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" word\",\"reasoning_content\":null},\"logprobs\":null,\"finish_reason\":null,\"token_ids\":null}]%s}\n\n", usage(i))
	}
	fmt.Fprintf(&b, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\",\"reasoning_content\":null},\"logprobs\":null,\"finish_reason\":\"stop\",\"stop_reason\":null,\"token_ids\":null}]%s}\n\n", usage(n))
	fmt.Fprintf(&b, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"total_tokens\":%d,\"completion_tokens\":%d}}\n\n", 9+n, n)
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

// pumpBytes runs the SSE reader over body as Do does, without HTTP.
func pumpBytes(s *stream, body []byte, res *results.Result) (*failure, error) {
	epoch := time.Now()
	s.reset(bytes.NewReader(body), res, epoch, epoch)
	wd := &watchdog{epoch: epoch}
	since := func(t time.Time) time.Duration { return t.Sub(epoch) }
	_, fail, readErr := s.pump(wd, since)
	if fail != nil {
		s.finish(readErr)
		return fail, readErr
	}
	return s.finish(readErr), readErr
}

const chunkTestN = 200

// testChunk checks the chunk path over a whole vLLM stream; BenchmarkChunk
// times the same body per chunk.
func testChunk(t testing.TB, s *stream, body []byte, continuous bool) {
	var res results.Result
	res.ChunkTimes = make([]time.Duration, 0, chunkTestN+1)
	fail, _ := pumpBytes(s, body, &res)
	if fail != nil {
		t.Fatalf("failure: %v", fail)
	}
	if len(res.ChunkTimes) != chunkTestN || res.OutputTokens != chunkTestN || res.PromptTokens != 9 || res.FinishReason != "stop" || res.Estimated {
		t.Fatalf("got %d chunks, %d output, %d prompt tokens, finish %q, estimated %v",
			len(res.ChunkTimes), res.OutputTokens, res.PromptTokens, res.FinishReason, res.Estimated)
	}
	if continuous && len(res.ChunkTokens) != chunkTestN {
		t.Fatalf("got %d chunk token counts, want %d", len(res.ChunkTokens), chunkTestN)
	}
}

func TestChunk(t *testing.T) {
	t.Parallel()
	for _, continuous := range []bool{false, true} {
		t.Run(fmt.Sprintf("continuous=%v", continuous), func(t *testing.T) {
			testChunk(t, newStream(), vllmChatStream(chunkTestN, continuous), continuous)
		})
	}
}

// TestChunkAllocs checks the allocation target of the chunk path, which
// unlike its time is deterministic: at most 2 allocations per chunk (it
// makes about 0.03: the per-stream ones spread over 204 chunks). The race
// detector changes allocation counts, so it is checked without it.
func TestChunkAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	body := vllmChatStream(chunkTestN, true)
	s := newStream()
	perStream := testing.AllocsPerRun(50, func() { testChunk(t, s, body, true) })
	chunks := float64(strings.Count(string(body), "data:"))
	if perChunk := perStream / chunks; perChunk > 2 {
		t.Errorf("%.3f allocations per chunk (%v per stream), want ≤ 2", perChunk, perStream)
	}
}

// BenchmarkChunk reports the cost per SSE chunk of a 200-token vLLM chat
// stream, from reading the line to recording it (ns/chunk and allocs/chunk
// are the figures with targets: ≤ 1 µs and ≤ 2 allocations).
func BenchmarkChunk(b *testing.B) {
	for _, continuous := range []bool{false, true} {
		b.Run(fmt.Sprintf("continuous=%v", continuous), func(b *testing.B) {
			body := vllmChatStream(chunkTestN, continuous)
			s := newStream()
			chunks := strings.Count(string(body), "data:")
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				testChunk(b, s, body, continuous)
			}
			b.StopTimer()
			runtime.ReadMemStats(&after)
			n := float64(b.N * chunks)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/chunk")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/chunk")
		})
	}
}
