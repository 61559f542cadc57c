package toolspec

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/keelrun/keel/internal/contract"
)

// schemaFor generates the JSON Schema of a tool's argument struct. jsonschema.For reads the
// types, the json names, which fields are required (those without omitempty), the order of the
// fields and the descriptions (jsonschema tags); two tags of Keel's own add what it has no tag for:
// min (minLength of a string, minimum of an integer) and example (one example value).
//
// The schema is then written with its keywords in a fixed order (wireSchema), not in the order
// the library's encoder uses, because the bytes are part of the tool set's digest: they must be the
// same in every build, and the same as those the built-in tools were released with.
func schemaFor(args any) contract.Schema {
	t := reflect.TypeOf(args)
	s, err := jsonschema.ForType(t, nil)
	if err != nil {
		panic(fmt.Sprintf("generating the schema of %s: %v", t, err)) // the rows are code: a test catches it
	}
	for _, f := range reflect.VisibleFields(t) {
		if f.Anonymous {
			continue
		}
		if err := addTags(s, f); err != nil {
			panic(fmt.Sprintf("generating the schema of %s: %v", t, err))
		}
	}
	b, err := json.Marshal(wireOf(s))
	if err != nil {
		panic(fmt.Sprintf("encoding the schema of %s: %v", t, err))
	}
	return b
}

// addTags applies a field's min and example tags to its property.
func addTags(s *jsonschema.Schema, f reflect.StructField) error {
	name := jsonName(f)
	p := s.Properties[name]
	if p == nil {
		return nil
	}
	if ex, ok := f.Tag.Lookup("example"); ok {
		p.Examples = append(p.Examples, ex)
	}
	raw, ok := f.Tag.Lookup("min")
	if !ok {
		return nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil {
		return fmt.Errorf("field %s: min tag %q is not a whole number", f.Name, raw)
	}
	switch p.Type {
	case "string":
		p.MinLength = &n
	case "integer", "number":
		v := float64(n)
		p.Minimum = &v
	default:
		return fmt.Errorf("field %s: a min tag needs a string or a number, not %q", f.Name, p.Type)
	}
	return nil
}

// jsonName is the name a field has in JSON.
func jsonName(f reflect.StructField) string {
	if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" {
		return name
	}
	return f.Name
}

// wireSchema is a schema as it is sent to the model, keywords in this order. It carries only the
// keywords tool arguments use; TestSchemaWriterKeepsEveryKeyword fails when a row needs another.
type wireSchema struct {
	Type                 string      `json:"type,omitempty"`
	MinLength            *int        `json:"minLength,omitempty"`
	Minimum              *float64    `json:"minimum,omitempty"`
	Description          string      `json:"description,omitempty"`
	Examples             []any       `json:"examples,omitempty"`
	Properties           wireProps   `json:"properties,omitempty"`
	Required             []string    `json:"required,omitempty"`
	AdditionalProperties *wireSchema `json:"additionalProperties,omitempty"`
	// never is the false schema (the library's {"not":{}}), written as false.
	never bool
}

// wireProps are an object's properties in their struct's field order.
type wireProps []wireProp

type wireProp struct {
	name   string
	schema wireSchema
}

// wireOf converts a generated schema.
func wireOf(s *jsonschema.Schema) wireSchema {
	if s.Not != nil && reflect.ValueOf(*s.Not).IsZero() {
		return wireSchema{never: true}
	}
	w := wireSchema{Type: s.Type, MinLength: s.MinLength, Minimum: s.Minimum, Description: s.Description, Examples: s.Examples, Required: s.Required}
	for _, name := range s.PropertyOrder {
		w.Properties = append(w.Properties, wireProp{name, wireOf(s.Properties[name])})
	}
	if s.AdditionalProperties != nil {
		a := wireOf(s.AdditionalProperties)
		w.AdditionalProperties = &a
	}
	return w
}

// MarshalJSON writes the false schema as false and any other in the field order of wireSchema.
func (w wireSchema) MarshalJSON() ([]byte, error) {
	if w.never {
		return []byte("false"), nil
	}
	type plain wireSchema // without this method
	return json.Marshal(plain(w))
}

// MarshalJSON writes the properties as one object, in order.
func (ps wireProps) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(',')
		}
		name, err := json.Marshal(p.name)
		if err != nil {
			return nil, err
		}
		val, err := json.Marshal(p.schema)
		if err != nil {
			return nil, err
		}
		b.Write(name)
		b.WriteByte(':')
		b.Write(val)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}
