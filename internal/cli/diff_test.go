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
