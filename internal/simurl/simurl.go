// Package simurl owns the syntax of a built-in simulator target:
// sim://PRESET?setting=value&… for an embedded preset, or
// sim://./FILE.yaml?… (sim://../FILE, sim:///ABSOLUTE/FILE) for a preset
// file such as the twin `bench calibrate` writes. The scenario validator
// checks a target's form with it, the simulator resolves one into its
// configuration (sim.ConfigFromURL), and a sweep adds its values to one, so
// the three cannot disagree on what a sim URL is.
//
// It knows the form only: which presets exist, what a file holds and which
// settings they take is the simulator's business.
package simurl

import (
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Scheme is the URL scheme of the built-in simulator.
const Scheme = "sim"

var (
	presetRE  = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
	settingRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
)

// Setting is one simulator setting given in the URL's query.
type Setting struct {
	Name, Value string
}

// URL is a parsed simulator target: an embedded preset or a preset file
// (exactly one of Preset and File is set), and settings over it.
type URL struct {
	Preset string // "tiny", "gpt-oss-120b-h100", …
	// File is a preset file's path as written, starting with "./", "../"
	// or "/" (which is how the form tells a file from a preset name).
	// A relative path is relative to whoever resolves it (see In).
	File     string
	Settings []Setting // sorted by name; each name at most once
}

// isFile reports whether the part of a sim URL after "sim://" names a
// preset file rather than a preset.
func isFile(p string) bool {
	return strings.HasPrefix(p, "./") || strings.HasPrefix(p, "../") || strings.HasPrefix(p, "/")
}

// Is reports whether raw names the simulator (its scheme is sim).
func Is(raw string) bool {
	return strings.HasPrefix(strings.ToLower(raw), Scheme+":")
}

// Parse parses sim://PRESET[?name=value&…] or sim://FILE[?…]. The preset
// is a lower-case name; a file path starts with "./", "../" or "/" (so
// sim://./twin.yaml, sim:///tmp/twin.yaml) and may be percent-escaped;
// each setting name is a lower-case identifier given once with a non-empty
// value.
func Parse(raw string) (URL, error) {
	if rest, ok := strings.CutPrefix(raw, Scheme+"://"); ok && isFile(rest) {
		return parseFile(raw, rest)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != Scheme {
		return URL{}, fmt.Errorf("want sim://PRESET (a lower-case preset name, like sim://tiny) or sim://./FILE.yaml, got %q", raw)
	}
	preset := u.Host
	if preset == "" {
		preset = u.Opaque
	}
	if (strings.HasSuffix(preset, ".yaml") || strings.HasSuffix(preset, ".yml")) && (u.Path == "" || u.Path == "/") {
		return URL{}, fmt.Errorf("%q names a preset, not a file: write a preset file's path from ./, ../ or / (sim://./%s)", raw, preset)
	}
	if !presetRE.MatchString(preset) || (u.Path != "" && u.Path != "/") || u.User != nil || u.Fragment != "" {
		return URL{}, fmt.Errorf("want sim://PRESET (a lower-case preset name, like sim://tiny) or sim://./FILE.yaml, got %q", raw)
	}
	return withQuery(URL{Preset: preset}, raw, u.RawQuery)
}

// parseFile parses the part after sim:// of a preset-file URL.
func parseFile(raw, rest string) (URL, error) {
	path, query, _ := strings.Cut(rest, "?")
	if strings.Contains(path, "#") {
		return URL{}, fmt.Errorf("preset file in %q: a fragment (#) is not allowed", raw)
	}
	file, err := url.PathUnescape(path)
	if err != nil {
		return URL{}, fmt.Errorf("preset file in %q: %w", raw, err)
	}
	if strings.HasSuffix(file, "/") || file == "." || file == ".." {
		return URL{}, fmt.Errorf("preset file in %q: want a file, got a directory", raw)
	}
	return withQuery(URL{File: file}, raw, query)
}

// withQuery adds the settings of a raw query to out.
func withQuery(out URL, raw, rawQuery string) (URL, error) {
	if rawQuery == "" {
		return out, nil
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return URL{}, fmt.Errorf("settings of %q: %w", raw, err)
	}
	for name, vs := range q {
		switch {
		case !settingRE.MatchString(name):
			return URL{}, fmt.Errorf("setting %q of %q: want a lower-case name like max_num_seqs", name, raw)
		case len(vs) != 1:
			return URL{}, fmt.Errorf("setting %s of %q: given %d times", name, raw, len(vs))
		case vs[0] == "":
			return URL{}, fmt.Errorf("setting %s of %q: no value", name, raw)
		}
		out.Settings = append(out.Settings, Setting{name, vs[0]})
	}
	slices.SortFunc(out.Settings, func(a, b Setting) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// In returns u with a relative preset file resolved against dir (a
// scenario file's directory); a preset, an absolute file or an empty dir
// leave u unchanged.
func (u URL) In(dir string) URL {
	if u.File == "" || filepath.IsAbs(u.File) || dir == "" {
		return u
	}
	out := u
	out.File = filepath.Join(dir, u.File)
	if !isFile(out.File) {
		out.File = "./" + out.File
	}
	return out
}

// Name is what the URL runs, for messages: the preset's name or the file.
func (u URL) Name() string {
	if u.File != "" {
		return u.File
	}
	return u.Preset
}

// With returns a copy of u with the setting name set to value, replacing
// any earlier value.
func (u URL) With(name, value string) URL {
	out := URL{Preset: u.Preset, File: u.File}
	for _, s := range u.Settings {
		if s.Name != name {
			out.Settings = append(out.Settings, s)
		}
	}
	out.Settings = append(out.Settings, Setting{name, value})
	slices.SortFunc(out.Settings, func(a, b Setting) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// String formats u as sim://PRESET?name=value&… (sim://FILE?… for a
// file) with the settings sorted by name; Parse reads it back.
func (u URL) String() string {
	var b strings.Builder
	b.WriteString(Scheme + "://")
	if u.File != "" {
		b.WriteString(escapePath(u.File))
	} else {
		b.WriteString(u.Preset)
	}
	for i, s := range u.Settings {
		if i == 0 {
			b.WriteByte('?')
		} else {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(s.Name) + "=" + url.QueryEscape(s.Value))
	}
	return b.String()
}

// escapePath percent-escapes what would otherwise end the path or be
// unescaped differently: '%', '?', '#' and spaces.
func escapePath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '%', '?', '#', ' ':
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
