package twin

import (
	"fmt"
	"slices"
	"time"

	"github.com/servebench/servebench/results"
)

// request is one ok, streamed request of a run, as the fit needs it.
// Times are offsets from the run's epoch.
type request struct {
	stage  int
	sent   time.Duration
	prompt int // prompt tokens (the server's count, else the intended one)
	cached int // prompt tokens the server found in its prefix cache, when it said
	chunks []time.Duration
	ntok   []int // tokens per chunk
	output int
}

// runData is one results file: its requests and scrapes.
type runData struct {
	path    string
	header  *results.Header
	reqs    []*request
	samples []results.Sample
	// skipped counts records that were not usable (failed, not streamed,
	// no chunk times).
	skipped int
}

// readRuns reads every results file (or run directory) into one runData
// each. Records of the stages in exclude (by name) are left out, with the
// scrapes taken while they ran.
func readRuns(paths []string, exclude []string) ([]*runData, error) {
	files, err := results.OpenFiles(paths...)
	if err != nil {
		return nil, err
	}
	runs := make([]*runData, len(files.Paths()))
	for i, p := range files.Paths() {
		runs[i] = &runData{path: p, header: files.Headers()[i]}
	}
	// Offsets are shifted onto the files' common epoch; shift them back so
	// each run counts from its own (a run is its own timeline).
	shift := make([]time.Duration, len(runs))
	for i, h := range files.Headers() {
		shift[i] = h.Started.Sub(files.Epoch())
	}
	type span struct{ from, to time.Duration }
	excluded := make([][]span, len(runs))
	for rec, err := range files.All() {
		if err != nil {
			return nil, err
		}
		rd := runs[rec.File]
		switch {
		case rec.Result != nil:
			r := rec.Result
			if isExcluded(rd.header, r.Stage, exclude) {
				if r.Sent != 0 {
					excluded[rec.File] = append(excluded[rec.File], span{r.Sent - shift[rec.File], max(r.End, r.Sent) - shift[rec.File]})
				}
				continue
			}
			q, ok := usable(r)
			if !ok {
				rd.skipped++
				continue
			}
			q.sent -= shift[rec.File]
			for j := range q.chunks {
				q.chunks[j] += q.sent
			}
			rd.reqs = append(rd.reqs, q)
		case rec.Sample != nil && rec.Sample.OK:
			s := *rec.Sample
			s.At -= shift[rec.File]
			s.Start -= shift[rec.File]
			rd.samples = append(rd.samples, s)
		}
	}
	for i, rd := range runs {
		rd.samples = slices.DeleteFunc(rd.samples, func(s results.Sample) bool {
			for _, sp := range excluded[i] {
				if s.At >= sp.from && s.At <= sp.to {
					return true
				}
			}
			return false
		})
		slices.SortFunc(rd.reqs, func(a, b *request) int { return int(a.sent - b.sent) })
		slices.SortFunc(rd.samples, func(a, b results.Sample) int { return int(a.At - b.At) })
	}
	return runs, nil
}

func isExcluded(h *results.Header, stage int, exclude []string) bool {
	if len(exclude) == 0 {
		return false
	}
	return slices.Contains(exclude, h.Spec.StageName(stage))
}

// usable turns a result into a request when it completed with its chunks
// timed; chunk times become offsets from the epoch once the caller adds
// sent.
func usable(r *results.Result) (*request, bool) {
	if r.Outcome != results.OK || !r.Stream || len(r.ChunkTimes) == 0 || r.Sent == 0 {
		return nil, false
	}
	q := &request{stage: r.Stage, sent: r.Sent, prompt: r.PromptTokens, cached: r.CachedTokens, output: r.OutputTokens}
	if q.prompt <= 0 || r.Estimated {
		q.prompt = r.InputTokens
	}
	if q.prompt <= 0 {
		return nil, false
	}
	q.chunks = slices.Clone(r.ChunkTimes)
	q.ntok = make([]int, len(q.chunks))
	for i := range q.chunks {
		q.ntok[i] = max(r.ChunkTokensAt(i), 0)
	}
	return q, true
}

// stageNames lists the stages of the runs, by name, in order of first
// appearance.
func stageNames(runs []*runData) []string {
	var out []string
	for _, rd := range runs {
		if rd.header.Spec == nil {
			continue
		}
		for i := range rd.header.Spec.Load.Stages {
			if n := rd.header.Spec.StageName(i); !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// checkStages reports names that no run has.
func checkStages(runs []*runData, names []string) error {
	have := stageNames(runs)
	for _, n := range names {
		if !slices.Contains(have, n) {
			return fmt.Errorf("no stage %q in the runs (stages: %v)", n, have)
		}
	}
	return nil
}
