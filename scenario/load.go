package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/servebench/servebench/internal/inputfile"
	suggestpkg "github.com/servebench/servebench/internal/suggest"
	"github.com/servebench/servebench/internal/yamlmsg"
)

// FieldError is one problem in a scenario, with its position. It prints as
// "file:line: field: msg"; the line is left out when unknown (0) and the
// field when the problem concerns the whole document.
type FieldError struct {
	File  string // the scenario file, or "--set" for a command-line override
	Line  int    // 1-based line of the field's key; 0 when unknown
	Field string // dot path, like "load.stages[0].rate"; "" for the document
	Msg   string
}

func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":")
		b.WriteString(strconv.Itoa(e.Line))
	}
	if e.Field != "" {
		if b.Len() > 0 {
			b.WriteString(": ")
		}
		b.WriteString(e.Field)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// maxNodes bounds the work of loading a document: every node the
// structural check visits counts once each time it is reached, and so does
// every alias followed and every key a "<<" merge brings in. Nested aliases
// (a "billion laughs") or nested merges expand exponentially; counting each
// expansion stops such a document at the first node past the budget, in
// milliseconds, with one message. Real scenarios use a few hundred. The
// decoders that run after the check expand no more than it counted.
const maxNodes = 100_000

// maxScenarioBytes caps a scenario file: real ones are a few KB, and
// maxNodes bounds what a document may hold anyway.
const maxScenarioBytes = 16 << 20

// Load reads the scenario file at path, applies Defaults and validates it.
// The error, when not nil, joins one *FieldError per problem (use
// errors.As or the Unwrap() []error method to list them).
func Load(path string) (*Scenario, error) {
	data, err := inputfile.ReadFile(path, inputfile.Limit{What: "scenario", MaxBytes: maxScenarioBytes})
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", path, err)
	}
	return Parse(path, data)
}

// Parse is Load for a file already read: name is used in error positions
// and its directory to resolve a relative dataset path.
func Parse(name string, data []byte) (*Scenario, error) {
	raw, err := decode(name, data)
	if err != nil {
		return nil, err
	}
	sc := clone(raw)
	sc.raw = raw
	sc.Defaults()
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	return sc, nil
}

// decode parses and structurally checks a scenario document without
// applying defaults.
func decode(name string, data []byte) (*Scenario, error) {
	src := source{file: name, dir: filepath.Dir(name), pos: map[string]position{}}
	fe := func(line int, field, msg string) error {
		return &FieldError{File: name, Line: line, Field: field, Msg: msg}
	}

	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil && !errors.Is(err, io.EOF) {
		m := yamlmsg.Locate(data, err)
		return nil, fe(m.Line, "", m.Text)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		line := extra.Line
		if err != nil {
			line, _ = yamlErrorLine(err.Error())
		}
		return nil, fe(line, "", "a scenario file holds one YAML document")
	}

	sc := &Scenario{}
	w := walker{src: &src}
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		w.walk(root.Content[0], reflect.TypeFor[Scenario](), "", root.Content[0].Line)
	}
	if len(w.errs) > 0 {
		return nil, joinSorted(w.errs)
	}
	// The structural walk found nothing wrong; the strict decoder is the
	// authority on the values (and catches anything the walk does not).
	if len(root.Content) > 0 {
		strict := yaml.NewDecoder(bytes.NewReader(data))
		strict.KnownFields(true)
		if err := strict.Decode(sc); err != nil {
			var te *yaml.TypeError
			if !errors.As(err, &te) {
				m := yamlmsg.Locate(data, err)
				return nil, fe(m.Line, "", m.Text)
			}
			var errs []error
			for _, m := range te.Errors {
				line, msg := yamlErrorLine(m)
				errs = append(errs, fe(line, src.fieldAt(line), msg))
			}
			return nil, joinSorted(errs)
		}
	}
	sc.src = src
	return sc, nil
}

// yamlErrorLine splits a yaml error message into its line and the rest,
// in plain words.
func yamlErrorLine(msg string) (int, string) {
	m := yamlmsg.Split(msg)
	return m.Line, m.Text
}

