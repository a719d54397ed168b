package scrape

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scrape/profile"
)

// AMDSMIReader reads the JSON that `amd-smi metric --json` writes into
// GPU readings, as SMIReader reads nvidia-smi's CSV. It takes a stream of
// JSON documents, each a list of GPU entries ([{"gpu": 0, "power": …}]),
// the same list under "gpu_data" (the shape since amd-smi 26), or one
// entry, with any text between them skipped (the banner watch mode (-w)
// prints first, warnings). Values are read as {"value": 10, "unit": "W"}
// objects, bare numbers (releases before ROCm 6.1) or strings ("20 W");
// "N/A", a section that is "N/A" and lists per engine are unknown. A
// sample is the entries of consecutive GPUs and ends where a GPU index
// comes again, or once every GPU has an entry. It is not safe for
// concurrent use.
type AMDSMIReader struct {
	src     io.Reader
	r       *bufio.Reader
	doc     int        // documents read
	entries []amdEntry // read, not yet grouped
	group   []smiRow
	ngpu    int
	only    []string
}

// amdEntry is one GPU's entry of a document.
type amdEntry struct {
	row smiRow
	doc int
}

// maxAMDSMIEntries bounds the entries one document may hold.
const maxAMDSMIEntries = maxSMIGPUs

// NewAMDSMIReader returns a reader of the amd-smi JSON documents in r.
func NewAMDSMIReader(r io.Reader) *AMDSMIReader {
	return &AMDSMIReader{src: r, r: bufio.NewReader(r)}
}

// Only restricts the entries read to the GPUs of these indexes; none
// reads every GPU.
func (a *AMDSMIReader) Only(indexes ...string) { a.only = indexes }

// Next returns the next sample's time (its first entry's "timestamp",
// which watch mode writes) and reading, or io.EOF after the last. An
// entry without a timestamp cannot be placed on the run's timeline and
// is an error, as is a document that is not amd-smi's JSON.
func (a *AMDSMIReader) Next() (time.Time, results.Reading, error) {
	for {
		e, err := a.entry()
		if errors.Is(err, io.EOF) {
			if len(a.group) == 0 {
				return time.Time{}, results.Reading{}, io.EOF
			}
			return a.flush()
		}
		if err != nil {
			return time.Time{}, results.Reading{}, err
		}
		if e.row.at.IsZero() {
			return time.Time{}, results.Reading{}, fmt.Errorf("amd-smi JSON: document %d: GPU %s's entry has no timestamp (write the file with amd-smi metric -w N --json, which stamps each entry)", e.doc, e.row.gpu)
		}
		if len(a.only) > 0 && !slices.Contains(a.only, e.row.gpu) {
			continue
		}
		repeat := slices.ContainsFunc(a.group, func(r smiRow) bool { return r.gpu == e.row.gpu })
		if repeat || len(a.group) >= maxSMIGPUs {
			if a.ngpu == 0 {
				a.ngpu = len(a.group)
			}
			at, rd, err := a.flush()
			a.group = append(a.group, e.row)
			return at, rd, err
		}
		a.group = append(a.group, e.row)
		if a.ngpu > 0 && len(a.group) == a.ngpu {
			return a.flush()
		}
	}
}

func (a *AMDSMIReader) flush() (time.Time, results.Reading, error) {
	rows := a.group
	a.group = nil
	return rows[0].at, gpuReading(profile.AMDSMI, rows), nil
}

// entry returns the next GPU entry, reading the next document when the
// last one's entries are used up.
func (a *AMDSMIReader) entry() (amdEntry, error) {
	for len(a.entries) == 0 {
		raw, err := a.document()
		if err != nil {
			return amdEntry{}, err
		}
		a.doc++
		if a.entries, err = amdEntries(raw, a.doc); err != nil {
			return amdEntry{}, err
		}
	}
	e := a.entries[0]
	a.entries = a.entries[1:]
	return e, nil
}

