package toolspec

import (
	"encoding/json"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/tools/toolspec/feedbacktest"
)

func TestFeedbackWording(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"repeat", RepeatFeedback(ReadFile, 3), []string{"3 times in a row", "results are above", "Nothing was run", "Change approach or conclude"}},
		{"breaker with fallback", BreakerOpenFeedback("web_search", "search"), []string{"unavailable right now", "nothing was run", "Use search instead"}},
		{"breaker without fallback", BreakerOpenFeedback("web_search", ""), []string{"unavailable right now", "Continue without it"}},
		{"approval denied", ApprovalDeniedFeedback(WriteFile, "the approval timed out."), []string{"did not approve", "(the approval timed out)", "nothing changed"}},
		{"approval denied, no reason", ApprovalDeniedFeedback(WriteFile, ""), []string{"call to write_file; nothing was run"}},
		{"policy denied", PolicyDeniedFeedback(RunCommand, `the program "curl" is not on the allowed list`), []string{"does not allow", `"curl"`, "nothing changed"}},
		{"outcome unknown write", OutcomeUnknownFeedback(WriteFile, `{"path":"pkg/calc.go","content":"x"}`), []string{"outcome is unknown", `"pkg/calc.go"`, "read it with read_file"}},
		{"outcome unknown write, absolute path", OutcomeUnknownFeedback(EditFile, `{"path":"/etc/hosts"}`), []string{"outcome is unknown", "read it with read_file"}},
		{"outcome unknown write, bad args", OutcomeUnknownFeedback(WriteFile, `{`), []string{"may or may not have changed"}},
		{"outcome unknown read", OutcomeUnknownFeedback(ReadFile, `{"path":"a"}`), []string{"nothing changed", "retry as is"}},
		{"outcome unknown command", OutcomeUnknownFeedback(RunCommand, `{"command":"make"}`), []string{"may have run in part", "list the directory"}},
		{"outcome unknown other tool", OutcomeUnknownFeedback("deploy", `{}`), []string{"check the state"}},
		{"unknown tool", UnknownToolFeedback("read_fil", []string{WriteFile, ReadFile}), []string{`no tool named "read_fil"`, "Did you mean read_file?", "read_file, write_file"}},
		{"unknown tool, far off", UnknownToolFeedback("deploy", []string{ReadFile}), []string{"Call one of these instead — read_file."}},
		{"unknown tool, no tools", UnknownToolFeedback("x", nil), []string{"continue without tools"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			feedbacktest.Check(t, tt.text)
			for _, w := range tt.want {
				if !strings.Contains(tt.text, w) {
					t.Errorf("%q does not contain %q", tt.text, w)
				}
			}
			if strings.Contains(tt.text, "/etc") {
				t.Errorf("%q repeats an absolute path", tt.text)
			}
		})
	}
}

func TestIsPolicyViolation(t *testing.T) {
	tests := []struct {
		res  contract.ToolResult
		want bool
	}{
		{contract.ToolResult{IsError: true, Content: PolicyDeniedFeedback(RunCommand, "no")}, true},
		{contract.ToolResult{IsError: false, Content: PolicyDeniedFeedback(RunCommand, "no")}, false},
		{contract.ToolResult{IsError: true, Content: ApprovalDeniedFeedback(RunCommand, "no")}, false},
	}
	for i, tt := range tests {
		if got := IsPolicyViolation(tt.res); got != tt.want {
			t.Errorf("case %d: IsPolicyViolation = %v, want %v", i, got, tt.want)
		}
	}
}

func TestRepeatKey(t *testing.T) {
	a := contract.ToolCall{ID: "1", Name: ReadFile, Arguments: `{"path":"a"}`}
	tests := []struct {
		b    contract.ToolCall
		same bool
	}{
		{contract.ToolCall{ID: "2", Name: ReadFile, Arguments: `{"path":"a"}`}, true},
		{contract.ToolCall{ID: "1", Name: ReadFile, Arguments: `{"path": "a"}`}, false},
		{contract.ToolCall{ID: "1", Name: ListDir, Arguments: `{"path":"a"}`}, false},
		{contract.ToolCall{Name: "read_file{", Arguments: `"path":"a"}`}, false},
	}
	for i, tt := range tests {
		if got := RepeatKey(a) == RepeatKey(tt.b); got != tt.same {
			t.Errorf("case %d: same key = %v, want %v", i, got, tt.same)
		}
	}
}

// TestBuiltin: the tools offered are the rows, in their order, each with its Writes. (The text
// itself is pinned by the released sets: TestReleasedSets.)
func TestBuiltin(t *testing.T) {
	specs := Builtin()
	writes := map[string]bool{}
	var wantNames []string
	for _, row := range Tools() {
		wantNames = append(wantNames, row.Name)
		writes[row.Name] = row.Writes
	}
	if got := Names(specs); strings.Join(got, ",") != strings.Join(wantNames, ",") {
		t.Fatalf("Names = %v, want %v", got, wantNames)
	}
	for _, s := range specs {
		if s.Writes != writes[s.Name] {
			t.Errorf("%s: Writes = %v", s.Name, s.Writes)
		}
		if s.Description == "" || s.Server != "" {
			t.Errorf("%s: description %q, server %q", s.Name, s.Description, s.Server)
		}
		var schema jsonschema.Schema
		if err := json.Unmarshal(s.Parameters, &schema); err != nil {
			t.Fatalf("%s: schema does not parse: %v", s.Name, err)
		}
		if _, err := schema.Resolve(nil); err != nil {
			t.Fatalf("%s: schema does not resolve: %v", s.Name, err)
		}
		// The example offered in feedback must itself be a valid call.
		if ex := example(&schema); Validate(s, ex) != nil {
			t.Errorf("%s: example %s is not valid: %q", s.Name, ex, Validate(s, ex).Fix)
		}
	}
	if _, ok := Lookup(specs, "nope"); ok {
		t.Error("Lookup found a tool that does not exist")
	}
}

// TestPure keeps the package free of I/O: workflow code imports it.
func TestPure(t *testing.T) {
	allowed := map[string]bool{
		"encoding/json": true, "strings": true, "sort": true, "fmt": true, "errors": true, "io": true,
		"math": true, "strconv": true, "unicode/utf8": true, "path": true,
		"crypto/sha256": true, "encoding/hex": true, "slices": true,
		// embed holds the released tool sets: data compiled into the binary, read once at init.
		"embed": true,
		// reflect reads the tool rows' argument structs, once at init, to generate their schemas.
		"reflect": true,
		// textfmt formats text and numbers; it does no I/O (workflows import it too).
		"github.com/keelrun/keel/internal/textfmt":   true,
		"github.com/google/jsonschema-go/jsonschema": true, "github.com/keelrun/keel/internal/contract": true,
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !allowed[p] {
				t.Errorf("%s imports %s, which a workflow package may not use", f, p)
			}
		}
	}
}