// fieldAt returns the deepest field path recorded at line, or "".
func (s *source) fieldAt(line int) string {
	best := ""
	for p, pos := range s.pos {
		if pos.line == line && pos.file == s.file && len(p) > len(best) {
			best = p
		}
	}
	return best
}

// at returns the position of field path, falling back to its nearest
// recorded ancestor ("load.stages[0].rate" → "load.stages[0]" → "load").
func (s *source) at(path string) position {
	for p := path; ; {
		if pos, ok := s.pos[p]; ok {
			return pos
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return position{file: s.file}
}

// walker checks a YAML node tree against the scenario's Go types: every key
// known, no key twice, every value of the right kind. It records the line
// of every field path and reports every problem (not just the first) with
// its path.
type walker struct {
	src     *source
	errs    []error
	nodes   int    // work done, against maxNodes (see spend)
	over    bool   // the budget is spent: stop walking
	alias   int    // line of the outermost alias being expanded; 0 outside one
	aliasAt string // the path of that alias
	file    string // overrides src.file in positions and errors (for --set)
	nest    int    // depth in the free-form value being checked
	top     string // the path of that value
	deep    bool   // a free-form value nested deeper than maxNesting: reported once

	reported map[FieldError]bool // errs, for reporting each once
}

// spend counts one unit of work at node n, found at path. It returns false
// once the budget is spent, having reported it once, at the line of the
// alias whose expansion ran over (where the file can be fixed) or of n.
func (w *walker) spend(n *yaml.Node, path string) bool {
	if w.over {
		return false
	}
	w.nodes++
	if w.nodes <= maxNodes {
		return true
	}
	w.over = true
	line := n.Line
	if w.alias > 0 {
		line, path = w.alias, w.aliasAt
	}
	w.fail(line, path, "document too large: more than %d nodes once aliases and << merges are expanded", maxNodes)
	return false
}

// follow returns the node an alias stands for (n itself when n is not an
// alias), noting the alias's line and path while the outermost expansion
// lasts: call the returned function when done with the node.
func (w *walker) follow(n *yaml.Node, path string) (*yaml.Node, func()) {
	if n.Kind != yaml.AliasNode || n.Alias == nil {
		return n, func() {}
	}
	if w.alias != 0 {
		return n.Alias, func() {}
	}
	w.alias, w.aliasAt = n.Line, path
	return n.Alias, func() { w.alias, w.aliasAt = 0, "" }
}

func (w *walker) fail(line int, path, format string, args ...any) {
	file := w.src.file
	if w.file != "" {
		file = w.file
		line = 0
	}
	fe := &FieldError{File: file, Line: line, Field: path, Msg: fmt.Sprintf(format, args...)}
	// A node reached through several aliases has its problems once.
	if w.reported == nil {
		w.reported = map[FieldError]bool{}
	}
	if !w.reported[*fe] {
		w.reported[*fe] = true
		w.errs = append(w.errs, fe)
	}
}

var (
	unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
	durationType    = reflect.TypeFor[Duration]()
	fractionType    = reflect.TypeFor[Fraction]()
)

// walk checks node n (whose key is at keyLine) against type t at path.
func (w *walker) walk(n *yaml.Node, t reflect.Type, path string, keyLine int) {
	if !w.spend(n, path) {
		return
	}
	n, done := w.follow(n, path)
	defer done()
	if path != "" {
		file := w.src.file
		if w.file != "" {
			file, keyLine = w.file, 0
		}
		w.src.pos[path] = position{file: file, line: keyLine, null: isNull(n)}
	}
	if isNull(n) {
		return // unset
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == durationType:
		if _, err := parseDuration(n); err != nil {
			w.fail(n.Line, path, "%v", err)
		}
		return
	case t == fractionType:
		var f Fraction
		if err := f.UnmarshalYAML(n); err != nil {
			_, msg := yamlErrorLine(err.Error())
			w.fail(n.Line, path, "%s", msg)
		}
		return
	case t.Kind() == reflect.Struct && reflect.PointerTo(t).Implements(unmarshalerType) &&
		(n.Kind != yaml.MappingNode || !hasFields(t)):
		w.leaf(n, t, path)
		return
	case t.Kind() == reflect.Map && (t.Key().Kind() != reflect.String || t.Elem().Kind() == reflect.Interface):
		w.leaf(n, t, path) // free-form
		return
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		w.mapping(n, t, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			w.fail(n.Line, path, "want a list, got %s", describe(n))
			return
		}
		for i, e := range n.Content {
			if w.over {
				return
			}
			w.walk(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i), e.Line)
		}
	default:
		w.leaf(n, t, path)
	}
}

// mapping checks a mapping node against struct type t, or against map type
// t whose keys are names and whose values all have t's element type.
func (w *walker) mapping(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.MappingNode {
		w.fail(n.Line, path, "want a mapping, got %s", describe(n))
		return
	}
	w.pairs(n, t, path, map[string]seenKey{}, 0)
}

// seenKey is where a mapping key was first set, and whether by a merge.
type seenKey struct {
	line   int
	merged bool
}

// pairs checks the key-value pairs of mapping n; depth > 0 inside "<<"
// merges, whose keys yield to the mapping's own keys wherever they appear.
// Merges may nest to any depth: the node budget bounds the work.
func (w *walker) pairs(n *yaml.Node, t reflect.Type, path string, seen map[string]seenKey, depth int) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		// Every pair counts, even one a merge brings in only to yield to
		// the mapping's own key: merged lists of merged mappings repeat
		// the same keys exponentially often.
		if !w.spend(k, path) {
			return
		}
		if k.Kind == yaml.ScalarNode && k.Value == "<<" && k.ShortTag() == "!!merge" {
			w.merge(v, t, path, seen, depth+1)
			continue
		}
		if k.Kind != yaml.ScalarNode {
			w.fail(k.Line, path, "keys must be plain names, got %s", describe(k))
			continue
		}
		child := k.Value
		if path != "" {
			child = path + "." + k.Value
		}
		var ft reflect.Type // the value's type
		if t.Kind() == reflect.Struct {
			f, ok := fieldByTag(t, k.Value)
			ft = f.Type
			if inlineFor(t, k.Value) {
				m, _ := inlineMap(t)
				ok, ft = true, m.Type.Elem()
			}
			if !ok {
				w.fail(k.Line, child, "unknown field%s", suggest(t, k.Value))
				continue
			}
		} else {
			ft = t.Elem()
		}
		if first, dup := seen[k.Value]; dup {
			if depth > 0 {
				continue // a merged key yields to the mapping's own
			}
			if !first.merged {
				w.fail(k.Line, child, "set twice (first at line %d)", first.line)
				continue
			}
		}
		seen[k.Value] = seenKey{line: k.Line, merged: depth > 0}
		w.walk(v, ft, child, k.Line)
	}
}

