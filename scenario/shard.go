package scenario

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// MaxShards bounds Shard.Count: a typo (an extra zero) rather than a need.
const MaxShards = 10_000

// Shard is one of Count load generators that share a scenario's load, as
// `bench run --shard Index/Count` runs it. Index counts from 0. The zero
// value, and any shard of Count 1, is the whole load.
//
// The split is such that the shards together run exactly the scenario's
// load, whatever machine each runs on:
//
//   - Closed loop: the workers, the request bound and the warmup requests
//     are divided as evenly as integers allow (Share): 10 workers over 3
//     shards are 4, 3 and 3. A stage's duration and warmup duration apply
//     to every shard unchanged.
//   - Open loop: every shard computes the stage's one arrival schedule (the
//     same seed) and sends the arrivals whose number k has k mod Count =
//     Index. Each shard offers rate ÷ Count, and the shards' arrivals
//     together are exactly the unsharded schedule, bursts included, which
//     independent schedules at rate ÷ Count would not be for constant or
//     gamma arrivals. The request bound and warmup requests count the
//     stage's arrivals, as unsharded; max_concurrency is divided like
//     workers.
//   - Sequence numbers are strided: shard i numbers its requests i, i+n,
//     i+2n, … (n = Count), so they are unique across shards. A prompt is a
//     pure function of the prompt seed and the sequence number, so each
//     request's random draws are seeded by a number only its shard uses,
//     and no two shards send the same prompt.
//   - A dataset is partitioned: shard i draws its prompts from the entries
//     whose position among the usable ones is i mod n, and cycles through
//     its part alone.
//
// Check says whether a scenario can be split so.
type Shard struct {
	Index int
	Count int
}

// ParseShard reads "INDEX/COUNT", as --shard takes it: 0 ≤ INDEX < COUNT ≤
// MaxShards.
func ParseShard(s string) (Shard, error) {
	i, n, ok := strings.Cut(strings.TrimSpace(s), "/")
	idx, err1 := strconv.Atoi(i)
	count, err2 := strconv.Atoi(n)
	switch {
	case !ok || err1 != nil || err2 != nil:
		return Shard{}, fmt.Errorf("want INDEX/COUNT, like 0/4, got %q", s)
	case count < 1 || count > MaxShards:
		return Shard{}, fmt.Errorf("%q: want 1 to %d shards, got %d", s, MaxShards, count)
	case idx < 0 || idx >= count:
		return Shard{}, fmt.Errorf("%q: the index counts from 0: want 0 to %d", s, count-1)
	}
	return Shard{Index: idx, Count: count}, nil
}

// String returns "INDEX/COUNT", or "" for the zero Shard.
func (s Shard) String() string {
	if s.Count == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// n is the number of shards, 1 for the zero Shard.
func (s Shard) n() int { return max(s.Count, 1) }

// Share returns this shard's part of an integer total: total ÷ Count,
// plus one for the first total mod Count shards, so that the parts of all
// shards add up to total.
func (s Shard) Share(total int) int {
	n := s.n()
	share := total / n
	if s.Index < total%n {
		share++
	}
	return share
}

// Owns reports whether arrival k of an open-loop stage (0-based, in the
// stage's unsharded schedule) is this shard's: k mod Count = Index.
func (s Shard) Owns(k uint64) bool { return k%uint64(s.n()) == uint64(s.Index) }

// Stage returns this shard's view of st: the closed loop's workers,
// request bound and warmup requests divided by Share, the open loop's rate
// divided by Count and max_concurrency by Share. An open loop's request
// bound and warmup requests stay the stage's own: they count the arrivals
// of the one schedule every shard computes (see Shard). It is what the
// shard runs, and what it describes before it starts.
func (s Shard) Stage(st *Stage) Stage {
	out := *st
	if s.n() == 1 {
		return out
	}
	if st.Open() {
		out.RatePerSec = st.RatePerSec / float64(s.n())
		out.MaxConcurrency = s.Share(st.MaxConcurrency)
		return out
	}
	out.Concurrency = s.Share(st.Concurrency)
	out.Requests = s.Share(st.Requests)
	out.Warmup.Requests = s.Share(st.Warmup.Requests)
	if st.Session != nil {
		ss := *st.Session
		ss.Sessions = s.Share(ss.Sessions)
		out.Session = &ss
	}
	return out
}

// MaxConcurrency is the largest number of requests this shard can have in
// flight at once (size its connection pool with it).
func (s Shard) MaxConcurrency(sc *Scenario) int {
	n := 0
	for i := range sc.Load.Stages {
		st := s.Stage(&sc.Load.Stages[i])
		n = max(n, st.inFlight(st.Concurrency, st.MaxConcurrency))
	}
	return n
}

// Check reports every reason sc's load cannot be split over Count shards,
// as *FieldErrors with their positions: each shard needs at least one
// worker (or open-loop slot), at least one request of a stage bounded by
// requests, and at least one measured request after its warmup. The
// answer does not depend on Index, so every shard of a set agrees. A
// dataset with fewer usable entries than shards is refused when the
// prompts are built (NewShardPrompts).
func (s Shard) Check(sc *Scenario) error {
	if s.Count < 0 || s.Count > MaxShards || (s.Count > 0 && (s.Index < 0 || s.Index >= s.Count)) {
		return fmt.Errorf("shard %d/%d: want 0 ≤ index < count ≤ %d", s.Index, s.Count, MaxShards)
	}
	n := s.n()
	if n == 1 {
		return nil
	}
	v := validator{src: &sc.src}
	for i := range sc.Load.Stages {
		st := &sc.Load.Stages[i]
		f := fmt.Sprintf("load.stages[%d]", i)
		if ss := st.Session; ss != nil && ss.Sessions > 0 && ss.Sessions < n {
			v.add(f+".session.sessions", "%d sessions cannot be split over %d shards: each shard needs at least one", ss.Sessions, n)
		}
		if st.Open() {
			if st.MaxConcurrency < n {
				v.add(f+".max_concurrency", "%d cannot be split over %d shards: each shard needs at least one request in flight", st.MaxConcurrency, n)
			}
			// Shard i's arrivals are the k ≡ i (mod n) below the bound;
			// its measured ones those at or above the warmup count.
			if st.Requests > 0 && st.Requests-st.Warmup.Requests < n {
				v.add(f+".requests", "%d arrivals (%d of them warmup) cannot be split over %d shards: each shard needs at least one measured arrival",
					st.Requests, st.Warmup.Requests, n)
			}
			continue
		}
		if st.Concurrency < n {
			v.add(f+".concurrency", "%d workers cannot be split over %d shards: each shard needs at least one", st.Concurrency, n)
		}

		if st.Requests > 0 {
			for idx := range n {
				sh := Shard{Index: idx, Count: n}
				if sh.Share(st.Requests) <= sh.Share(st.Warmup.Requests) {
					v.add(f+".requests", "%d requests (%d of them warmup) cannot be split over %d shards: shard %d would have no measured request",
						st.Requests, st.Warmup.Requests, n, idx)
					break
				}
			}
		}
	}
	return joinSorted(v.errs)
}

// Hash identifies the scenario a sharded run's shards share: the SHA-256,
// in hex, of the resolved scenario (Resolved). Shards whose hashes differ
// ran different scenarios (another file, another --set, another target)
// and are not merged. Take it before a run fills in what it resolves
// itself (a detected model, a random salt).
func (sc *Scenario) Hash() (string, error) {
	b, err := sc.Resolved()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