// document skips to the next line that opens a JSON document (a list of
// objects, or an object) and decodes one JSON value from there.
func (a *AMDSMIReader) document() (json.RawMessage, error) {
	for {
		b, err := a.r.Peek(1)
		if err != nil {
			return nil, err // io.EOF at the end
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n':
			_, _ = a.r.ReadByte()
			continue
		case '[', '{':
			if !a.opensDocument() {
				break // a line such as "[WARNING] …": skipped below
			}
			dec := json.NewDecoder(a.r)
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return nil, fmt.Errorf("amd-smi JSON: document %d: %w", a.doc+1, err)
			}
			a.resume(dec)
			return raw, nil
		}
		if _, err := a.r.ReadString('\n'); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
	}
}

// opensDocument reports whether the reader is at the start of one of
// amd-smi's documents: a list of objects ("[", then "{" or "]") or an
// object ("{", then a key or "}"), white space between.
func (a *AMDSMIReader) opensDocument() bool {
	b, _ := a.r.Peek(256)
	if len(b) == 0 {
		return false
	}
	rest := bytes.TrimLeft(b[1:], " \t\r\n")
	if len(rest) == 0 {
		return len(b) < 256 // the end, or only white space so far: let the decoder say
	}
	if b[0] == '[' {
		return rest[0] == '{' || rest[0] == ']'
	}
	return rest[0] == '"' || rest[0] == '}'
}

// resume goes on reading after what dec decoded: the bytes it read
// ahead, those still buffered, then the source (one layer deep, however
// many documents).
func (a *AMDSMIReader) resume(dec *json.Decoder) {
	ahead, _ := io.ReadAll(dec.Buffered())
	buffered, _ := a.r.Peek(a.r.Buffered())
	rest := append(ahead, buffered...)
	a.r = bufio.NewReader(io.MultiReader(bytes.NewReader(rest), a.src))
}

// amdEntries reads the GPU entries of one document: a list, a list under
// "gpu_data", or one entry.
func amdEntries(raw json.RawMessage, doc int) ([]amdEntry, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '{' {
		var wrap struct {
			GPUData json.RawMessage `json:"gpu_data"`
			GPU     json.RawMessage `json:"gpu"`
		}
		if err := json.Unmarshal(raw, &wrap); err != nil {
			return nil, fmt.Errorf("amd-smi JSON: document %d: %w", doc, err)
		}
		switch {
		case wrap.GPUData != nil:
			raw = wrap.GPUData
		case wrap.GPU != nil:
			raw = append(append([]byte{'['}, raw...), ']')
		default:
			return nil, fmt.Errorf("amd-smi JSON: document %d: an object with neither gpu_data nor gpu: is this amd-smi metric --json?", doc)
		}
	}
	var list []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("amd-smi JSON: document %d: want a list of GPU entries: %w", doc, err)
	}
	if len(list) > maxAMDSMIEntries {
		return nil, fmt.Errorf("amd-smi JSON: document %d: %d GPU entries, more than %d", doc, len(list), maxAMDSMIEntries)
	}
	out := make([]amdEntry, 0, len(list))
	for i, m := range list {
		row, err := amdRow(m)
		if err != nil {
			return nil, fmt.Errorf("amd-smi JSON: document %d: entry %d: %w", doc, i+1, err)
		}
		out = append(out, amdEntry{row: row, doc: doc})
	}
	return out, nil
}

// ParseAMDSMI reads the output of one `amd-smi metric … --json` run (one
// or more documents, one entry per GPU) into one GPU reading, keeping
// the GPUs of these indexes (none: every GPU). Output with no GPU entry,
// or with a GPU twice, is an error.
func ParseAMDSMI(out []byte, only ...string) (results.Reading, error) {
	a := NewAMDSMIReader(bytes.NewReader(out))
	var rows []smiRow
	for {
		e, err := a.entry()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return results.Reading{}, err
		}
		if slices.ContainsFunc(rows, func(r smiRow) bool { return r.gpu == e.row.gpu }) {
			return results.Reading{}, fmt.Errorf("amd-smi JSON: document %d: GPU %s a second time in one run's output", e.doc, e.row.gpu)
		}
		if len(only) > 0 && !slices.Contains(only, e.row.gpu) {
			continue
		}
		rows = append(rows, e.row)
	}
	if len(rows) == 0 {
		if a.doc == 0 {
			return results.Reading{}, fmt.Errorf("amd-smi JSON: no JSON document in the output%s", excerpt(out))
		}
		return results.Reading{}, errors.New("amd-smi JSON: no entry for the GPUs asked for")
	}
	return gpuReading(profile.AMDSMI, rows), nil
}

