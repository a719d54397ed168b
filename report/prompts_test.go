package report

import (
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/results"
)

// TestPromptWarning checks the bounds of the prompt-length warning: a
// request mismatches beyond 2 % of its intended count (exactly 2 % does
// not), and the summary warns beyond 5 % of the requests (exactly 5 %
// does not). Records without the server's count are left out.
func TestPromptWarning(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		diffs      []int // per request of intended length 100: server's count − 100
		mismatched int64
		warn       bool
	}{
		{"agree", make([]int, 100), 0, false},
		{"2 % exactly is within", append(make([]int, 90), 2, -2, 2, -2, 2, -2, 2, -2, 2, -2), 0, false},
		{"5 % of requests mismatch", append(make([]int, 95), 3, 3, 3, 3, 3), 5, false},
		{"6 % of requests mismatch", append(make([]int, 94), 3, 3, 3, 3, 3, -9), 6, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := New()
			a.AddHeader(&results.Header{Schema: results.Schema, Scenario: []byte(`{"name":"p","prompts":{"tokenizer":"cl100k_base"},"load":{"stages":[{"name":"s"}]}}`)})
			for i, d := range tc.diffs {
				a.Add(&results.Result{Seq: uint64(i), Outcome: results.OK, Sent: time.Millisecond, End: 2 * time.Millisecond,
					InputTokens: 92, PromptTokens: 100 + d, PromptTokensDiff: d})
			}
			// Not compared: estimated counts, and a failed request.
			a.Add(&results.Result{Seq: 900, Outcome: results.OK, InputTokens: 50, PromptTokens: 80, PromptTokensDiff: 30, Estimated: true, End: time.Millisecond})
			a.Add(&results.Result{Seq: 901, Outcome: results.Failed, InputTokens: 50, End: time.Millisecond})
			sum := a.Summary()
			tok := sum.Overall.Tokens
			var w string
			for _, s := range sum.Warnings {
				if strings.HasPrefix(s, "prompt lengths:") {
					w = s
				}
			}
			if tok.PromptCompared != int64(len(tc.diffs)) || tok.PromptMismatched != tc.mismatched || (w != "") != tc.warn {
				t.Fatalf("compared %d, mismatched %d (want %d, %d); warning %q", tok.PromptCompared, tok.PromptMismatched, len(tc.diffs), tc.mismatched, w)
			}
			if tc.warn && !strings.Contains(w, "for 6 of 100 requests") || tc.warn && !strings.Contains(w, "counted with cl100k_base") {
				t.Errorf("warning %q", w)
			}
		})
	}
}
