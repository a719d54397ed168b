package scenario

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// SetFile is the File of a FieldError about a command-line override.
const SetFile = "--set"

// Set overrides one field, as the CLI's --set path=value does, then applies
// Defaults and validates. path is a dot path of YAML keys with [i] list
// indexes ("load.stages[0].concurrency", "request.extra.top_k"); an index
// equal to the list's length appends an element. value is YAML ("16",
// "30s", "{dist: uniform, min: 1, max: 9}"); for a string field it is taken
// literally unless quoted; an empty value resets the field to its default.
//
// The override applies to the scenario as written (before defaults), so
// switching a stage from closed to open loop gets the open-loop defaults.
// On error the scenario is unchanged.
func (sc *Scenario) Set(path, value string) error {
	return sc.Override(path + "=" + value)
}

// Override applies several "path=value" overrides (see Set) at once and
// validates only the result, so overrides that are valid only together
// (clearing concurrency and setting rate) work. On error the scenario is
// unchanged.
//
// Overrides apply to the scenario as written and defaults are applied
// again, so a field assigned directly in Go after Load is lost by a later
// Set; use Set for it too (for example target.model after auto-detection),
// which also keeps it in the resolved scenario.
func (sc *Scenario) Override(assignments ...string) error {
	items := make([]assignment, 0, len(assignments))
	var errs []error
	for _, a := range assignments {
		path, value, ok := strings.Cut(a, "=")
		if !ok {
			errs = append(errs, &FieldError{File: SetFile, Msg: fmt.Sprintf("want path=value, got %q", a)})
			continue
		}
		items = append(items, assignment{from: SetFile, path: strings.TrimSpace(path), value: value})
	}
	return sc.override(items, errs...)
}

// assignment is one override: the field path, its value (as Set takes
// it), and where it came from ("--set", or the flag that made it), which
// the errors about it name. A header (--header) names target.headers' key
// itself and its value is taken literally: a header's name may hold "."
// and its value "#" or "!", which a path or YAML would read otherwise.
type assignment struct{ from, path, value, header string }

// override applies assignments in order (a later one wins), then
// Defaults, and validates the result; on error (or with errs, problems
// found before) sc is unchanged.
func (sc *Scenario) override(items []assignment, errs ...error) error {
	base := sc.raw
	if base == nil {
		base = sc
	}
	next := clone(base)
	for _, a := range items {
		if a.header != "" {
			if next.Target.Headers == nil {
				next.Target.Headers = map[string]string{}
			}
			next.Target.Headers[a.header] = a.value
			if next.src.pos == nil {
				next.src.pos = map[string]position{}
			}
			next.src.pos["target.headers."+a.header] = position{file: a.from}
			continue
		}
		errs = append(errs, next.set(a.from, a.path, a.value)...)
	}
	if len(errs) > 0 {
		return joinSorted(errs)
	}
	resolved := clone(next)
	resolved.raw = next
	resolved.Defaults()
	if err := resolved.Validate(); err != nil {
		return err
	}
	*sc = *resolved
	return nil
}