// amdRow reads one GPU's entry: its index, its timestamp when it has
// one, and the values of profile.AMDSMIFields.
func amdRow(m map[string]json.RawMessage) (smiRow, error) {
	var idx json.Number
	if err := json.Unmarshal(m["gpu"], &idx); err != nil {
		return smiRow{}, fmt.Errorf("gpu: want the GPU's index, got %s", excerptRaw(m["gpu"]))
	}
	n, err := strconv.Atoi(idx.String())
	if err != nil || n < 0 {
		return smiRow{}, fmt.Errorf("gpu: want the GPU's index, got %s", idx)
	}
	r := smiRow{gpu: strconv.Itoa(n), vals: map[results.Meaning]float64{}, from: map[results.Meaning]string{}, rank: map[results.Meaning]int{}}
	if ts, ok := m["timestamp"]; ok {
		var sec float64
		if err := json.Unmarshal(ts, &sec); err != nil || !finite(sec) || sec <= 0 || sec > 1e11 {
			return smiRow{}, fmt.Errorf("timestamp: want Unix seconds, got %s", excerptRaw(ts))
		}
		whole, frac := math.Modf(sec)
		r.at = time.Unix(int64(whole), int64(frac*1e9))
	}
	sections := map[string]map[string]json.RawMessage{}
	rank := map[results.Meaning]int{}
	for _, f := range profile.AMDSMIFields() {
		k := rank[f.Meaning]
		rank[f.Meaning]++
		sec, ok := sections[f.Section]
		if !ok {
			// A section amd-smi could not read is "N/A", not an object.
			_ = json.Unmarshal(m[f.Section], &sec)
			sections[f.Section] = sec
		}
		v, ok := amdValue(sec[f.Key], f.Unit)
		if !ok {
			continue
		}
		if prev, seen := r.rank[f.Meaning]; seen && prev < k {
			continue
		}
		r.vals[f.Meaning], r.from[f.Meaning], r.rank[f.Meaning] = v, f.Section+"."+f.Key, k
	}
	return r, nil
}

// amdValue reads one value in the unit of its meaning: {"value": v,
// "unit": u}, a bare number in the field's own unit, or a string "20 W".
// "N/A", lists (one value per engine), unknown units and values out of
// range are unknown.
func amdValue(raw json.RawMessage, unit string) (float64, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return 0, false
	}
	if raw[0] == '{' {
		var obj struct {
			Value json.RawMessage `json:"value"`
			Unit  string          `json:"unit"`
		}
		if json.Unmarshal(raw, &obj) != nil || len(obj.Value) == 0 || obj.Value[0] == '{' {
			return 0, false
		}
		if obj.Unit != "" {
			unit = obj.Unit
		}
		raw = obj.Value
	}
	var num float64
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0, false
		}
		f := strings.Fields(s)
		if len(f) == 0 || len(f) > 2 {
			return 0, false
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return 0, false
		}
		num = v
		if len(f) == 2 {
			unit = f[1]
		}
	} else if json.Unmarshal(raw, &num) != nil {
		return 0, false
	}
	return amdScale(num, unit)
}

// amdScale converts a value in one of amd-smi's units to its meaning's:
// watts, a fraction, bytes.
func amdScale(v float64, unit string) (float64, bool) {
	var scale float64
	switch unit {
	case "W":
		scale = 1
	case "mW":
		scale = 1e-3
	case "%":
		if v > 100 { // amd-smi writes N/A for more; 0xFFFF is its "no value"
			return 0, false
		}
		scale = 0.01
	case "B":
		scale = 1
	case "KB", "KiB":
		scale = 1 << 10
	case "MB", "MiB":
		scale = 1 << 20
	case "GB", "GiB":
		scale = 1 << 30
	default:
		return 0, false
	}
	v *= scale
	if !finite(v) || v < 0 {
		return 0, false
	}
	return v, true
}

// excerptRaw shows the start of a JSON value in a message.
func excerptRaw(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "nothing"
	}
	return strings.TrimPrefix(excerpt(raw), ": ")
}
