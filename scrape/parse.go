package scrape

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scrape/profile"
)

// ErrUnknownEngine is returned by Parser.Parse when a profile is to be
// detected and no metric family on the page carries a known engine prefix.
var ErrUnknownEngine = errors.New("no known engine metrics on the page")

// Parser reads metrics pages in the Prometheus text format (version 0.0.4)
// into Readings. It reuses one expfmt.TextParser, so it is not safe for
// concurrent use; create one per goroutine.
type Parser struct {
	tp       expfmt.TextParser
	profiles []profile.Profile
	only     map[string][]string // labels every series read must carry, with one of the values
}

// NewParser returns a Parser that knows the built-in profiles.
func NewParser() *Parser {
	return &Parser{
		tp:       expfmt.NewTextParser(model.UTF8Validation),
		profiles: profile.All(),
	}
}

// Parse reads one page and maps it onto stable meanings with the profile
// called name, or with the profile detected from the page when name is ""
// or profile.Auto. A malformed page fails with the parser's error (an
// expfmt.ParseError carrying the line); a page with no known engine prefix
// fails with ErrUnknownEngine when detecting.
func (p *Parser) Parse(r io.Reader, name string) (results.Reading, error) {
	var prof profile.Profile
	if name != "" && name != profile.Auto {
		var err error
		if prof, err = p.lookup(name); err != nil {
			return results.Reading{}, err
		}
	}
	fams, err := p.tp.TextToMetricFamilies(r)
	if err != nil {
		return results.Reading{}, fmt.Errorf("parse metrics page: %w", err)
	}
	if prof.Name == "" {
		names := make([]string, 0, len(fams))
		for name := range fams {
			names = append(names, name)
		}
		var ok bool
		if prof, ok = profile.Detect(p.profiles, names); !ok {
			return results.Reading{}, fmt.Errorf("detect profile: %w", ErrUnknownEngine)
		}
	}
	return read(fams, prof, p.only), nil
}

// Only restricts the series p reads to those whose label carries one of
// values (a GPU page's gpu="0", or the pod of the server under test); the
// restrictions add up. No values lifts the restriction on label.
func (p *Parser) Only(label string, values ...string) {
	if p.only == nil {
		p.only = map[string][]string{}
	}
	if len(values) == 0 {
		delete(p.only, label)
		return
	}
	p.only[label] = values
}

func (p *Parser) lookup(name string) (profile.Profile, error) {
	for _, prof := range p.profiles {
		if prof.Name == name {
			return prof, nil
		}
	}
	return profile.ByName(name)
}

// read maps parsed metric families onto stable meanings with prof. Values
// that are not finite (NaN, ±Inf), alone or summed, are treated as absent, so
// every Reading can be encoded as JSON.
func read(fams map[string]*dto.MetricFamily, prof profile.Profile, only map[string][]string) results.Reading {
	if len(only) > 0 {
		fams = selected(fams, only)
	}
	rd := results.Reading{Profile: prof.Name, CountersAtEnd: prof.CountersAtEnd, GPU: prof.GPU}
	engines := map[string]*results.Snapshot{}
	engine := func(key string) *results.Snapshot {
		s := engines[key]
		if s == nil {
			s = &results.Snapshot{}
			engines[key] = s
		}
		return s
	}
	for _, m := range results.Meanings() {
		for _, s := range prof.Sources[m] {
			if m.Behaviour() == results.Histogrammed {
				groups := readHistograms(fams, prof, s)
				if len(groups) == 0 {
					continue
				}
				var all []results.Histogram
				for _, key := range rankedKeys(groups) {
					h := groups[key]
					all = append(all, h)
					if key != "" {
						e := engine(key)
						if e.Histograms == nil {
							e.Histograms = map[results.Meaning]results.Histogram{}
						}
						e.Histograms[m] = h
					}
				}
				sum := all[0]
				for _, h := range all[1:] {
					sum = sum.Plus(h)
				}
				if !sum.Finite() {
					continue
				}
				if rd.Histograms == nil {
					rd.Histograms = map[results.Meaning]results.Histogram{}
				}
				rd.Histograms[m] = sum
			} else {
				groups := readValues(fams, prof, s, m.Averaged())
				if len(groups) == 0 {
					continue
				}
				var all []float64
				for _, key := range rankedKeys(groups) {
					v := groups[key]
					all = append(all, v)
					if key != "" {
						e := engine(key)
						if e.Values == nil {
							e.Values = results.Values{}
						}
						e.Values[m] = v
					}
				}
				v := combine(all, m.Averaged())
				if !finite(v) {
					continue
				}
				if rd.Values == nil {
					rd.Values = results.Values{}
				}
				rd.Values[m] = v
			}
			if rd.Matched == nil {
				rd.Matched = map[results.Meaning]string{}
			}
			rd.Matched[m] = s.String()
			break
		}
	}
	rd.AcceptedPerPos = perPosition(fams, prof)
	if prof.GPU {
		rd.Devices = devices(fams, prof, rd.Matched)
	}
	// One engine's values would repeat the aggregate; keep Engines only when
	// the page really splits the work.
	if len(engines) > 1 {
		rd.Engines = make(map[string]results.Snapshot, len(engines))
		for k, s := range engines {
			rd.Engines[k] = *s
		}
	}
	return rd
}

