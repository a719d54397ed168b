package scenario

import (
	"reflect"
	"slices"
)

// Paths lists the field paths an override takes ("load.stages[0].rate",
// "prompts.input_tokens.value"), for shell completion of --set: every key
// of the format, parents included, a list's elements at index 0, and a
// mapping of free keys (request.extra, budgets.stages) as its own path.
func Paths() []string {
	var out []string
	walkPaths(reflect.TypeFor[Scenario](), "", 0, &out)
	slices.Sort(out)
	return slices.Compact(out)
}

// walkPaths adds the paths under prefix, a value of type t, to out; depth
// bounds recursive types.
func walkPaths(t reflect.Type, prefix string, depth int, out *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if prefix != "" {
		*out = append(*out, prefix)
	}
	if depth > 8 {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		for i := range t.NumField() {
			if name := tagName(t.Field(i)); name != "" {
				walkPaths(t.Field(i).Type, join(prefix, name), depth+1, out)
			}
		}
		if m, ok := inlineMap(t); ok {
			for _, key := range inlineKeys(t) {
				walkPaths(m.Type.Elem(), join(prefix, key), depth+1, out)
			}
		}
	case reflect.Slice:
		if e := t.Elem(); e.Kind() == reflect.Struct || (e.Kind() == reflect.Pointer && e.Elem().Kind() == reflect.Struct) {
			walkPaths(e, prefix+"[0]", depth+1, out)
		}
	}
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}
