package scenario

import (
	"os"
	"testing"

	"github.com/servebench/servebench/results"
)

// TestResolvedSpec checks that the part of the resolved scenario reports
// read (results.Spec: the workload box of the report) decodes from what
// this package writes: the JSON keys of the two must agree.
func TestResolvedSpec(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../scenarios/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := Parse("quickstart.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sc.Resolved()
	if err != nil {
		t.Fatal(err)
	}
	spec, err := results.DecodeSpec(raw)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Target.URL != "sim://tiny" || spec.Target.API != "chat" {
		t.Errorf("target = %+v", spec.Target)
	}
	if got := spec.Prompts.InputTokens.String(); got != "uniform 128–384" {
		t.Errorf("input tokens %q", got)
	}
	if got := spec.Prompts.OutputTokens.String(); got != "uniform 64–128" {
		t.Errorf("output tokens %q", got)
	}
	if spec.Prompts.SharedPrefixTokens != 64 || spec.Prompts.Tokenizer != "o200k_base" {
		t.Errorf("prompts = %+v", spec.Prompts)
	}
	st := spec.Load.Stages
	if len(st) != 2 || st[0].Requests != 96 || st[0].Duration != "20s" || st[0].Warmup.Requests != 8 ||
		st[1].Rate != 30 || st[1].Arrival != "poisson" || st[1].MaxConcurrency != 32 || st[1].Duration != "15s" {
		t.Errorf("stages = %+v", st)
	}
}
