package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPresetsLoad(t *testing.T) {
	t.Parallel()
	names := PresetNames()
	want := []string{"deepseek-r1-32b", "gpt-oss-120b-h100", "gpt-oss-20b-a100", "tiny"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("PresetNames() = %v, want %v", names, want)
	}
	for _, name := range names {
		c, err := Preset(name)
		if err != nil {
			t.Errorf("Preset(%q): %v", name, err)
			continue
		}
		if c.Name != name {
			t.Errorf("Preset(%q).Name = %q", name, c.Name)
		}
	}
	if _, err := Preset("nope"); err == nil {
		t.Error("Preset(nope) succeeded")
	}
}

func TestSet(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, key, value string
		ok               bool
		check            func(Config) bool
	}{
		{"budget", "max_num_batched_tokens", "4096", true, func(c Config) bool { return c.MaxNumBatchedTokens == 4096 }},
		{"seed", "seed", "7", true, func(c Config) bool { return c.Seed == 7 }},
		{"duration", "log_stats_interval", "250ms", true, func(c Config) bool { return c.LogStatsInterval == 250*time.Millisecond }},
		{"bool", "enable_prefix_caching", "false", true, func(c Config) bool { return !c.EnablePrefixCaching }},
		{"float", "per_kv_token_ns", "12.5", true, func(c Config) bool { return c.PerKVTokenNS == 12.5 }},
		{"unknown key", "max_num_seq", "4", false, nil},
		{"bad type", "max_num_seqs", "many", false, nil},
		{"invalid value", "max_num_batched_tokens", "2", false, nil},
		{"base", "base", "tiny", false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := Preset("tiny")
			if err != nil {
				t.Fatal(err)
			}
			before := c
			err = c.Set(tc.key, tc.value)
			if (err == nil) != tc.ok {
				t.Fatalf("Set(%s, %s) error = %v, want ok=%v", tc.key, tc.value, err, tc.ok)
			}
			if !tc.ok && c != before {
				t.Errorf("a failed Set changed the config")
			}
			if tc.ok && !tc.check(c) {
				t.Errorf("Set(%s, %s) did not take: %+v", tc.key, tc.value, c)
			}
		})
	}
}

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	c, err := LoadConfig(write("based.yaml", "base: gpt-oss-120b-h100\nname: mine\nmax_num_seqs: 12\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "mine" || c.MaxNumSeqs != 12 || c.MaxModelLen != 98304 || c.Base != "" {
		t.Errorf("based config: %+v", c)
	}
	// Messages are in plain words, with no Go type (issue 11, item 16).
	if _, err := LoadConfig(write("unknown.yaml", "base: tiny\nmax_num_seq: 3\n")); err == nil || !strings.HasSuffix(err.Error(), "unknown.yaml: line 2: unknown field max_num_seq") {
		t.Errorf("unknown key: err = %v", err)
	}
	if _, err := LoadConfig(write("type.yaml", "max_num_seqs: many\n")); err == nil || !strings.HasSuffix(err.Error(), `type.yaml: line 1: want an integer, got "many"`) {
		t.Errorf("wrong type: err = %v", err)
	}
	c = Defaults()
	if err := c.Set("max_num_seqs", "[1]"); err == nil || err.Error() != `set max_num_seqs=[1]: want an integer, got "[1]"` {
		t.Errorf("Set with a wrong type: err = %v", err)
	}
	if _, err := LoadConfig(write("bad.yaml", "max_num_seqs: 0\nmax_model_len: 1\n")); err == nil ||
		!strings.Contains(err.Error(), "max_num_seqs") || !strings.Contains(err.Error(), "max_model_len") {
		t.Errorf("every problem should be reported: err = %v", err)
	}
	if _, err := LoadConfig(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("missing file loaded")
	}
}

// TestConfigFromURLFile reads a preset file named by a sim:// URL, with
// settings from the query applied and checked.
func TestConfigFromURLFile(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "twin.yaml")
	if err := os.WriteFile(p, []byte("base: tiny\nname: twin\nper_seq_us: 75\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := ConfigFromURL("sim://" + p + "?max_num_seqs=4")
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "twin" || c.PerSeqUS != 75 || c.MaxNumSeqs != 4 {
		t.Errorf("config from file URL: %+v", c)
	}
	if _, err := ConfigFromURL("sim://" + p + "?max_num_seqs=0"); err == nil {
		t.Error("a bad setting on a file preset was accepted")
	}
	if _, err := ConfigFromURL("sim://" + p + ".missing"); err == nil {
		t.Error("a missing preset file was accepted")
	}
}