// merge handles a "<<" key: its value is a mapping or a list of mappings
// whose keys apply where the mapping does not set them.
func (w *walker) merge(v *yaml.Node, t reflect.Type, path string, seen map[string]seenKey, depth int) {
	if !w.spend(v, path) {
		return
	}
	v, done := w.follow(v, path)
	defer done()
	switch v.Kind {
	case yaml.MappingNode:
		w.pairs(v, t, path, seen, depth)
	case yaml.SequenceNode:
		for _, e := range v.Content {
			if w.over {
				return
			}
			w.merge(e, t, path, seen, depth)
		}
	default:
		w.fail(v.Line, path, "<< wants a mapping, got %s", describe(v))
	}
}

// leaf checks a scalar (or a free-form mapping) against type t.
func (w *walker) leaf(n *yaml.Node, t reflect.Type, path string) {
	tag := n.ShortTag()
	switch t.Kind() {
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			w.fail(n.Line, path, "want a string, got %s", describe(n))
		}
		return
	case reflect.Bool:
		if tag != "!!bool" {
			w.fail(n.Line, path, "want true or false, got %s", describe(n))
		}
		return
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint64, reflect.Uint, reflect.Uint32:
		if tag != "!!int" {
			w.fail(n.Line, path, "want an integer, got %s", describe(n))
			return
		}
	case reflect.Float64, reflect.Float32:
		if tag != "!!int" && tag != "!!float" {
			w.fail(n.Line, path, "want a number, got %s", describe(n))
			return
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			w.fail(n.Line, path, "want a mapping, got %s", describe(n))
			return
		}
	}
	// The decoder expands what the walk did not visit (a free-form value,
	// a list given to an Unmarshaler): check and count it first.
	errs := len(w.errs)
	switch {
	case t.Kind() == reflect.Map || t.Kind() == reflect.Interface:
		w.freeform(n, path, t.Kind() == reflect.Map && t.Key().Kind() == reflect.String)
	case n.Kind != yaml.ScalarNode:
		w.expand(n, path)
	}
	if w.over || len(w.errs) > errs {
		return
	}
	if err := n.Decode(reflect.New(t).Interface()); err != nil {
		_, msg := yamlErrorLine(err.Error())
		switch t.Kind() {
		case reflect.Uint64, reflect.Uint, reflect.Uint32:
			msg = "want a non-negative integer, got " + describe(n)
		case reflect.Int, reflect.Int64, reflect.Int32:
			msg = "integer out of range, got " + describe(n)
		}
		w.fail(n.Line, path, "%s", msg)
	}
}

