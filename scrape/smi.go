package scrape

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scrape/profile"
)

// SMITimeLayout is the layout of nvidia-smi's timestamp field
// ("2026/07/14 08:12:53.353"), in the machine's local time.
const SMITimeLayout = "2006/01/02 15:04:05.000"

// maxSMIGPUs bounds the rows of one sample, so a file whose index column
// never repeats cannot grow one without end.
const maxSMIGPUs = 1024

// SMIReader reads the CSV that `nvidia-smi --query-gpu=… --format=csv`
// writes (with or without units, with or without -lms looping) into one
// GPU Reading per sample: a sample is the rows of consecutive GPUs, and
// ends where a GPU index comes again (or, once the number of GPUs is
// known, when every GPU has a row). Columns are found by the header's
// field names (profile.SMIFields), in any order; "[N/A]" and
// "[Not Supported]" are unknown values. It is not safe for concurrent use.
type SMIReader struct {
	r      *csv.Reader
	loc    *time.Location
	line   int
	ts, ix int            // columns of timestamp and index
	uuid   int            // -1 when absent
	name   int            // -1 when absent
	cols   map[int]smiCol // value columns
	group  []smiRow
	ngpu   int // GPUs per sample, once known
	only   []string
}

type smiCol struct {
	f     profile.SMIField
	scale float64
	rank  int // position among the meaning's fields: lower wins
}

type smiRow struct {
	at   time.Time
	gpu  string
	dev  results.Device
	vals map[results.Meaning]float64
	from map[results.Meaning]string
	rank map[results.Meaning]int
}

// NewSMIReader reads the header line of r and returns a reader of its
// rows, whose timestamps are read in loc (nil: time.Local). A header
// without timestamp or index is an error.
func NewSMIReader(r io.Reader, loc *time.Location) (*SMIReader, error) {
	if loc == nil {
		loc = time.Local
	}
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	s := &SMIReader{r: cr, loc: loc, ts: -1, ix: -1, uuid: -1, name: -1, cols: map[int]smiCol{}}
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("nvidia-smi CSV: header: %w", err)
	}
	s.line = 1
	fields := profile.SMIFields()
	for i, h := range head {
		name, unit := splitUnit(h)
		switch name {
		case "timestamp":
			s.ts = i
		case "index":
			s.ix = i
		case "uuid":
			s.uuid = i
		case "name":
			s.name = i
		}
		rank := map[results.Meaning]int{}
		for _, f := range fields {
			r := rank[f.Meaning]
			rank[f.Meaning]++
			if f.Field != name {
				continue
			}
			if unit == "" {
				unit = f.Unit
			}
			scale, ok := unitScale(unit)
			if !ok {
				return nil, fmt.Errorf("nvidia-smi CSV: line 1: column %q: unknown unit %q", h, unit)
			}
			s.cols[i] = smiCol{f: f, scale: scale, rank: r}
		}
	}
	if s.ts < 0 || s.ix < 0 {
		return nil, fmt.Errorf("nvidia-smi CSV: line 1: the header has no timestamp and index columns (query them first: --query-gpu=timestamp,index,…)")
	}
	return s, nil
}

// Only restricts the rows read to the GPUs of these indexes; none reads
// every GPU.
func (s *SMIReader) Only(indexes ...string) { s.only = indexes }

// splitUnit splits "power.draw [W]" into "power.draw" and "W".
func splitUnit(h string) (name, unit string) {
	h = strings.TrimSpace(h)
	if i := strings.Index(h, " ["); i >= 0 && strings.HasSuffix(h, "]") {
		return h[:i], h[i+2 : len(h)-1]
	}
	return h, ""
}

// unitScale converts a unit nvidia-smi prints to the meaning's.
func unitScale(unit string) (float64, bool) {
	switch unit {
	case "W", "MHz", "":
		return 1, true
	case "%":
		return 0.01, true
	case "MiB":
		return 1 << 20, true
	case "us":
		return 1e-6, true
	}
	return 0, false
}

