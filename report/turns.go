package report

import (
	"maps"
	"slices"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/servebench/servebench/results"
)

// MaxTurnRows is how many turn rows a stage's TTFTByTurn has: turns from
// MaxTurnRows on share the last row (AndLater), so a long conversation
// costs a bounded number of histograms.
const MaxTurnRows = 16

// TurnTTFT is the TTFT of one turn index of a conversation scenario's
// measured ok requests, with the prompt tokens they sent and those the
// server served from its prefix cache (when it reports them): a growing
// history is cheap to prefill when it is cached, which shows here.
type TurnTTFT struct {
	Turn int `json:"turn"` // from 1
	// AndLater: the row holds every turn from Turn on.
	AndLater     bool  `json:"and_later,omitempty"`
	PromptTokens int64 `json:"prompt_tokens"`
	CachedTokens int64 `json:"cached_tokens"`
	Dist
}

// turnAgg accumulates one turn row.
type turnAgg struct {
	ttft           *hdrhistogram.Histogram
	prompt, cached int64
}

// addTurn records an ok conversation turn's TTFT in its turn row (a
// session's own requests only: a sub-agent's turns count from its own
// first).
func (s *stageAgg) addTurn(r *results.Result) {
	d, ok := r.TTFT()
	if r.Turn < 1 || r.Agent > 0 || r.Outcome != results.OK || !ok {
		return
	}
	row := min(r.Turn, MaxTurnRows)
	if s.turns == nil {
		s.turns = map[int]*turnAgg{}
	}
	t := s.turns[row]
	if t == nil {
		t = &turnAgg{ttft: hdrhistogram.New(histMinUS, histMaxUS, histSigFigs)}
		s.turns[row] = t
	}
	record(t.ttft, d)
	t.prompt += int64(r.PromptTokens)
	t.cached += int64(r.CachedTokens)
}

// mergeTurns adds o's turn rows into s's.
func (s *stageAgg) mergeTurns(o *stageAgg) {
	for row, ot := range o.turns {
		if s.turns == nil {
			s.turns = map[int]*turnAgg{}
		}
		t := s.turns[row]
		if t == nil {
			t = &turnAgg{ttft: hdrhistogram.New(histMinUS, histMaxUS, histSigFigs)}
			s.turns[row] = t
		}
		t.ttft.Merge(ot.ttft)
		t.prompt += ot.prompt
		t.cached += ot.cached
	}
}

// turnRows returns s's turn rows in turn order; nil when no record was a
// conversation turn.
func (s *stageAgg) turnRows() []TurnTTFT {
	var out []TurnTTFT
	for _, row := range slices.Sorted(maps.Keys(s.turns)) {
		t := s.turns[row]
		out = append(out, TurnTTFT{Turn: row, AndLater: row == MaxTurnRows, PromptTokens: t.prompt, CachedTokens: t.cached, Dist: dist(t.ttft)})
	}
	return out
}
