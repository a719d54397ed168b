package sim

import (
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/servebench/servebench/internal/tokenizer"
)

// BenchmarkEngineStep measures one Schedule+Complete of the decay workload
// (six decoding streams on gpt-oss-120b) — the simulator's overhead per
// step, which must stay far below the ≈ 11 ms step it simulates. A stream
// that ends (after 8,192 tokens) is replaced by a new one, so the workload
// never runs out and the figure is the same at any b.N: six streams whose
// contexts cycle between about 1,000 and 9,000 tokens.
func BenchmarkEngineStep(b *testing.B) {
	cfg, err := Preset("gpt-oss-120b-h100")
	if err != nil {
		b.Fatal(err)
	}
	clk := NewVirtualClock(testEpoch)
	e, err := NewEngine(cfg, clk, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		b.Fatal(err)
	}
	next := 0
	submit := func() {
		// Staggered lengths keep the six streams out of step.
		r := &Request{ID: fmt.Sprint(next), Prompt: ids(1046, 1024, uint32(next)), MaxTokens: 8192 - 1000*(next%6), IgnoreEOS: true}
		next++
		if err := e.Submit(r); err != nil {
			b.Fatal(err)
		}
	}
	for range 6 {
		submit()
	}
	b.ReportAllocs()
	for b.Loop() {
		bt, err := e.Schedule()
		if err != nil || bt == nil {
			b.Fatalf("no step with six streams submitted: %v", err)
		}
		clk.Set(bt.End)
		outs, err := e.Complete(bt)
		if err != nil {
			b.Fatal(err)
		}
		for _, o := range outs {
			if o.FinishReason != "" {
				submit()
			}
		}
	}
}

// BenchmarkChatChunk measures encoding one streamed chat token chunk.
func BenchmarkChatChunk(b *testing.B) {
	tok, err := tokenizer.Load("")
	if err != nil {
		b.Fatal(err)
	}
	cfg, _ := Preset("tiny")
	p := &responder{s: &Server{cfg: cfg, tok: tok}, w: httptest.NewRecorder(), req: &genRequest{},
		er: &Request{Prompt: []uint32{1, 2, 3}}, id: "chatcmpl-0123456789abcdef", chat: true, created: time.Now().Unix()}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		p.tokenChunk("chat.completion.chunk", i, p.s.word(uint32(i)), "")
	}
}
