package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/contract"
)

// TestCallDiff: a write shows the lines it changes in the file as it is now, an edit its old text
// against its new, with a little context; a path outside the work directory is never read (the
// write shows as all new lines); other calls show nothing.
func TestCallDiff(t *testing.T) {
	dir := t.TempDir()
	old := "package calc\n\nfunc Add(a, b int) int {\n\treturn a - b\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "calc.go"), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(filepath.Dir(dir), "secret-"+filepath.Base(dir))
	if err := os.WriteFile(secret, []byte("top secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(secret) })
	args := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	cases := []struct {
		name, tool, args string
		want, notWanted  []string
	}{
		{"write", "write_file", args(map[string]string{"path": "calc.go", "content": strings.Replace(old, "a - b", "a + b", 1)}),
			[]string{"-:return a - b", "+:return a + b", " :func Add(a, b int) int {"}, []string{"package calc"}},
		{"edit", "edit_file", args(map[string]string{"path": "calc.go", "old": "a - b", "new": "a + b"}),
			[]string{"-:a - b", "+:a + b"}, nil},
		{"a new file", "write_file", args(map[string]string{"path": "new.go", "content": "x\ny\n"}),
			[]string{"+:x", "+:y"}, []string{"    - "}},
		{"outside the work directory", "write_file", args(map[string]string{"path": "../" + filepath.Base(secret), "content": "overwritten\n"}),
			[]string{"+:overwritten"}, []string{"top secret"}},
		{"another tool", "read_file", args(map[string]string{"path": "calc.go"}), nil, []string{"    + ", "    - "}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			p := &textPrinter{w: &b}
			showWorkdir(p, dir)
			p.event(contract.Event{Event: contract.EventToolCall, Tool: c.tool, Arguments: c.args})
			out := strings.SplitN(b.String(), "\n", 2)[1]
			// Each wanted line is MARK:TEXT: a diff line with that mark holding that text.
			for _, w := range c.want {
				mark, text, _ := strings.Cut(w, ":")
				found := false
				for _, l := range strings.Split(out, "\n") {
					found = found || (strings.HasPrefix(l, "    "+mark+" ") && strings.Contains(l, text))
				}
				if !found {
					t.Errorf("no %q line holding %q in:\n%s", mark, text, out)
				}
			}
			for _, w := range c.notWanted {
				if strings.Contains(out, w) {
					t.Errorf("unwanted %q in:\n%s", w, out)
				}
			}
		})
	}
}

// TestDiffLinesBounded: a long change shows diffShown lines and says how many more changed.
func TestDiffLinesBounded(t *testing.T) {
	var a, b []string
	for i := range 40 {
		a = append(a, "old"+string(rune('a'+i%26)))
		b = append(b, "new"+string(rune('a'+i%26)))
	}
	out := diffLines(a, b)
	if n := strings.Count(out, "\n"); n != diffShown || !strings.Contains(out, "more changed lines") {
		t.Fatalf("%d lines:\n%s", n+1, out)
	}
}

// TestReplayDiffs: a replayed write is compared with the file as it was before its turn (or as an
// earlier write of the same turn left it), not as it is now; a write whose earlier content is not
// known shows no diff; an edit shows its old text against its new; a call with no result yet (it
// waits for approval) has none here, its prompt shows it.
func TestReplayDiffs(t *testing.T) {
	args := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	reply := func(calls ...contract.ToolCall) contract.Message {
		return contract.Message{Role: contract.RoleAssistant, ToolCalls: calls}
	}
	msgs := []contract.Message{
		{Role: contract.RoleUser, Content: "fix it"},
		reply(contract.ToolCall{ID: "c1", Name: "write_file", Arguments: args(map[string]string{"path": "calc.go", "content": "one\ntwo\n"})},
			contract.ToolCall{ID: "c2", Name: "write_file", Arguments: args(map[string]string{"path": "calc.go", "content": "one\nthree\n"})}),
		{Role: contract.RoleTool, ToolCallID: "c1"}, {Role: contract.RoleTool, ToolCallID: "c2"},
		reply(contract.ToolCall{ID: "c3", Name: "write_file", Arguments: args(map[string]string{"path": "unknown.go", "content": "x\n"})},
			contract.ToolCall{ID: "c4", Name: "edit_file", Arguments: args(map[string]string{"path": "calc.go", "old": "three", "new": "four"})},
			contract.ToolCall{ID: "c5", Name: "edit_file", Arguments: args(map[string]string{"path": "calc.go", "old": "four", "new": "five"})}),
		{Role: contract.RoleTool, ToolCallID: "c3"}, {Role: contract.RoleTool, ToolCallID: "c4"},
	}
	before := func(turn int, path string) (string, bool) {
		switch {
		case turn == 1 && path == "calc.go":
			return "zero\n", true
		case path == "unknown.go":
			return "", false
		}
		return "now\n", true
	}
	got := replayDiffs(msgs, before)
	want := map[string][]string{
		"c1": {"- zero", "+ one", "+ two"},
		"c2": {"- two", "+ three"},
		"c4": {"- three", "+ four"},
	}
	for id, lines := range want {
		for _, l := range lines {
			if !strings.Contains(got[id], l) {
				t.Errorf("%s: %q lacks %q", id, got[id], l)
			}
		}
	}
	if strings.Contains(got["c2"], "zero") {
		t.Errorf("c2 was compared with the turn's start, not the write before it: %q", got["c2"])
	}
	if d, ok := got["c3"]; ok {
		t.Errorf("a write of a file whose earlier content is unknown has a diff: %q", d)
	}
	if d, ok := got["c5"]; ok {
		t.Errorf("a call that has not run (it waits for approval) has a replayed diff: %q", d)
	}
}

// TestApprovalShowsTheDiff: the approval of a write shows what it would change in the file as it
// is now, once: the call's own line after the approval does not repeat it; a replayed approval
// leaves the diff to the call's result.
func TestApprovalShowsTheDiff(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "calc.go"), []byte("a - b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	call := `{"path":"calc.go","content":"a + b\n"}`
	var out bytes.Buffer
	p := &textPrinter{w: &out, workdir: dir}
	p.event(contract.Event{Event: contract.EventApproval, Tool: "write_file", CallID: "c1", Arguments: call, Text: "write_file waits for approval"})
	p.event(contract.Event{Event: contract.EventToolCall, Tool: "write_file", CallID: "c1", Arguments: call})
	if s := out.String(); strings.Count(s, "- a - b") != 1 || strings.Count(s, "+ a + b") != 1 {
		t.Fatalf("want the diff once, under the approval:\n%s", s)
	}
	out.Reset()
	p = &textPrinter{w: &out, workdir: dir, replay: map[string]string{"c1": "    - was\n    + then"}}
	p.event(contract.Event{Event: contract.EventApproval, Tool: "write_file", CallID: "c1", Arguments: call, Text: "write_file waits for approval"})
	p.event(contract.Event{Event: contract.EventMessage, Class: contract.RoleTool, Tool: "write_file", CallID: "c1", Text: "wrote calc.go"})
	if s := out.String(); strings.Contains(s, "a - b") || !strings.Contains(s, "- was") {
		t.Fatalf("a replay shows the diff against the file now, or not the one of its turn:\n%s", s)
	}
}
