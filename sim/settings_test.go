package sim

import (
	"regexp"
	"strings"
	"testing"
)

// TestSettingsDocumented: every setting a preset file takes is listed with
// a meaning from its doc comment, in YAML keys rather than Go names, and
// has a value in a preset.
func TestSettingsDocumented(t *testing.T) {
	all, err := Settings()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	vals, err := cfg.Values()
	if err != nil {
		t.Fatal(err)
	}
	goName := regexp.MustCompile(`\b[A-Z][a-z]+[A-Z][A-Za-z]*\b`)
	seen := map[string]bool{}
	for _, s := range all {
		seen[s.Name] = true
		if s.Meaning == "(undocumented)" || len(s.Meaning) < 10 {
			t.Errorf("%s: meaning %q", s.Name, s.Meaning)
		}
		if m := goName.FindString(s.Meaning); m != "" {
			t.Errorf("%s: meaning names the Go identifier %s: %q", s.Name, m, s.Meaning)
		}
		if _, ok := vals[s.Name]; !ok {
			t.Errorf("%s: no value in the tiny preset", s.Name)
		}
	}
	for _, want := range []string{"max_num_seqs", "max_num_batched_tokens", "kv_cache_memory_bytes", "step_overhead_us"} {
		if !seen[want] {
			t.Errorf("%s is not listed", want)
		}
	}
	if seen["base"] || seen["calibration"] {
		t.Error("base or calibration listed as a setting")
	}
}

// TestSetUnknownSuggests: a mistyped setting names the one meant.
func TestSetUnknownSuggests(t *testing.T) {
	cfg, err := Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.Set("max_num_seq", "3")
	if err == nil || !strings.Contains(err.Error(), "unknown setting max_num_seq (did you mean max_num_seqs?)") {
		t.Errorf("err = %v", err)
	}
	err = cfg.Set("warp_drive", "on")
	if err == nil || !strings.Contains(err.Error(), "bench sim --list-settings") {
		t.Errorf("err = %v", err)
	}
}
