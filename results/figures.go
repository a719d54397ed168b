package results

import "time"

// The derived figures of a Result, defined once here. Each is defined only
// for a request whose Outcome is OK; the ok result is false otherwise, and
// wherever the figure is undefined (no first token, a single token, not
// sent). The client package's documentation states how the observations
// they are computed from are taken.

// TTFT is the time to first token, FirstToken − Sent.
func (r *Result) TTFT() (d time.Duration, ok bool) {
	if !r.streamed() {
		return 0, false
	}
	return r.FirstToken - r.Sent, true
}

// TTFTFromSchedule is FirstToken − Scheduled: TTFT as a user arriving on
// the load model's schedule would see it, including the client's lag.
func (r *Result) TTFTFromSchedule() (d time.Duration, ok bool) {
	if !r.streamed() {
		return 0, false
	}
	return r.FirstToken - r.Scheduled, true
}

// TTFC is the time to first content, FirstContent − Sent. For a reasoning
// model it includes the reasoning phase; it is undefined when no content
// (only reasoning) arrived.
func (r *Result) TTFC() (d time.Duration, ok bool) {
	if r.Outcome != OK || r.FirstContent == 0 || r.Sent == 0 {
		return 0, false
	}
	return r.FirstContent - r.Sent, true
}

// E2E is the end-to-end latency, End − Sent.
func (r *Result) E2E() (d time.Duration, ok bool) {
	if r.Outcome != OK || r.Sent == 0 || r.End == 0 {
		return 0, false
	}
	return r.End - r.Sent, true
}

// E2EFromSchedule is End − Scheduled.
func (r *Result) E2EFromSchedule() (d time.Duration, ok bool) {
	if r.Outcome != OK || r.Sent == 0 || r.End == 0 {
		return 0, false
	}
	return r.End - r.Scheduled, true
}

// ScheduleLag is Sent − Scheduled: how late the request left compared with
// the load model. Unlike the other figures it is defined for every request
// that was sent, whatever its outcome.
func (r *Result) ScheduleLag() (d time.Duration, ok bool) {
	if r.Sent == 0 {
		return 0, false
	}
	return r.Sent - r.Scheduled, true
}

// WireLag is Written − Scheduled: how late the request reached the wire
// compared with the load model, the scheduler's lag and any wait for a
// connection included. Defined for every request written.
func (r *Result) WireLag() (d time.Duration, ok bool) {
	if r.Written == 0 {
		return 0, false
	}
	return r.Written - r.Scheduled, true
}

// TPOT is the time per output token after the first,
// (LastToken − FirstToken) / (OutputTokens − 1). It is undefined with
// fewer than two output tokens.
func (r *Result) TPOT() (d time.Duration, ok bool) {
	if !r.streamed() || r.OutputTokens < 2 || r.LastToken < r.FirstToken {
		return 0, false
	}
	return (r.LastToken - r.FirstToken) / time.Duration(r.OutputTokens-1), true
}

// ChunkTokens returns how many output tokens the i-th token-bearing chunk
// of r carried, 0 ≤ i < len(r.ChunkTimes). It is the one rule that splits
// a request's tokens over its chunks, shared by ITL and the correlation
// timeline: the recorded count when ChunkTokens holds one per chunk
// (continuous usage stats); else, when the server reported OutputTokens,
// the first chunk holds the first token and the OutputTokens − 1 others
// are spread over the later chunks as evenly as integers allow (some may
// get none when there are fewer tokens than chunks); else one token per
// chunk. It costs O(1) and allocates nothing.
func (r *Result) ChunkTokensAt(i int) int {
	n := len(r.ChunkTimes)
	switch {
	case len(r.ChunkTokens) == n:
		return int(r.ChunkTokens[i])
	case r.OutputTokens <= 0, r.OutputTokens == n: // one a chunk, the usual case, without the divisions
		return 1
	case n == 1:
		return r.OutputTokens
	case i == 0:
		return 1
	}
	rest := r.OutputTokens - 1
	return i*rest/(n-1) - (i-1)*rest/(n-1)
}

// AppendITLs appends the per-token inter-token latencies of r to dst and
// returns the extended slice; it allocates only when dst must grow. A chunk
// carrying k tokens (ChunkTokensAt), arriving Δ after the previous
// token-bearing chunk, contributes k latencies of Δ/k, so that the
// latencies sum to LastToken − FirstToken and their mean is TPOT. A chunk
// with zero tokens contributes nothing and its gap is counted in the next
// chunk's Δ. The first chunk's tokens contribute nothing: ITL excludes the
// first token. Nothing is appended unless the Outcome is OK.
func (r *Result) AppendITLs(dst []time.Duration) []time.Duration {
	n := len(r.ChunkTimes)
	if r.Outcome != OK || n < 2 {
		return dst
	}
	prev := r.ChunkTimes[0]
	if len(r.ChunkTokens) != n && r.OutputTokens == n {
		// One token a chunk (ChunkTokensAt's even split of n − 1 tokens
		// over n − 1 chunks): the gaps themselves, without a division each.
		for i := 1; i < n; i++ {
			dst = append(dst, r.ChunkTimes[i]-r.ChunkTimes[i-1])
		}
		return dst
	}
	for i := 1; i < n; i++ {
		k := r.ChunkTokensAt(i)
		if k <= 0 {
			continue
		}
		t := r.ChunkTimes[i]
		gap := (t - prev) / time.Duration(k)
		for range k {
			dst = append(dst, gap)
		}
		prev = t
	}
	return dst
}

// AppendChunkITLs appends the per-chunk inter-token latencies of r, the
// gaps between consecutive token-bearing chunks whatever their token
// counts, as vLLM's `vllm bench serve` reports ITL. (vLLM's client also
// counts the role-only first chunk as the first token; here the first
// token-bearing chunk is, which differs by the microseconds between the two
// back-to-back chunks.) Nothing is appended unless the Outcome is OK.
func (r *Result) AppendChunkITLs(dst []time.Duration) []time.Duration {
	if r.Outcome != OK {
		return dst
	}
	for i := 1; i < len(r.ChunkTimes); i++ {
		dst = append(dst, r.ChunkTimes[i]-r.ChunkTimes[i-1])
	}
	return dst
}

// streamed reports whether r is OK with a first token measured.
func (r *Result) streamed() bool {
	return r.Outcome == OK && r.FirstToken != 0 && r.Sent != 0
}

// PromptCounts returns, for an ok request whose prompt both the run and the
// server counted, the count the run expected (InputTokens plus the known
// overhead, that is PromptTokens − PromptTokensDiff) and the server's
// (PromptTokens); ok is false for any other record.
func (r *Result) PromptCounts() (expected, server int, ok bool) {
	if r.Outcome != OK || r.Estimated || r.PromptTokens <= 0 || r.InputTokens <= 0 {
		return 0, 0, false
	}
	return r.PromptTokens - r.PromptTokensDiff, r.PromptTokens, true
}