// series returns the metrics of the family name that s and prof select: the
// ones carrying s.Labels, and among replicas only the lowest rank.
func series(fams map[string]*dto.MetricFamily, prof profile.Profile, name string, labels map[string]string) []*dto.Metric {
	fam := fams[name]
	if fam == nil {
		return nil
	}
	var out []*dto.Metric
	for _, m := range fam.GetMetric() {
		if hasLabels(m, labels) {
			out = append(out, m)
		}
	}
	for _, l := range prof.ReplicaLabels {
		lowest, found := "", false
		for _, m := range out {
			if v, ok := label(m, l); ok && (!found || rankLess(v, lowest)) {
				lowest, found = v, true
			}
		}
		if !found {
			continue
		}
		kept := out[:0]
		for _, m := range out {
			if v, ok := label(m, l); !ok || v == lowest {
				kept = append(kept, m)
			}
		}
		out = kept
	}
	return out
}

// readValues reads a gauge or counter source, one combined value per engine
// key ("" for series without the engine label).
func readValues(fams map[string]*dto.MetricFamily, prof profile.Profile, s profile.Source, averaged bool) map[string]float64 {
	typ := fams[s.Metric].GetType()
	byEngine := map[string][]float64{}
	for _, m := range series(fams, prof, s.Metric, s.Labels) {
		if v, ok := scalar(typ, m, s.Field); ok {
			k := engineKey(m, prof)
			byEngine[k] = append(byEngine[k], v*s.Factor())
		}
	}
	out := map[string]float64{}
	for k, vs := range byEngine {
		if v := combine(vs, averaged); finite(v) {
			out[k] = v
		}
	}
	if s.Per == "" {
		return out
	}
	// A ratio: divide by the same engine's denominator, summed.
	dtyp := fams[s.Per].GetType()
	den := map[string]float64{}
	for _, m := range series(fams, prof, s.Per, nil) {
		if v, ok := scalar(dtyp, m, profile.FieldValue); ok {
			den[engineKey(m, prof)] += v
		}
	}
	ratio := map[string]float64{}
	for k, num := range out {
		if d, ok := den[k]; ok && d > 0 {
			if r := num / d; finite(r) {
				ratio[k] = r
			}
		}
	}
	return ratio
}

// readHistograms reads a histogram source, one summed histogram per engine
// key. A summary is read as a histogram without buckets.
func readHistograms(fams map[string]*dto.MetricFamily, prof profile.Profile, s profile.Source) map[string]results.Histogram {
	typ := fams[s.Metric].GetType()
	out := map[string]results.Histogram{}
	for _, m := range series(fams, prof, s.Metric, s.Labels) {
		h, ok := histogram(typ, m)
		if !ok {
			continue
		}
		k := engineKey(m, prof)
		if prev, seen := out[k]; seen {
			h = prev.Plus(h)
		}
		out[k] = h
	}
	for k, h := range out {
		if !h.Finite() {
			delete(out, k)
		}
	}
	return out
}

func scalar(typ dto.MetricType, m *dto.Metric, f profile.Field) (float64, bool) {
	var v float64
	switch {
	case f == profile.FieldSum && typ == dto.MetricType_HISTOGRAM:
		v = m.GetHistogram().GetSampleSum()
	case f == profile.FieldSum && typ == dto.MetricType_SUMMARY:
		v = m.GetSummary().GetSampleSum()
	case f == profile.FieldSum:
		return 0, false
	case typ == dto.MetricType_GAUGE:
		v = m.GetGauge().GetValue()
	case typ == dto.MetricType_COUNTER:
		v = m.GetCounter().GetValue()
	case typ == dto.MetricType_UNTYPED:
		v = m.GetUntyped().GetValue()
	default:
		return 0, false
	}
	return v, finite(v)
}

