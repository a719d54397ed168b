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
// step, which must stay far below the ≈ 11 ms step it simulates.
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
	for i := range 6 {
		if err := e.Submit(&Request{ID: fmt.Sprint(i), Prompt: ids(1046, 1024, uint32(i)), MaxTokens: 90000, IgnoreEOS: true}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		bt, err := e.Schedule()
		if err != nil || bt == nil {
			b.Fatal(err)
		}
		clk.Set(bt.End)
		if _, err := e.Complete(bt); err != nil {
			b.Fatal(err)
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
		p.tokenChunk("chat.completion.chunk", p.s.word(uint32(i)), "")
	}
}
