package results

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestMinSamplesFor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		stat string
		want int
	}{{"p50", 4}, {"p90", 35}, {"p95", 73}, {"p99", 381}, {"p99_9", 3838}}
	for _, tc := range tests {
		q, ok := Quantile(tc.stat)
		if !ok {
			t.Fatalf("%s is not a quantile", tc.stat)
		}
		if got := MinSamplesFor(q); got != tc.want {
			t.Errorf("MinSamplesFor(%s) = %d, want %d", tc.stat, got, tc.want)
		}
	}
	for _, s := range []string{"mean", "max", "min"} {
		if _, ok := Quantile(s); ok {
			t.Errorf("%s counted as a quantile", s)
		}
	}
}

// TestMetricTable checks the metric table: every latency metric observes
// request records, every metric is described, and names are unique (a
// budget set is keyed by them).
func TestMetricTable(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, m := range Metrics() {
		if seen[m.Name] || m.Name == minSamplesKey {
			t.Errorf("metric name %s is taken twice", m.Name)
		}
		seen[m.Name] = true
		if (m.Class == Latency) != (m.Observe != nil) {
			t.Errorf("metric %s: class %d, Observe set %v", m.Name, m.Class, m.Observe != nil)
		}
		if len(m.Stats()) == 0 || m.Unit == "" || m.About == "" {
			t.Errorf("metric %s is incomplete: %+v", m.Name, m)
		}
	}
}

// budgetSetV1 is the shape BudgetSet had when every metric was a field of
// its own (up to 2026-11): results files written then carry it in their
// header, and older readers expect it.
type budgetSetV1 struct {
	TTFTMs             *Limits `json:"ttft_ms,omitempty"`
	TTFCMs             *Limits `json:"ttfc_ms,omitempty"`
	ITLMs              *Limits `json:"itl_ms,omitempty"`
	TPOTMs             *Limits `json:"tpot_ms,omitempty"`
	E2EMs              *Limits `json:"e2e_ms,omitempty"`
	ErrorRate          *Limits `json:"error_rate,omitempty"`
	DropRate           *Limits `json:"drop_rate,omitempty"`
	OutputTokensPerSec *Limits `json:"output_tokens_per_s,omitempty"`
	RequestsPerSec     *Limits `json:"requests_per_s,omitempty"`
	TotalTokensPerSec  *Limits `json:"total_tokens_per_s,omitempty"`
	InputsPerSec       *Limits `json:"inputs_per_s,omitempty"`
	Goodput            *Limits `json:"goodput,omitempty"`
	Preemptions        *Limits `json:"preemptions,omitempty"`
	KVUsage            *Limits `json:"kv_usage,omitempty"`
	JoulesPerToken     *Limits `json:"joules_per_token,omitempty"`
	USDPerMTok         *Limits `json:"usd_per_mtok,omitempty"`
	TokenCountMismatch *Limits `json:"token_count_mismatch,omitempty"`
	MinSamples         int     `json:"min_samples,omitempty"`
}

func ptr(v float64) *float64 { return &v }

// TestBudgetSetJSONCompatible checks that a budget set keyed by metric
// name reads and writes the bytes of the field-per-metric shape, both
// ways, for every budgeted metric of the table at once and for a few.
func TestBudgetSetJSONCompatible(t *testing.T) {
	t.Parallel()
	all := budgetSetV1{MinSamples: 50}
	v := reflect.ValueOf(&all).Elem()
	for i := range v.NumField() - 1 {
		v.Field(i).Set(reflect.ValueOf(&Limits{Max: ptr(float64(i) + 0.5)}))
	}
	few := budgetSetV1{TTFTMs: &Limits{P99: ptr(1500), Mean: ptr(300)}, ErrorRate: &Limits{Max: ptr(0.01)},
		OutputTokensPerSec: &Limits{Min: ptr(500)}}
	if v.NumField()-1 != len(Metrics().Budgeted()) {
		t.Fatalf("the v1 shape has %d metrics, the table budgets %d: a metric added to the table needs no field here", v.NumField()-1, len(Metrics().Budgeted()))
	}
	for _, old := range []budgetSetV1{all, few, {}} {
		want, err := json.Marshal(old)
		if err != nil {
			t.Fatal(err)
		}
		var s BudgetSet
		if err := json.Unmarshal(want, &s); err != nil {
			t.Fatalf("reading %s: %v", want, err)
		}
		got, err := json.Marshal(&s)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("written back:\n%s\nwant the v1 bytes:\n%s", got, want)
		}
		var back budgetSetV1
		if err := json.Unmarshal(got, &back); err != nil || !reflect.DeepEqual(back, old) {
			t.Errorf("a v1 reader got %+v, %v; want %+v", back, err, old)
		}
	}
}

// TestBudgetSetJSONKeepsUnknown checks that a set read from a newer
// version's file keeps the limits of a metric this table lacks, writes
// them after the table's, and drops null limits as the fields did.
func TestBudgetSetJSONKeepsUnknown(t *testing.T) {
	t.Parallel()
	in := `{"zz_new_ms":{"p99":3},"e2e_ms":{"max":9},"ttft_ms":null,"aa_new":{"max":1},"min_samples":7}`
	var s BudgetSet
	if err := json.Unmarshal([]byte(in), &s); err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"e2e_ms":{"max":9},"aa_new":{"max":1},"zz_new_ms":{"p99":3},"min_samples":7}`
	if string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
	var names []string
	for _, b := range s.List() {
		names = append(names, b.Metric)
	}
	if strings.Join(names, " ") != "e2e_ms aa_new zz_new_ms" {
		t.Errorf("List order %v", names)
	}
	for _, bad := range []string{`[]`, `{"ttft_ms":{"p99":"x"}}`, `{"min_samples":"x"}`} {
		if err := json.Unmarshal([]byte(bad), &s); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// FuzzBudgetSetJSON checks that whatever a budget set reads it writes back
// to a set that reads the same.
func FuzzBudgetSetJSON(f *testing.F) {
	f.Add(`{"ttft_ms":{"p99":1500},"error_rate":{"max":0.01},"min_samples":3}`)
	f.Add(`{"new_ms":{"p50":1},"ttft_ms":null}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, in string) {
		var s BudgetSet
		if json.Unmarshal([]byte(in), &s) != nil {
			return
		}
		out, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("%q read, not written: %v", in, err)
		}
		var back BudgetSet
		if err := json.Unmarshal(out, &back); err != nil || !reflect.DeepEqual(back, s) {
			t.Fatalf("%q → %s → %+v, %v; want %+v", in, out, back, err, s)
		}
	})
}