// expand counts the nodes of a value the walk does not check itself, as a
// decoder will expand them: aliases followed and merges included. It
// returns false when the budget ran out.
func (w *walker) expand(n *yaml.Node, path string) bool {
	if !w.spend(n, path) {
		return false
	}
	n, done := w.follow(n, path)
	defer done()
	for _, c := range n.Content {
		if !w.expand(c, path) {
			return false
		}
	}
	return true
}

// maxNesting bounds the depth of a free-form value (request.extra,
// request.tools, a sweep's parameters): a tool's JSON schema nests a few
// levels, and 5,000 levels of a 10 KB file took 483 MB to carry through.
const maxNesting = 64

// freeform checks a free-form value (request.extra, a sweep's parameters),
// which is sent as JSON: every mapping key a plain name and, below the top
// level (whose keys the Go type makes strings), a string, since a JSON
// object has no other keys, and no deeper than maxNesting. It counts the
// nodes as expand does.
func (w *walker) freeform(n *yaml.Node, path string, stringKeys bool) {
	if !w.spend(n, path) || w.deep {
		return
	}
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		if w.nest == 0 {
			w.top = path
		}
		w.nest++
		defer func() { w.nest-- }()
		if w.nest > maxNesting {
			w.deep = true
			w.fail(n.Line, w.top, "nests deeper than %d levels: a request body needs a few (a deeper one costs the run memory for nothing)", maxNesting)
			return
		}
	}
	n, done := w.follow(n, path)
	defer done()
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content) && !w.over; i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			switch {
			case k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge":
				w.freeformMerge(v, path, stringKeys)
			case k.Kind != yaml.ScalarNode:
				w.fail(k.Line, path, "keys must be plain names, got %s", describe(k))
			case !stringKeys && k.ShortTag() != "!!str":
				w.fail(k.Line, path+"."+k.Value, "a key sent as JSON must be a string: quote it (%q)", k.Value)
			default:
				w.freeform(v, path+"."+k.Value, false)
			}
		}
	case yaml.SequenceNode:
		for i, e := range n.Content {
			if w.over {
				return
			}
			w.freeform(e, fmt.Sprintf("%s[%d]", path, i), false)
		}
	}
}

