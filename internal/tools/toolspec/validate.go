package toolspec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/keelrun/keel/internal/contract"
)

// Problem is what is wrong with a tool call's arguments, as the exact fix the model should make.
// It is a value the workflow can count (three repairs per tool) and turn into feedback.
type Problem struct {
	// Fix names the fix, written for the model, such as `missing required field "path" (string)`.
	Fix string
}

// Validate checks the argument text of a call against the tool's schema. It returns nil when the
// text parses as JSON and fits the schema, and otherwise the one message that lets the model
// repair the call. Empty argument text counts as {} so that tools without required fields can be
// called with nothing.
func Validate(spec contract.ToolSpec, args string) *Problem {
	schema := parseSchema(spec.Parameters)
	if strings.TrimSpace(args) == "" {
		args = "{}"
		if schema != nil && len(schema.Required) > 0 {
			return &Problem{Fix: "the arguments are empty; send a JSON object such as " + example(schema)}
		}
	}
	value, fix := decode(args)
	if fix != "" {
		return &Problem{Fix: fix + "; send a complete JSON object such as " + example(schema)}
	}
	if schema == nil {
		return nil
	}
	if s, ok := value.(string); ok && looksLikeObject(s) {
		return &Problem{Fix: "the arguments are a JSON string that contains an object; send the object itself, such as " + example(schema)}
	}
	if fix := check("", value, schema); fix != "" {
		if _, isObject := value.(map[string]any); !isObject {
			return &Problem{Fix: "the arguments must be a JSON object such as " + example(schema)}
		}
		return &Problem{Fix: fix}
	}
	return librarySchemaCheck(spec.Parameters, args)
}

// parseSchema reads a tool's schema; a tool without a usable schema accepts any JSON.
func parseSchema(raw []byte) *jsonschema.Schema {
	if len(raw) == 0 {
		return nil
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil
	}
	return &s
}

// decode parses exactly one JSON value, keeping numbers as text so integers stay integers.
func decode(args string) (any, string) {
	dec := json.NewDecoder(strings.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, syntaxFix(args, err)
	}
	end := int(dec.InputOffset())
	if rest := strings.TrimLeft(args[end:], " \t\r\n"); rest != "" {
		at := utf8.RuneCountInString(args[:len(args)-len(rest)])
		return nil, fmt.Sprintf("the arguments are not valid JSON (unexpected text after the end of the object, at character %d)", at+1)
	}
	return v, ""
}

// syntaxFix describes a JSON syntax error by position, in characters, without the parser's words.
func syntaxFix(args string, err error) string {
	var se *json.SyntaxError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return fmt.Sprintf("the arguments are not valid JSON (unexpected end of input after %d characters)", utf8.RuneCountInString(args))
	case errors.As(err, &se):
		off := int(se.Offset)
		if off > len(args) {
			off = len(args)
		}
		at := utf8.RuneCountInString(args[:off])
		if strings.Contains(se.Error(), "in string literal") {
			return fmt.Sprintf("the arguments are not valid JSON (a line break or tab inside a string at character %d; write it as \\n or \\t)", at)
		}
		r, _ := utf8.DecodeLastRuneInString(args[:off])
		return fmt.Sprintf("the arguments are not valid JSON (unexpected %s at character %d)", describeRune(r), at)
	default:
		return "the arguments are not valid JSON"
	}
}

// describeRune names a character so the model can find it.
func describeRune(r rune) string {
	switch r {
	case '\'':
		return "single quote (JSON strings use double quotes)"
	case '\n':
		return "line break"
	case utf8.RuneError:
		return "character"
	}
	return fmt.Sprintf("character %q", string(r))
}

// looksLikeObject reports whether a JSON string value holds an encoded object, a common mistake.
func looksLikeObject(s string) bool {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "{") {
		return false
	}
	var m map[string]any
	return json.Unmarshal([]byte(s), &m) == nil
}

// librarySchemaCheck runs the full JSON Schema validator for the keywords check does not cover.
// Only whether it passes is used: its messages are technical, and which one it reports first
// depends on map iteration, which workflow code must never let show.
func librarySchemaCheck(raw []byte, args string) *Problem {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		return nil // a broken schema is not something the model can fix
	}
	var v any
	if err := json.Unmarshal([]byte(args), &v); err != nil {
		return nil
	}
	if resolved.Validate(v) != nil { //workflowcheck:ignore only pass or fail is used
		return &Problem{Fix: "the arguments do not fit the tool's parameter schema; compare each field with the tool's description"}
	}
	return nil
}
