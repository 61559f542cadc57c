package toolspec

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// check walks a decoded value against the common JSON Schema keywords and returns every fix, in a
// fixed order (required fields in schema order, then other fields by name), joined by "; ".
// It returns "" when nothing it knows about is wrong.
func check(at string, v any, s *jsonschema.Schema) string {
	if s == nil {
		return ""
	}
	if fix := checkType(at, v, s); fix != "" {
		return fix
	}
	if fix := checkEnum(at, v, s); fix != "" {
		return fix
	}
	switch x := v.(type) {
	case map[string]any:
		return checkObject(at, x, s)
	case []any:
		return checkArray(at, x, s)
	case string:
		return checkString(at, x, s)
	case json.Number:
		return checkNumber(at, x, s)
	}
	return ""
}

// field names a location for the model: `field "path"` or `field "a.b"`.
func field(at string) string {
	if at == "" {
		return "the arguments"
	}
	return fmt.Sprintf("field %q", at)
}

func join(at, name string) string {
	if at == "" {
		return name
	}
	return at + "." + name
}

func checkType(at string, v any, s *jsonschema.Schema) string {
	want := schemaTypes(s)
	if len(want) == 0 {
		return ""
	}
	got := kindOf(v)
	for _, w := range want {
		if w == got || (w == "number" && got == "integer") {
			return ""
		}
	}
	return fmt.Sprintf("%s must be %s, not %s", field(at), article(strings.Join(want, " or ")), article(got))
}

func schemaTypes(s *jsonschema.Schema) []string {
	if s.Type != "" {
		return []string{s.Type}
	}
	return s.Types
}

// kindOf names the JSON type of a decoded value; a number with no fraction is an integer.
func kindOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case json.Number:
		if f, err := x.Float64(); err == nil && f == math.Trunc(f) {
			return "integer"
		}
		return "number"
	}
	return "value"
}

func article(kind string) string {
	switch {
	case kind == "null":
		return "null"
	case strings.HasPrefix(kind, "a"), strings.HasPrefix(kind, "i"), strings.HasPrefix(kind, "o"):
		return "an " + kind
	}
	return "a " + kind
}

func checkEnum(at string, v any, s *jsonschema.Schema) string {
	if len(s.Enum) == 0 {
		return ""
	}
	got := render(v)
	for _, e := range s.Enum {
		if render(e) == got {
			return ""
		}
	}
	return fmt.Sprintf("%s must be one of: %s", field(at), enumList(s.Enum))
}

// enumList renders allowed values plainly: strings without quotes, other values as JSON.
func enumList(values []any) string {
	parts := make([]string, 0, len(values))
	for _, e := range values {
		if str, ok := e.(string); ok {
			parts = append(parts, str)
		} else {
			parts = append(parts, render(e))
		}
	}
	return strings.Join(parts, ", ")
}

