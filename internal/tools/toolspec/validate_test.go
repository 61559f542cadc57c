package toolspec

import (
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/tools/toolspec/feedbacktest"
)

func mustLookup(t *testing.T, name string) contract.ToolSpec {
	t.Helper()
	spec, ok := Lookup(Builtin(), name)
	if !ok {
		t.Fatalf("no built-in tool %q", name)
	}
	return spec
}

func TestValidate(t *testing.T) {
	modeSpec := contract.ToolSpec{Name: "pick", Parameters: []byte(`{"type":"object","properties":{` +
		`"mode":{"type":"string","enum":["a","b"]},"n":{"type":"integer","maximum":5},` +
		`"tags":{"type":"array","items":{"type":"string"}}},"required":["mode"]}`)}
	tests := []struct {
		name string
		spec contract.ToolSpec
		args string
		want string // exact fix; "" means valid
	}{
		{"valid read", mustLookup(t, ReadFile), `{"path":"calc.go"}`, ""},
		{"valid command with timeout", mustLookup(t, RunCommand), `{"command":"go test ./...","timeout_seconds":30}`, ""},
		{"truncated JSON", mustLookup(t, ReadFile), `{"path": "calc.`,
			`the arguments are not valid JSON (unexpected end of input after 15 characters); send a complete JSON object such as {"path":"calc.go"}`},
		{"single quotes", mustLookup(t, ReadFile), `{'path': 'calc.go'}`,
			`the arguments are not valid JSON (unexpected single quote (JSON strings use double quotes) at character 2); send a complete JSON object such as {"path":"calc.go"}`},
		{"raw line break in string", mustLookup(t, WriteFile), "{\"path\":\"a\",\"content\":\"x\ny\"}",
			`the arguments are not valid JSON (a line break or tab inside a string at character 25; write it as \n or \t); send a complete JSON object such as {"path":"calc.go","content":"..."}`},
		{"trailing text", mustLookup(t, ReadFile), `{"path":"a"}  x`,
			`the arguments are not valid JSON (unexpected text after the end of the object, at character 15); send a complete JSON object such as {"path":"calc.go"}`},
		{"empty with required fields", mustLookup(t, ReadFile), "  ",
			`the arguments are empty; send a JSON object such as {"path":"calc.go"}`},
		{"missing field", mustLookup(t, ReadFile), `{}`, `missing required field "path" (string)`},
		{"missing fields", mustLookup(t, EditFile), `{"path":"a"}`, `missing required fields "old" (string), "new" (string)`},
		{"wrong type", mustLookup(t, ReadFile), `{"path":42}`, `field "path" must be a string, not an integer`},
		{"wrong type integer", mustLookup(t, RunCommand), `{"command":"ls","timeout_seconds":1.5}`, `field "timeout_seconds" must be an integer, not a number`},
		{"below minimum", mustLookup(t, RunCommand), `{"command":"ls","timeout_seconds":0}`, `field "timeout_seconds" must be at least 1`},
		{"empty pattern", mustLookup(t, Search), `{"pattern":""}`, `field "pattern" must not be empty`},
		{"unknown field and missing", mustLookup(t, ReadFile), `{"file":"a"}`,
			`missing required field "path" (string); unknown field "file" (the allowed fields are path)`},
		{"not an object", mustLookup(t, ReadFile), `["calc.go"]`, `the arguments must be a JSON object such as {"path":"calc.go"}`},
		{"double encoded", mustLookup(t, ReadFile), `"{\"path\":\"calc.go\"}"`,
			`the arguments are a JSON string that contains an object; send the object itself, such as {"path":"calc.go"}`},
		{"enum", modeSpec, `{"mode":"c"}`, `field "mode" must be one of: a, b`},
		{"enum ok", modeSpec, `{"mode":"b","n":5.0}`, ""},
		{"maximum", modeSpec, `{"mode":"a","n":6}`, `field "n" must be at most 5`},
		{"array item", modeSpec, `{"mode":"a","tags":["x",3]}`, `field "tags[1]" must be a string, not an integer`},
		{"no schema accepts JSON", contract.ToolSpec{Name: "free"}, `{"anything":1}`, ""},
		{"no schema still needs JSON", contract.ToolSpec{Name: "free"}, `{`,
			`the arguments are not valid JSON (unexpected end of input after 1 characters); send a complete JSON object such as {}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Validate(tt.spec, tt.args)
			if tt.want == "" {
				if p != nil {
					t.Fatalf("Validate(%s) = %q, want nil", tt.args, p.Fix)
				}
				return
			}
			if p == nil {
				t.Fatalf("Validate(%s) = nil, want %q", tt.args, tt.want)
			}
			if p.Fix != tt.want {
				t.Fatalf("Validate(%s)\n got %q\nwant %q", tt.args, p.Fix, tt.want)
			}
			for _, left := range []int{-1, 0, 1, 2} {
				feedbacktest.Check(t, p.Feedback(tt.spec.Name, left))
			}
		})
	}
}

// TestValidateLibraryFallback covers keywords only the full validator knows (here anyOf).
func TestValidateLibraryFallback(t *testing.T) {
	spec := contract.ToolSpec{Name: "either", Parameters: []byte(`{"type":"object","anyOf":[{"required":["a"]},{"required":["b"]}]}`)}
	if p := Validate(spec, `{"a":1}`); p != nil {
		t.Fatalf("valid call refused: %q", p.Fix)
	}
	p := Validate(spec, `{"c":1}`)
	if p == nil {
		t.Fatal("call matching neither branch accepted")
	}
	feedbacktest.Check(t, p.Feedback("either", 2))
}

// TestValidateDeterministic guards against map order leaking into the text the workflow records.
func TestValidateDeterministic(t *testing.T) {
	spec := contract.ToolSpec{Name: "many", Parameters: []byte(`{"type":"object","properties":{` +
		`"a":{"type":"string"},"b":{"type":"string"},"c":{"type":"string"},"d":{"type":"string"}},` +
		`"required":["d","c"],"additionalProperties":false}`)}
	args := `{"a":1,"b":2,"x":3,"y":4,"z":5}`
	first := Validate(spec, args).Fix
	for range 50 {
		if got := Validate(spec, args).Fix; got != first {
			t.Fatalf("Validate is not deterministic:\n%q\n%q", first, got)
		}
	}
	if !strings.HasPrefix(first, `missing required fields "d" (string), "c" (string); field "a" must be a string`) {
		t.Fatalf("unexpected order: %q", first)
	}
}

func TestProblemFeedbackCountsRepairs(t *testing.T) {
	p := &Problem{Fix: `missing required field "path" (string)`}
	tests := []struct {
		left int
		want string
	}{
		{2, "(2 more invalid calls are allowed before a person is asked)"},
		{1, "(1 more invalid call is allowed before a person is asked)"},
		{0, "the next invalid call is handed to a person"},
		{-1, "Send the call again with corrected arguments."},
	}
	for _, tt := range tests {
		got := p.Feedback(ReadFile, tt.left)
		if !strings.Contains(got, tt.want) || !strings.Contains(got, p.Fix) {
			t.Errorf("Feedback(%d) = %q, want it to contain %q and the fix", tt.left, got, tt.want)
		}
	}
}
