package toolspec

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// TestSchemaWriterKeepsEveryKeyword: the schema written for each row says exactly what the
// library generated (with the min and example tags applied), so a row that needs a keyword
// wireSchema does not carry fails here instead of losing it silently.
func TestSchemaWriterKeepsEveryKeyword(t *testing.T) {
	for _, tool := range Tools() {
		t.Run(tool.Name, func(t *testing.T) {
			typ := reflect.TypeOf(tool.Args)
			want, err := jsonschema.ForType(typ, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range reflect.VisibleFields(typ) {
				if !f.Anonymous {
					if err := addTags(want, f); err != nil {
						t.Fatal(err)
					}
				}
			}
			var got jsonschema.Schema
			if err := json.Unmarshal(schemaFor(tool.Args), &got); err != nil {
				t.Fatal(err)
			}
			want.PropertyOrder = nil // not a keyword: the written order is checked by the digest
			wantJSON, _ := json.Marshal(want)
			gotJSON, _ := json.Marshal(&got)
			if string(gotJSON) != string(wantJSON) {
				t.Fatalf("written schema says\n%s\nthe generated one\n%s", gotJSON, wantJSON)
			}
		})
	}
}

// TestToolRows: every row is usable: a unique name, an argument struct, summary arguments that the
// schema has, and interrupted-call advice only where a call can have changed something.
func TestToolRows(t *testing.T) {
	seen := map[string]bool{}
	for _, tool := range Tools() {
		if tool.Name == "" || seen[tool.Name] {
			t.Errorf("tool name %q is empty or used twice", tool.Name)
		}
		seen[tool.Name] = true
		if tool.Description == "" {
			t.Errorf("%s: no description", tool.Name)
		}
		if reflect.TypeOf(tool.Args).Kind() != reflect.Struct {
			t.Errorf("%s: Args is a %T, want a struct value", tool.Name, tool.Args)
			continue
		}
		var schema jsonschema.Schema
		if err := json.Unmarshal(schemaFor(tool.Args), &schema); err != nil {
			t.Fatal(err)
		}
		if len(tool.Summary) == 0 {
			t.Errorf("%s: no summary arguments", tool.Name)
		}
		for _, key := range tool.Summary {
			if schema.Properties[key] == nil {
				t.Errorf("%s: summary argument %q is not one of its arguments", tool.Name, key)
			}
		}
		if tool.Interrupted != nil && !tool.Writes {
			t.Errorf("%s: interrupted-call advice on a tool that only reads (it is told to retry as is)", tool.Name)
		}
	}
}

// TestSchemaTagErrors: a min or example tag that cannot apply names the field and what is wrong.
func TestSchemaTagErrors(t *testing.T) {
	cases := []struct {
		name string
		args any
		want string
	}{
		{"min on a bool", struct {
			On bool `json:"on" min:"1"`
		}{}, `field On: a min tag needs a string or a number, not "boolean"`},
		{"min not a number", struct {
			S string `json:"s" min:"one"`
		}{}, `field S: min tag "one" is not a whole number`},
		{"unsupported type", struct {
			F func() `json:"f"`
		}{}, "is unsupported"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msg := panicOf(func() { schemaFor(c.args) })
			if !strings.Contains(msg, c.want) {
				t.Fatalf("panic %q, want it to say %q", msg, c.want)
			}
		})
	}
}

// TestSchemaTagsApply: min and example reach the schema, and omitempty makes an argument optional.
func TestSchemaTagsApply(t *testing.T) {
	got := string(schemaFor(struct {
		Name  string `json:"name" min:"2" jsonschema:"who" example:"ada"`
		Count int    `json:"count,omitempty" min:"1"`
	}{}))
	want := `{"type":"object","properties":{"name":{"type":"string","minLength":2,"description":"who","examples":["ada"]},` +
		`"count":{"type":"integer","minimum":1}},"required":["name"],"additionalProperties":false}`
	if got != want {
		t.Fatalf("schema\n%s\nwant\n%s", got, want)
	}
	if !slices.Equal(SummaryArgs("an_mcp_tool"), otherSummary) || !slices.Equal(SummaryArgs(RunCommand), []string{"command"}) {
		t.Fatalf("summary arguments: %v, %v", SummaryArgs("an_mcp_tool"), SummaryArgs(RunCommand))
	}
}

// panicOf runs f and returns what it panicked with, "" when it did not.
func panicOf(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	f()
	return ""
}