// render writes a value as compact JSON, with numbers normalised so 1 and 1.0 compare equal.
func render(v any) string {
	if n, ok := v.(json.Number); ok {
		if f, err := n.Float64(); err == nil {
			return strconv.FormatFloat(f, 'g', -1, 64)
		}
	}
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func checkObject(at string, m map[string]any, s *jsonschema.Schema) string {
	var fixes []string
	var missing []string
	for _, name := range s.Required {
		if _, ok := m[name]; !ok {
			missing = append(missing, fmt.Sprintf("%q (%s)", join(at, name), describe(s.Properties[name])))
		}
	}
	switch len(missing) {
	case 0:
	case 1:
		fixes = append(fixes, "missing required field "+missing[0])
	default:
		fixes = append(fixes, "missing required fields "+strings.Join(missing, ", "))
	}
	for _, name := range sortedKeys(m) {
		sub, known := s.Properties[name]
		if !known {
			if closed(s) {
				fixes = append(fixes, fmt.Sprintf("unknown field %q (the allowed fields are %s)", join(at, name), strings.Join(propertyNames(s), ", ")))
			}
			continue
		}
		if fix := check(join(at, name), m[name], sub); fix != "" {
			fixes = append(fixes, fix)
		}
	}
	return strings.Join(fixes, "; ")
}

// closed reports whether the schema forbids fields it does not name (additionalProperties false).
func closed(s *jsonschema.Schema) bool {
	if s.AdditionalProperties == nil || s.AdditionalProperties.Not == nil {
		return false
	}
	b, err := json.Marshal(s.AdditionalProperties.Not)
	return err == nil && (string(b) == "true" || string(b) == "{}")
}

// propertyNames lists a schema's fields: required ones in schema order, then the rest by name.
func propertyNames(s *jsonschema.Schema) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range s.Required {
		if _, ok := s.Properties[r]; ok && !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	for _, name := range sortedKeys(s.Properties) {
		if !seen[name] {
			out = append(out, name)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// describe names what a field holds, for "missing required field" fixes.
func describe(s *jsonschema.Schema) string {
	if s == nil {
		return "any value"
	}
	if len(s.Enum) > 0 {
		return "one of " + enumList(s.Enum)
	}
	if t := schemaTypes(s); len(t) > 0 {
		return strings.Join(t, " or ")
	}
	return "any value"
}

func checkArray(at string, a []any, s *jsonschema.Schema) string {
	if s.MinItems != nil && len(a) < *s.MinItems {
		return fmt.Sprintf("%s must have at least %d items", field(at), *s.MinItems)
	}
	if s.MaxItems != nil && len(a) > *s.MaxItems {
		return fmt.Sprintf("%s must have at most %d items", field(at), *s.MaxItems)
	}
	if s.Items == nil {
		return ""
	}
	for i, item := range a {
		if fix := check(fmt.Sprintf("%s[%d]", at, i), item, s.Items); fix != "" {
			return fix
		}
	}
	return ""
}

func checkString(at string, str string, s *jsonschema.Schema) string {
	n := utf8.RuneCountInString(str)
	if s.MinLength != nil && n < *s.MinLength {
		if *s.MinLength == 1 {
			return fmt.Sprintf("%s must not be empty", field(at))
		}
		return fmt.Sprintf("%s must be at least %d characters long", field(at), *s.MinLength)
	}
	if s.MaxLength != nil && n > *s.MaxLength {
		return fmt.Sprintf("%s must be at most %d characters long", field(at), *s.MaxLength)
	}
	return ""
}

func checkNumber(at string, num json.Number, s *jsonschema.Schema) string {
	f, err := num.Float64()
	if err != nil {
		return fmt.Sprintf("%s must be a number", field(at))
	}
	if s.Minimum != nil && f < *s.Minimum {
		return fmt.Sprintf("%s must be at least %s", field(at), render(*s.Minimum))
	}
	if s.Maximum != nil && f > *s.Maximum {
		return fmt.Sprintf("%s must be at most %s", field(at), render(*s.Maximum))
	}
	return ""
}

// example builds a small valid-looking call from the schema's required fields, in schema order,
// using each field's first example when it has one.
func example(s *jsonschema.Schema) string {
	if s == nil {
		return "{}"
	}
	parts := make([]string, 0, len(s.Required))
	for _, name := range s.Required {
		key, _ := json.Marshal(name)
		parts = append(parts, string(key)+":"+exampleValue(s.Properties[name]))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func exampleValue(s *jsonschema.Schema) string {
	if s == nil {
		return `"..."`
	}
	if len(s.Examples) > 0 {
		return render(s.Examples[0])
	}
	if len(s.Enum) > 0 {
		return render(s.Enum[0])
	}
	switch t := schemaTypes(s); {
	case len(t) == 0:
		return `"..."`
	case t[0] == "integer", t[0] == "number":
		return "1"
	case t[0] == "boolean":
		return "true"
	case t[0] == "array":
		return "[]"
	case t[0] == "object":
		return "{}"
	}
	return `"..."`
}
