package simurl

import (
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw     string
		want    URL
		wantErr string
	}{
		{raw: "sim://tiny", want: URL{Preset: "tiny"}},
		{raw: "sim://gpt-oss-120b-h100/", want: URL{Preset: "gpt-oss-120b-h100"}},
		{raw: "sim:tiny", want: URL{Preset: "tiny"}},
		{raw: "sim://tiny?seed=7&max_num_seqs=2", want: URL{Preset: "tiny", Settings: []Setting{{"max_num_seqs", "2"}, {"seed", "7"}}}},
		{raw: "sim://Tiny", wantErr: "lower-case preset"},
		{raw: "sim://tiny/x", wantErr: "lower-case preset"},
		{raw: "http://tiny", wantErr: "want sim://PRESET"},
		{raw: "sim://tiny?seed=1&seed=2", wantErr: "given 2 times"},
		{raw: "sim://tiny?seed=", wantErr: "no value"},
		{raw: "sim://tiny?Seed=1", wantErr: "lower-case name"},
		{raw: "sim://tiny?a=%zz", wantErr: "settings of"},
		{raw: "sim://./twin.yaml", want: URL{File: "./twin.yaml"}},
		{raw: "sim://../runs/twin.yaml?seed=3", want: URL{File: "../runs/twin.yaml", Settings: []Setting{{"seed", "3"}}}},
		{raw: "sim:///tmp/my%20twin.yaml", want: URL{File: "/tmp/my twin.yaml"}},
		{raw: "sim://twin.yaml", wantErr: "sim://./twin.yaml"},
		{raw: "sim://./", wantErr: "directory"},
		{raw: "sim://./x.yaml#frag", wantErr: "fragment"},
		{raw: "sim://./x.yaml?seed=", wantErr: "no value"},
	}
	for _, tc := range tests {
		got, err := Parse(tc.raw)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Parse(%q) error = %v, want %q", tc.raw, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tc.raw, got, err, tc.want)
		}
	}
	if !Is("sim://tiny") || !Is("SIM:x") || Is("http://127.0.0.1") {
		t.Error("Is disagrees")
	}
}

// TestFile covers preset files: In resolves a relative path against a
// directory, String writes a form Parse reads back, With keeps the file.
func TestFile(t *testing.T) {
	t.Parallel()
	u, err := Parse("sim://./twin.yaml?seed=1")
	if err != nil {
		t.Fatal(err)
	}
	if got := u.In("/data/scenarios").File; got != "/data/scenarios/twin.yaml" {
		t.Errorf("In(abs dir) = %q", got)
	}
	if got := u.In("scenarios").File; got != "./scenarios/twin.yaml" {
		t.Errorf("In(rel dir) = %q", got)
	}
	if got := u.In("").File; got != "./twin.yaml" {
		t.Errorf("In(\"\") = %q", got)
	}
	w := u.With("max_num_seqs", "4")
	if got, want := w.String(), "sim://./twin.yaml?max_num_seqs=4&seed=1"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	odd := URL{File: "/tmp/a b?#%.yaml"}
	back, err := Parse(odd.String())
	if err != nil || back.File != odd.File {
		t.Errorf("%+v → %q → %+v, %v", odd, odd.String(), back, err)
	}
	if u.Name() != "./twin.yaml" || (URL{Preset: "tiny"}).Name() != "tiny" {
		t.Error("Name disagrees")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"sim://tiny", "sim://tiny?seed=7&max_num_seqs=2", "sim:x", "sim://a?b=%20c",
		"sim://./twin.yaml?seed=1", "sim:///a%25b/c.yaml"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := Parse(raw)
		if err != nil {
			return
		}
		// What parses formats to a URL that parses back to the same value.
		back, err := Parse(u.String())
		if err != nil || !reflect.DeepEqual(back, u) {
			t.Fatalf("%q → %+v → %q → %+v, %v", raw, u, u.String(), back, err)
		}
		if w := u.With("seed", "9"); w.String() == "" || len(w.Settings) < 1 {
			t.Fatalf("With lost the setting: %+v", w)
		}
	})
}
