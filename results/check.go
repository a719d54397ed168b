package results

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrMixedScenarios is what errors.Is finds in SameScenario's refusal:
// results files of different scenarios, whose merged figures would
// describe none of them.
var ErrMixedScenarios = errors.New("results of different scenarios")

// ScenarioKey identifies the scenario a file's run ran, for telling
// whether files may merge: a shard's is the hash its shards share
// (Shard.ScenarioHash); a whole run's the SHA-256 of its header's resolved
// scenario with its keys sorted, prompts.salt left out (a run draws a new
// one with salt: random; it changes the words, not the load). "" when the
// header holds no scenario.
func (h *Header) ScenarioKey() string {
	if h.Shard != nil {
		return "shards of " + h.Shard.ScenarioHash
	}
	if len(h.Scenario) == 0 {
		return ""
	}
	var sc map[string]any
	if err := json.Unmarshal(h.Scenario, &sc); err != nil {
		return ""
	}
	if p, ok := sc["prompts"].(map[string]any); ok {
		delete(p, "salt")
	}
	canon, err := json.Marshal(sc) // map keys sorted
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:])
}

// SameScenario checks that the files at paths, with their headers, ran
// one scenario (ScenarioKey). The error wraps ErrMixedScenarios and names
// the first file of each scenario. Headers without a scenario are not
// compared.
func SameScenario(paths []string, headers []*Header) error {
	first, key := -1, ""
	for i, h := range headers {
		k := h.ScenarioKey()
		switch {
		case k == "":
		case first < 0:
			first, key = i, k
		case k != key:
			return &mixedError{fmt.Sprintf("%s (%s) and %s (%s) ran different scenarios: their merged figures would describe neither; "+
				"pass --mixed to merge them anyway", paths[first], describeScenario(headers[first], key), paths[i], describeScenario(h, k))}
		}
	}
	return nil
}

// mixedError is SameScenario's refusal.
type mixedError struct{ msg string }

func (e *mixedError) Error() string        { return e.msg }
func (e *mixedError) Is(target error) bool { return target == ErrMixedScenarios }

// describeScenario names a header's scenario and key in a few words.
func describeScenario(h *Header, key string) string {
	name := "unnamed"
	if h.Spec != nil && h.Spec.Name != "" {
		name = fmt.Sprintf("%q", h.Spec.Name)
	}
	return fmt.Sprintf("scenario %s, %s", name, short(strings.TrimPrefix(key, "shards of ")))
}

// Impossible says what no run can have written in r: a negative count or
// time offset, an event before the request was sent, a stream's last
// token after its end, a status no HTTP server sends. It returns "" when
// nothing is. Times are checked as written, before any Shift.
func (r *Result) Impossible() string {
	for _, c := range []struct {
		field string
		v     int
	}{
		{"stage", r.Stage}, {"turn", r.Turn}, {"input_tokens", r.InputTokens}, {"inputs", r.Inputs},
		{"max_tokens", r.MaxTokens}, {"prompt_tokens", r.PromptTokens}, {"output_tokens", r.OutputTokens},
		{"reasoning_tokens", r.ReasoningTokens}, {"cached_tokens", r.CachedTokens}, {"retries", r.Retries},
		{"draft_tokens", r.DraftTokens}, {"draft_accepted_tokens", r.DraftAccepted},
		{"resent_written", r.ResentWritten},
	} {
		if c.v < 0 {
			return fmt.Sprintf("%s is %d: a count is never negative", c.field, c.v)
		}
	}
	offsets := []struct {
		field string
		v     time.Duration
	}{
		{"scheduled_ns", r.Scheduled}, {"sent_ns", r.Sent}, {"written_ns", r.Written}, {"headers_ns", r.Headers},
		{"first_token_ns", r.FirstToken}, {"first_content_ns", r.FirstContent}, {"last_token_ns", r.LastToken}, {"end_ns", r.End},
	}
	for _, o := range offsets {
		if o.v < 0 {
			return fmt.Sprintf("%s is %d: every time counts forward from the run's start", o.field, o.v)
		}
	}
	if r.Sent > 0 {
		for _, o := range offsets[2:] {
			if o.v > 0 && o.v < r.Sent {
				return fmt.Sprintf("%s %d is before sent_ns %d", o.field, o.v, r.Sent)
			}
		}
	}
	if r.LastToken > 0 && r.End > 0 && r.LastToken > r.End {
		return fmt.Sprintf("last_token_ns %d is after end_ns %d", r.LastToken, r.End)
	}
	for i, c := range r.ChunkTimes {
		if c < 0 {
			return fmt.Sprintf("chunk_ns[%d] is %d: chunk times count forward from sent_ns", i, c)
		}
	}
	if r.ResentWritten > r.Retries {
		return fmt.Sprintf("resent_written %d is more than retries %d", r.ResentWritten, r.Retries)
	}
	if r.Status != 0 && (r.Status < 100 || r.Status > 599) {
		return fmt.Sprintf("status %d is no HTTP status", r.Status)
	}
	return ""
}
