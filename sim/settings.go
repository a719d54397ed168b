package sim

import (
	_ "embed"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/servebench/servebench/internal/suggest"
)

// configSource is this package's config.go: the Config struct's doc
// comments are the settings' documentation, so `bench sim
// --list-settings` cannot drift from the code.
//
//go:embed config.go
var configSource []byte

// Setting is one simulator setting: its YAML key (the name --set, preset
// files and sim:// queries use), the kind of value, and what it means.
type Setting struct {
	Name    string
	Kind    string // "integer", "number", "text", "true/false", "duration"
	Meaning string
}

var settings = sync.OnceValues(parseSettings)

// Settings lists every setting of Config a user may set, in the order the
// struct declares them, with the meaning its doc comment gives.
func Settings() ([]Setting, error) { return settings() }

func parseSettings() ([]Setting, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "config.go", configSource, parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("simulator settings: %w", err)
	}
	docs := map[string]string{} // Go field name → doc comment
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != "Config" {
			return true
		}
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			return false
		}
		for _, fld := range st.Fields.List {
			for _, name := range fld.Names {
				docs[name.Name] = strings.Join(strings.Fields(fld.Doc.Text()), " ")
			}
		}
		return false
	})
	t := reflect.TypeFor[Config]()
	// The comments name fields as Go does; a user knows the YAML keys.
	var pairs []string
	for i := range t.NumField() {
		fld := t.Field(i)
		if name, _, _ := strings.Cut(fld.Tag.Get("yaml"), ","); name != "" && name != "-" {
			pairs = append(pairs, fld.Name, name)
		}
	}
	keys := strings.NewReplacer(pairs...)
	var out []Setting
	for i := range t.NumField() {
		fld := t.Field(i)
		name, _, _ := strings.Cut(fld.Tag.Get("yaml"), ",")
		if name == "" || name == "-" || name == "base" || name == "calibration" {
			continue
		}
		out = append(out, Setting{Name: name, Kind: kindOf(fld.Type), Meaning: meaning(fld.Name, docs[fld.Name], keys)})
	}
	return out, nil
}

// meaning turns a doc comment ("MaxNumSeqs caps the running requests.")
// into a meaning ("caps the running requests."), with fields named by
// their YAML keys.
func meaning(field, doc string, keys *strings.Replacer) string {
	doc = strings.TrimPrefix(strings.TrimPrefix(doc, field), ",")
	doc = keys.Replace(strings.TrimSpace(doc))
	if doc == "" {
		return "(undocumented)"
	}
	return doc
}

func kindOf(t reflect.Type) string {
	if t.String() == "time.Duration" {
		return "duration"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Uint64, reflect.Int32:
		return "integer"
	case reflect.Float64:
		return "number"
	case reflect.Bool:
		return "true/false"
	case reflect.String:
		return "text"
	}
	return "list"
}

// Values returns c's settings as they would be written in a preset file,
// by YAML key.
func (c Config) Values() (map[string]string, error) {
	b, err := yaml.Marshal(c)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(m))
	if all, err := Settings(); err == nil {
		for _, st := range all {
			out[st.Name] = "" // left out when empty
		}
	}
	for k, v := range m {
		if d, ok := v.(string); ok {
			out[k] = d
			continue
		}
		b, err := yaml.Marshal(v)
		if err != nil {
			return nil, err
		}
		out[k] = strings.TrimSpace(string(b))
	}
	return out, nil
}

// unknownSetting is the message for a key that is no setting, with the
// closest setting's name when one is near.
func unknownSetting(key string) string {
	all, err := Settings()
	if err != nil {
		return "unknown setting " + key
	}
	names := make([]string, len(all))
	for i, s := range all {
		names[i] = s.Name
	}
	if best, ok := suggest.Closest(key, names); ok {
		return fmt.Sprintf("unknown setting %s (did you mean %s?)", key, best)
	}
	return fmt.Sprintf("unknown setting %s ('bench sim --list-settings' lists them)", key)
}