func histogram(typ dto.MetricType, m *dto.Metric) (results.Histogram, bool) {
	var h results.Histogram
	switch typ {
	case dto.MetricType_SUMMARY:
		s := m.GetSummary()
		h.Count, h.Sum = float64(s.GetSampleCount()), s.GetSampleSum()
	case dto.MetricType_HISTOGRAM:
		ph := m.GetHistogram()
		h.Count, h.Sum = float64(ph.GetSampleCount()), ph.GetSampleSum()
		if ph.SampleCountFloat != nil {
			h.Count = ph.GetSampleCountFloat()
		}
		bs := ph.GetBucket()
		sort.SliceStable(bs, func(i, j int) bool { return bs[i].GetUpperBound() < bs[j].GetUpperBound() })
		for _, b := range bs {
			ub := b.GetUpperBound()
			if math.IsInf(ub, +1) {
				continue
			}
			c := float64(b.GetCumulativeCount())
			if b.CumulativeCountFloat != nil {
				c = b.GetCumulativeCountFloat()
			}
			if !finite(ub) || !finite(c) {
				return results.Histogram{}, false
			}
			if n := len(h.Upper); n > 0 && h.Upper[n-1] == ub {
				return results.Histogram{}, false // a bound given twice: not a histogram we can read
			}
			h.Upper = append(h.Upper, ub)
			h.Cumulative = append(h.Cumulative, c)
		}
	default:
		return results.Histogram{}, false
	}
	if !finite(h.Count) || !finite(h.Sum) {
		return results.Histogram{}, false
	}
	return h, true
}

func engineKey(m *dto.Metric, prof profile.Profile) string {
	if prof.EngineLabel == "" {
		return ""
	}
	v, _ := label(m, prof.EngineLabel)
	return v
}

func label(m *dto.Metric, name string) (string, bool) {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue(), true
		}
	}
	return "", false
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	for k, v := range want {
		if got, ok := label(m, k); !ok || got != v {
			return false
		}
	}
	return true
}

// rankLess orders rank label values numerically when both are integers, so
// "2" sorts before "10", and as strings otherwise.
func rankLess(a, b string) bool {
	ai, aerr := strconv.Atoi(a)
	bi, berr := strconv.Atoi(b)
	if aerr == nil && berr == nil {
		return ai < bi
	}
	return a < b
}

func combine(vs []float64, averaged bool) float64 {
	s := 0.0
	for _, v := range vs {
		s += v
	}
	if averaged && len(vs) > 0 {
		return s / float64(len(vs))
	}
	return s
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// rankedKeys returns the keys of m in rank order (rankLess).
func rankedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return rankLess(keys[i], keys[j]) })
	return keys
}

// selected returns the families with only the series that carry, for each
// label of only, one of its values.
func selected(fams map[string]*dto.MetricFamily, only map[string][]string) map[string]*dto.MetricFamily {
	out := make(map[string]*dto.MetricFamily, len(fams))
	for name, fam := range fams {
		var keep []*dto.Metric
		for _, m := range fam.GetMetric() {
			ok := true
			for l, vals := range only {
				v, has := label(m, l)
				if !has || !slices.Contains(vals, v) {
					ok = false
					break
				}
			}
			if ok {
				keep = append(keep, m)
			}
		}
		if len(keep) > 0 {
			out[name] = &dto.MetricFamily{Name: fam.Name, Help: fam.Help, Type: fam.Type, Unit: fam.Unit, Metric: keep}
		}
	}
	return out
}

// perPosition reads the accepted-tokens-by-draft-position counter, summed
// over engines, one value per position from 0 to the largest present (a
// position the page lacks reads 0); nil when the page has none.
func perPosition(fams map[string]*dto.MetricFamily, prof profile.Profile) []float64 {
	if prof.PerPosition == "" {
		return nil
	}
	typ := fams[prof.PerPosition].GetType()
	byPos := map[int]float64{}
	top := -1
	for _, m := range series(fams, prof, prof.PerPosition, nil) {
		ps, ok := label(m, prof.PositionLabel)
		if !ok {
			continue
		}
		pos, err := strconv.Atoi(ps)
		if err != nil || pos < 0 || pos > maxDraftPositions {
			continue
		}
		if v, ok := scalar(typ, m, profile.FieldValue); ok {
			byPos[pos] += v
			top = max(top, pos)
		}
	}
	if top < 0 {
		return nil
	}
	out := make([]float64, top+1)
	for p, v := range byPos {
		out[p] = v
	}
	return out
}

// maxDraftPositions bounds the positions read, so a damaged label cannot
// make a huge slice.
const maxDraftPositions = 64

// devices describes each GPU of a GPU page from the labels of the series
// its matched meanings were read from.
func devices(fams map[string]*dto.MetricFamily, prof profile.Profile, matched map[results.Meaning]string) map[string]results.Device {
	out := map[string]results.Device{}
	dl := prof.DeviceLabels
	for _, m := range results.Meanings() {
		if _, ok := matched[m]; !ok {
			continue
		}
		for _, s := range prof.Sources[m] {
			for _, series := range series(fams, prof, s.Metric, s.Labels) {
				k := engineKey(series, prof)
				if k == "" {
					continue
				}
				d := out[k]
				for _, f := range []struct {
					dst   *string
					label string
				}{{&d.UUID, dl.UUID}, {&d.Model, dl.Model}, {&d.Host, dl.Host}, {&d.Pod, dl.Pod}, {&d.Namespace, dl.Namespace}, {&d.Container, dl.Container}} {
					if v, ok := label(series, f.label); ok && f.label != "" && *f.dst == "" {
						*f.dst = v
					}
				}
				out[k] = d
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
