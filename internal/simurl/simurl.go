// Package simurl owns the syntax of a built-in simulator target:
// sim://PRESET?setting=value&… . The scenario validator checks a target's
// form with it, the simulator resolves one into its configuration
// (sim.ConfigFromURL), and a sweep adds its values to one, so the three
// cannot disagree on what a sim URL is.
//
// It knows the form only: which presets exist and which settings they
// take is the simulator's business.
package simurl

import (
	"fmt"
	"net/url"
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

// URL is a parsed simulator target.
type URL struct {
	Preset   string    // "tiny", "gpt-oss-120b-h100", …
	Settings []Setting // sorted by name; each name at most once
}

// Is reports whether raw names the simulator (its scheme is sim).
func Is(raw string) bool {
	return strings.HasPrefix(strings.ToLower(raw), Scheme+":")
}

// Parse parses sim://PRESET[?name=value&…]. The preset is a lower-case
// name; each setting name is a lower-case identifier given once with a
// non-empty value.
func Parse(raw string) (URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != Scheme {
		return URL{}, fmt.Errorf("want sim://PRESET (a lower-case preset name, like sim://tiny), got %q", raw)
	}
	preset := u.Host
	if preset == "" {
		preset = u.Opaque
	}
	if !presetRE.MatchString(preset) || (u.Path != "" && u.Path != "/") || u.User != nil || u.Fragment != "" {
		return URL{}, fmt.Errorf("want sim://PRESET (a lower-case preset name, like sim://tiny), got %q", raw)
	}
	out := URL{Preset: preset}
	if u.RawQuery == "" {
		return out, nil
	}
	q, err := url.ParseQuery(u.RawQuery)
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

// With returns a copy of u with the setting name set to value, replacing
// any earlier value.
func (u URL) With(name, value string) URL {
	out := URL{Preset: u.Preset}
	for _, s := range u.Settings {
		if s.Name != name {
			out.Settings = append(out.Settings, s)
		}
	}
	out.Settings = append(out.Settings, Setting{name, value})
	slices.SortFunc(out.Settings, func(a, b Setting) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// String formats u as sim://PRESET?name=value&… with the settings sorted
// by name; Parse reads it back.
func (u URL) String() string {
	var b strings.Builder
	b.WriteString(Scheme + "://" + u.Preset)
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