// set applies one override to sc (the scenario as written); from names
// its origin in errors and positions.
func (sc *Scenario) set(from, path, value string) []error {
	fail := func(format string, args ...any) []error {
		return []error{&FieldError{File: from, Field: path, Msg: fmt.Sprintf(format, args...)}}
	}
	segs, err := splitPath(path)
	if err != nil {
		return fail("%v", err)
	}
	v := reflect.ValueOf(sc).Elem()
	for i, seg := range segs {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		switch {
		case seg.index >= 0:
			if v.Kind() != reflect.Slice {
				return fail("%s is not a list", joinPath(segs[:i]))
			}
			switch {
			case seg.index < v.Len():
			case seg.index == v.Len():
				v.Set(reflect.Append(v, reflect.Zero(v.Type().Elem())))
			default:
				return fail("index %d out of range: %s has %d elements (an index equal to the length appends)", seg.index, joinPath(segs[:i]), v.Len())
			}
			v = v.Index(seg.index)
		case v.Kind() == reflect.Map || v.Kind() == reflect.Struct && inlineFor(v.Type(), seg.name):
			if v.Kind() == reflect.Struct {
				m, _ := inlineMap(v.Type())
				v = v.FieldByIndex(m.Index) // a key of the struct's inline map
			}
			switch {
			case i == len(segs)-1:
				return sc.setMapKey(from, v, seg.name, path, value)
			case v.Type().Elem().Kind() != reflect.Pointer:
				return fail("only one key below %s can be set", joinPath(segs[:i]))
			}
			v = mapEntry(v, seg.name) // a budget set's metric: its limits are set one by one
		case v.Kind() == reflect.Struct:
			f, ok := fieldByTag(v.Type(), seg.name)
			if !ok {
				where := joinPath(segs[:i])
				if where == "" {
					where = "the scenario"
				}
				return fail("unknown field %q in %s%s", seg.name, where, suggest(v.Type(), seg.name))
			}
			v = v.FieldByIndex(f.Index)
		default:
			return fail("%s is not a mapping", joinPath(segs[:i]))
		}
	}
	return sc.assign(from, path, value, v)
}

// assign sets v, the field at path, to value (YAML; "" unsets it) and
// records its position.
func (sc *Scenario) assign(from, path, value string, v reflect.Value) []error {
	fail := func(format string, args ...any) []error {
		return []error{&FieldError{File: from, Field: path, Msg: fmt.Sprintf(format, args...)}}
	}
	// Forget the positions of what is replaced.
	for p := range sc.src.pos {
		if p == path || strings.HasPrefix(p, path+".") || strings.HasPrefix(p, path+"[") {
			delete(sc.src.pos, p)
		}
	}
	if sc.src.pos == nil {
		sc.src.pos = map[string]position{}
	}
	sc.src.pos[path] = position{file: from, null: value == ""}

	if value == "" {
		v.Set(reflect.Zero(v.Type()))
		return nil
	}
	if v.Kind() == reflect.String && !strings.HasPrefix(value, `"`) && !strings.HasPrefix(value, `'`) {
		v.SetString(value)
		return nil
	}
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(value), &n); err != nil || len(n.Content) != 1 {
		_, msg := yamlErrorLine(fmt.Sprint(err))
		return fail("value %q is not YAML: %s", value, msg)
	}
	w := walker{src: &sc.src, file: from}
	w.walk(n.Content[0], v.Type(), path, 0)
	if len(w.errs) > 0 {
		return w.errs
	}
	nv := reflect.New(v.Type())
	if err := n.Content[0].Decode(nv.Interface()); err != nil {
		_, msg := yamlErrorLine(err.Error())
		return fail("%s", msg)
	}
	v.Set(nv.Elem())
	return nil
}

// mapEntry returns the pointer held at key of map m (whose values are
// pointers), storing a new one first when m has none, so that a path can
// go on below it (budgets.overall.ttft_ms.p99).
func mapEntry(m reflect.Value, key string) reflect.Value {
	if m.IsNil() {
		m.Set(reflect.MakeMap(m.Type()))
	}
	k := reflect.ValueOf(key)
	e := m.MapIndex(k)
	if !e.IsValid() || e.IsNil() {
		e = reflect.New(m.Type().Elem().Elem())
		m.SetMapIndex(k, e)
	}
	return e
}