// Next returns the next sample's time (its first row's timestamp) and
// reading, or io.EOF after the last. A malformed row fails with its line.
func (s *SMIReader) Next() (time.Time, results.Reading, error) {
	for {
		rec, err := s.r.Read()
		if errors.Is(err, io.EOF) {
			if len(s.group) == 0 {
				return time.Time{}, results.Reading{}, io.EOF
			}
			return s.flush()
		}
		s.line++
		if err != nil {
			return time.Time{}, results.Reading{}, fmt.Errorf("nvidia-smi CSV: %w", err)
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		row, err := s.row(rec)
		if err != nil {
			return time.Time{}, results.Reading{}, err
		}
		if len(s.only) > 0 && !slices.Contains(s.only, row.gpu) {
			continue
		}
		repeat := slices.ContainsFunc(s.group, func(r smiRow) bool { return r.gpu == row.gpu })
		if repeat || len(s.group) >= maxSMIGPUs {
			if s.ngpu == 0 {
				s.ngpu = len(s.group)
			}
			at, rd, err := s.flush()
			s.group = append(s.group, row)
			return at, rd, err
		}
		s.group = append(s.group, row)
		if s.ngpu > 0 && len(s.group) == s.ngpu {
			return s.flush()
		}
	}
}

func (s *SMIReader) row(rec []string) (smiRow, error) {
	if s.ts >= len(rec) || s.ix >= len(rec) {
		return smiRow{}, fmt.Errorf("nvidia-smi CSV: line %d: %d fields, fewer than the header's timestamp and index columns", s.line, len(rec))
	}
	at, err := time.ParseInLocation(SMITimeLayout, strings.TrimSpace(rec[s.ts]), s.loc)
	if err != nil {
		return smiRow{}, fmt.Errorf("nvidia-smi CSV: line %d: timestamp: %w", s.line, err)
	}
	gpu := strings.TrimSpace(rec[s.ix])
	if _, err := strconv.Atoi(gpu); err != nil {
		return smiRow{}, fmt.Errorf("nvidia-smi CSV: line %d: index %q is not a GPU index", s.line, gpu)
	}
	r := smiRow{at: at, gpu: gpu, vals: map[results.Meaning]float64{}, from: map[results.Meaning]string{}, rank: map[results.Meaning]int{}}
	if s.uuid >= 0 && s.uuid < len(rec) {
		r.dev.UUID = strings.TrimSpace(rec[s.uuid])
	}
	if s.name >= 0 && s.name < len(rec) {
		r.dev.Model = strings.TrimSpace(rec[s.name])
	}
	for i, c := range s.cols {
		if i >= len(rec) {
			continue
		}
		v, ok := smiValue(rec[i], c)
		if !ok {
			continue
		}
		if prev, seen := r.rank[c.f.Meaning]; seen && prev < c.rank {
			continue
		}
		r.vals[c.f.Meaning], r.from[c.f.Meaning], r.rank[c.f.Meaning] = v, c.f.Field, c.rank
	}
	return r, nil
}

// smiValue reads one cell: a number with or without its unit, or a state.
func smiValue(cell string, c smiCol) (float64, bool) {
	cell = strings.TrimSpace(cell)
	if c.f.Unit == "" {
		switch cell {
		case "Active":
			return 1, true
		case "Not Active":
			return 0, true
		}
		return 0, false
	}
	num, _, _ := strings.Cut(cell, " ")
	v, err := strconv.ParseFloat(num, 64)
	v *= c.scale
	if err != nil || !finite(v) {
		return 0, false
	}
	return v, true
}

// flush turns the rows of one sample into a reading and starts the next.
func (s *SMIReader) flush() (time.Time, results.Reading, error) {
	rows := s.group
	s.group = nil
	return rows[0].at, gpuReading(profile.NvidiaSMI, rows), nil
}

// gpuReading turns one sample's rows, one per GPU, into a GPU reading of
// the sampler named prof: each GPU's values in Engines (when there are
// several), and their sum or mean in Values where every GPU has one.
func gpuReading(prof string, rows []smiRow) results.Reading {
	rd := results.Reading{Profile: prof, GPU: true, Devices: map[string]results.Device{}}
	per := map[results.Meaning][]float64{}
	engines := map[string]results.Snapshot{}
	for _, r := range rows {
		rd.Devices[r.gpu] = r.dev
		snap := results.Snapshot{Values: results.Values{}}
		for m, v := range r.vals {
			per[m] = append(per[m], v)
			snap.Values[m] = v
			if rd.Matched == nil {
				rd.Matched = map[results.Meaning]string{}
			}
			if _, ok := rd.Matched[m]; !ok {
				rd.Matched[m] = prof + " " + r.from[m]
			}
		}
		engines[r.gpu] = snap
	}
	for m, vs := range per {
		if len(vs) != len(rows) {
			continue // a GPU without it: the sum would undercount
		}
		v := combine(vs, m.Averaged())
		if !finite(v) {
			continue
		}
		if rd.Values == nil {
			rd.Values = results.Values{}
		}
		rd.Values[m] = v
	}
	for m := range rd.Matched {
		if _, ok := rd.Values[m]; !ok {
			delete(rd.Matched, m)
		}
	}
	if len(engines) > 1 {
		rd.Engines = engines
	}
	return rd
}