// freeformMerge checks the value of a "<<" key in a free-form mapping: a
// mapping, or a list of them, whose keys join the mapping's.
func (w *walker) freeformMerge(v *yaml.Node, path string, stringKeys bool) {
	if !w.spend(v, path) {
		return
	}
	v, done := w.follow(v, path)
	defer done()
	if v.Kind != yaml.SequenceNode {
		w.freeform(v, path, stringKeys)
		return
	}
	for _, e := range v.Content {
		if w.over {
			return
		}
		w.freeform(e, path, stringKeys)
	}
}

// hasFields reports whether struct type t has fields with YAML names.
func hasFields(t reflect.Type) bool {
	for i := range t.NumField() {
		if tagName(t.Field(i)) != "" {
			return true
		}
	}
	return false
}

// isNull reports whether n is YAML's null ("key:", "key: ~"): the key is
// there but its value is unset.
func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

// describe names a node's kind and value for messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	v := n.Value
	if len(v) > 40 {
		v = v[:37] + "..."
	}
	switch n.ShortTag() {
	case "!!str":
		return strconv.Quote(v)
	case "!!null":
		return "nothing"
	}
	return v
}

// fieldByTag finds the struct field whose yaml tag is name.
func fieldByTag(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if tagName(f) == name && name != "" {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// inlineMap returns the field of struct type t whose YAML tag is
// ",inline" and whose type is a map with string keys: the keys of t's
// mapping that name no field are its keys (results.BudgetSet's metrics).
func inlineMap(t reflect.Type) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		_, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if f.IsExported() && opts == "inline" && f.Type.Kind() == reflect.Map && f.Type.Key().Kind() == reflect.String {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// inlineFor reports whether name is a key of struct type t's inline map:
// no field of t is called name, and t's inline map takes it.
func inlineFor(t reflect.Type, name string) bool {
	if _, ok := fieldByTag(t, name); ok {
		return false
	}
	_, ok := inlineMap(t)
	known := inlineKeys(t)
	return ok && (known == nil || slices.Contains(known, name))
}

// inlineKeyer is a struct with an inline map whose keys are names it
// knows (results.BudgetSet: the metrics a budget may limit), so that the
// walk reports another key where it is, as it does an unknown field.
type inlineKeyer interface{ InlineKeys() []string }

// inlineKeys returns the keys struct type t knows for its inline map, or
// nil when any key goes.
func inlineKeys(t reflect.Type) []string {
	if k, ok := reflect.New(t).Interface().(inlineKeyer); ok {
		return k.InlineKeys()
	}
	return nil
}

func tagName(f reflect.StructField) string {
	tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if tag == "-" || !f.IsExported() {
		return ""
	}
	return tag
}

// suggest names the closest known key, or lists them all.
func suggest(t reflect.Type, name string) string {
	var known []string
	for i := range t.NumField() {
		if n := tagName(t.Field(i)); n != "" {
			known = append(known, n)
		} else if m, ok := inlineMap(t); ok && m.Index[0] == i {
			known = append(known, inlineKeys(t)...)
		}
	}
	if best, ok := suggestpkg.Closest(name, known); ok {
		return fmt.Sprintf(" (did you mean %s?)", best)
	}
	return " (known: " + strings.Join(known, ", ") + ")"
}

// joinSorted joins errors ordered by file, line and field, so messages
// read top to bottom like the file.
func joinSorted(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	slices.SortStableFunc(errs, func(a, b error) int {
		var fa, fb *FieldError
		if !errors.As(a, &fa) || !errors.As(b, &fb) {
			return 0
		}
		if c := strings.Compare(fa.File, fb.File); c != 0 {
			return c
		}
		if fa.Line != fb.Line {
			return fa.Line - fb.Line
		}
		return strings.Compare(fa.Field, fb.Field)
	})
	return errors.Join(errs...)
}

// FieldError returns a *FieldError for field of sc, with the position the
// field has in the scenario's file (or --set): what a caller that checks
// a scenario beyond Validate (the load model's stage kinds) reports.
func (sc *Scenario) FieldError(field, format string, args ...any) *FieldError {
	pos := sc.src.at(field)
	return &FieldError{File: pos.file, Line: pos.line, Field: field, Msg: fmt.Sprintf(format, args...)}
}