// setMapKey sets one key of a free-form map (request.extra).
func (sc *Scenario) setMapKey(from string, m reflect.Value, key, path, value string) []error {
	if m.IsNil() {
		m.Set(reflect.MakeMap(m.Type()))
	}
	if value == "" {
		m.SetMapIndex(reflect.ValueOf(key), reflect.Value{})
		return nil
	}
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(value), &n); err != nil || len(n.Content) != 1 {
		_, msg := yamlErrorLine(fmt.Sprint(err))
		return []error{&FieldError{File: from, Field: path, Msg: fmt.Sprintf("value %q is not YAML: %s", value, msg)}}
	}
	// The value is checked (and its expansion bounded) as in a file.
	w := walker{src: &sc.src, file: from}
	w.walk(n.Content[0], m.Type().Elem(), path, 0)
	if len(w.errs) > 0 {
		return w.errs
	}
	x := reflect.New(m.Type().Elem()) // any for request.extra, string for sweep.server.env
	if err := n.Content[0].Decode(x.Interface()); err != nil {
		_, msg := yamlErrorLine(err.Error())
		return []error{&FieldError{File: from, Field: path, Msg: msg}}
	}
	m.SetMapIndex(reflect.ValueOf(key), x.Elem())
	if sc.src.pos == nil {
		sc.src.pos = map[string]position{}
	}
	sc.src.pos[path] = position{file: from}
	return nil
}

type segment struct {
	name  string
	index int // -1 for a name
}

// splitPath parses "a.b[2].c" into segments.
func splitPath(path string) ([]segment, error) {
	if path == "" {
		return nil, fmt.Errorf("empty path")
	}
	var segs []segment
	for part := range strings.SplitSeq(path, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if name == "" {
			return nil, fmt.Errorf("empty name in path %q", path)
		}
		segs = append(segs, segment{name: name, index: -1})
		for rest != "" {
			idx, after, ok := strings.Cut(rest, "]")
			i, err := strconv.Atoi(idx)
			if !ok || err != nil || i < 0 || (after != "" && after[0] != '[') {
				return nil, fmt.Errorf("bad index in path %q (want name[0])", path)
			}
			segs = append(segs, segment{index: i})
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return segs, nil
}

func joinPath(segs []segment) string {
	var b strings.Builder
	for _, s := range segs {
		if s.index >= 0 {
			fmt.Fprintf(&b, "[%d]", s.index)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.name)
	}
	return b.String()
}

// Resolved returns the scenario as JSON, defaults applied, for the results
// header. It holds no secret: only the name of the API key's environment
// variable.
func (sc *Scenario) Resolved() ([]byte, error) {
	b, err := json.Marshal(sc)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: resolve: %w", sc.Name, err)
	}
	return b, nil
}

// Clone returns a deep copy of sc: later changes to either do not affect
// the other.
func (sc *Scenario) Clone() *Scenario { return clone(sc) }

// clone deep-copies a scenario: its exported fields, its positions, and
// the (immutable) reference to the scenario as written.
func clone(sc *Scenario) *Scenario {
	c := &Scenario{}
	deepCopy(reflect.ValueOf(c).Elem(), reflect.ValueOf(sc).Elem())
	c.src = source{file: sc.src.file, dir: sc.src.dir, pos: maps.Clone(sc.src.pos)}
	c.raw = sc.raw
	return c
}

// deepCopy copies src into dst (settable), following pointers, slices,
// maps and interfaces. Unexported struct fields are skipped.
func deepCopy(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		n := reflect.New(src.Type().Elem())
		deepCopy(n.Elem(), src.Elem())
		dst.Set(n)
	case reflect.Struct:
		t := src.Type()
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				deepCopy(dst.Field(i), src.Field(i))
			}
		}
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		n := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		for i := range src.Len() {
			deepCopy(n.Index(i), src.Index(i))
		}
		dst.Set(n)
	case reflect.Map:
		if src.IsNil() {
			return
		}
		n := reflect.MakeMapWithSize(src.Type(), src.Len())
		for it := src.MapRange(); it.Next(); {
			e := reflect.New(src.Type().Elem()).Elem()
			deepCopy(e, it.Value())
			n.SetMapIndex(it.Key(), e)
		}
		dst.Set(n)
	case reflect.Interface:
		if src.IsNil() {
			return
		}
		e := reflect.New(src.Elem().Type()).Elem()
		deepCopy(e, src.Elem())
		dst.Set(e)
	default:
		dst.Set(src)
	}
}
