package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/contract"
)

func TestReadAndList(t *testing.T) {
	b, _ := newBox(t)
	if err := os.WriteFile(filepath.Join(b.Root, "bin.dat"), []byte{1, 0, 2}, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		tool    string
		args    map[string]any
		isError bool
		want    string
	}{
		{"read", "read_file", map[string]any{"path": "calc.go"}, false, "func Add(a, b int) int {\n\treturn a + b\n}\n"},
		{"read missing", "read_file", map[string]any{"path": "sub/nope.go"}, true, `There is no file "sub/nope.go" in the work directory; nothing changed. Use list_dir on "sub" to find the right name.`},
		{"read directory", "read_file", map[string]any{"path": "sub"}, true, `"sub" is a directory, not a file`},
		{"read binary", "read_file", map[string]any{"path": "bin.dat"}, false, `"bin.dat" is a binary file of 3 bytes`},
		{"list root sorted", "list_dir", map[string]any{"path": "."}, false, "a.txt (16 bytes)\nbin.dat (3 bytes)\ncalc.go (55 bytes)\nsub/"},
		{"list file", "list_dir", map[string]any{"path": "a.txt"}, true, `"a.txt" is a file, not a directory`},
		{"list missing", "list_dir", map[string]any{"path": "nope"}, true, `There is no directory "nope"`},
		{"search", "search", map[string]any{"pattern": "TODO"}, false, "a.txt:2: TODO: one\nsub/b.txt:2: TODO: two"},
		{"search a file", "search", map[string]any{"pattern": "return", "path": "calc.go"}, false, "calc.go:4: \treturn a + b"},
		{"search nothing", "search", map[string]any{"pattern": "zebra"}, false, `No text file under "." contains "zebra"`},
		{"search missing path", "search", map[string]any{"pattern": "x", "path": "nope"}, true, `There is no file or directory "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := snapshot(t, b.Root)
			res := call(t, b, tt.tool, tt.args)
			assertUnchanged(t, before, snapshot(t, b.Root))
			if res.IsError != tt.isError || res.Changed {
				t.Fatalf("result %+v, want IsError=%v and nothing changed", res, tt.isError)
			}
			if !strings.Contains(res.Content, tt.want) {
				t.Fatalf("content\n%q\nwant it to contain\n%q", res.Content, tt.want)
			}
		})
	}
}

func TestSearchIsCapped(t *testing.T) {
	b, _ := newBox(t)
	var many strings.Builder
	for i := range 150 {
		fmt.Fprintf(&many, "needle %d\n", i)
	}
	if err := os.WriteFile(filepath.Join(b.Root, "many.txt"), []byte(many.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	res := call(t, b, "search", map[string]any{"pattern": "needle"})
	lines := strings.Split(res.Content, "\n")
	if len(lines) != searchMaxResults+1 || !strings.HasPrefix(lines[searchMaxResults], "[cut: only the first 100 matches") {
		t.Fatalf("got %d lines ending %q", len(lines), lines[len(lines)-1])
	}
	if lines[0] != "many.txt:1: needle 0" {
		t.Fatalf("first line %q", lines[0])
	}
}

func TestWriteFile(t *testing.T) {
	b, _ := newBox(t)
	res := call(t, b, "write_file", map[string]any{"path": "new/deep/x.go", "content": "package x\n"})
	if res.IsError || !res.Changed || res.Content != `Wrote 10 bytes to "new/deep/x.go" (created the file); the file has changed.` {
		t.Fatalf("create: %+v", res)
	}
	got, err := os.ReadFile(filepath.Join(b.Root, "new", "deep", "x.go"))
	if err != nil || string(got) != "package x\n" {
		t.Fatalf("content %q, %v", got, err)
	}
	res = call(t, b, "write_file", map[string]any{"path": "calc.go", "content": "package calc\n"})
	if res.IsError || !strings.Contains(res.Content, "replaced its content") {
		t.Fatalf("replace: %+v", res)
	}
	before := snapshot(t, b.Root)
	for _, args := range []map[string]any{
		{"path": "sub", "content": "x"},
		{"path": ".", "content": "x"},
		{"path": "a.txt/inner.txt", "content": "x"},
	} {
		res := call(t, b, "write_file", args)
		if !res.IsError || res.Changed {
			t.Fatalf("write %v: %+v, want a refusal", args, res)
		}
	}
	assertUnchanged(t, before, snapshot(t, b.Root))
}

// TestWriteAtomic checks that a write that fails part-way leaves the old file and no debris.
func TestWriteAtomic(t *testing.T) {
	b, _ := newBox(t)
	target := filepath.Join(b.Root, "calc.go")
	before := snapshot(t, b.Root)
	err := writeAtomic(target, 0o644, func(f *os.File) error {
		if _, err := f.WriteString("package broken"); err != nil {
			return err
		}
		return errors.New("disk full")
	})
	if err == nil {
		t.Fatal("writeAtomic reported success for a failed fill")
	}
	assertUnchanged(t, before, snapshot(t, b.Root))

	if err := writeAtomic(target, 0o600, func(f *os.File) error {
		_, err := f.WriteString("package calc // new\n")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(target)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("mode after write: %v, %v", info.Mode(), err)
	}
}

func TestEditFile(t *testing.T) {
	const dup = "x := 1\ny := 2\nx := 1\n"
	tests := []struct {
		name    string
		old     string
		new     string
		isError bool
		want    string
		after   string
	}{
		{"one match", "return a + b", "return b + a", false, `Replaced 1 occurrence in "calc.go" at line 4; the file has changed.`,
			"package calc\n\nfunc Add(a, b int) int {\n\treturn b + a\n}\n"},
		{"no match", "return a - b", "x", true, "was not found in \"calc.go\"; the file is unchanged. Re-read the file with read_file and copy the text exactly.", ""},
		{"match only ignoring spaces", "func Add(a, b int) int {\n    return a + b", "x", true, "It does appear when spaces and line breaks are ignored", ""},
		{"several matches", "a", "z", true, "add more surrounding context", ""},
		{"empty old", "", "x", true, "The field old is empty", ""},
		{"same old and new", "Add", "Add", true, "the edit would do nothing", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _ := newBox(t)
			before := snapshot(t, b.Root)
			res := call(t, b, "edit_file", map[string]any{"path": "calc.go", "old": tt.old, "new": tt.new})
			if res.IsError != tt.isError || res.Changed == tt.isError {
				t.Fatalf("result %+v, want IsError=%v", res, tt.isError)
			}
			if !strings.Contains(strings.ToLower(res.Content), strings.ToLower(tt.want)) {
				t.Fatalf("content %q, want %q", res.Content, tt.want)
			}
			if tt.isError {
				assertUnchanged(t, before, snapshot(t, b.Root))
				return
			}
			got, _ := os.ReadFile(filepath.Join(b.Root, "calc.go"))
			if string(got) != tt.after {
				t.Fatalf("file now %q", got)
			}
		})
	}
	b, _ := newBox(t)
	if err := os.WriteFile(filepath.Join(b.Root, "dup.go"), []byte(dup), 0o644); err != nil {
		t.Fatal(err)
	}
	res := call(t, b, "edit_file", map[string]any{"path": "dup.go", "old": "x := 1", "new": "x := 3"})
	if !strings.Contains(res.Content, `appears 2 times in "dup.go" (at lines 1, 3)`) {
		t.Fatalf("several matches: %q", res.Content)
	}
	res = call(t, b, "edit_file", map[string]any{"path": "nope.go", "old": "a", "new": "b"})
	if !res.IsError || !strings.Contains(res.Content, "Use write_file to create it") {
		t.Fatalf("missing file: %+v", res)
	}
}

// TestRunRefusals covers refusals decided before any tool runs.
func TestRunRefusals(t *testing.T) {
	b, _ := newBox(t)
	tests := []struct {
		name string
		tool string
		args string
		want string
	}{
		{"unknown tool", "delete_file", `{"path":"a.txt"}`, `There is no tool named "delete_file"`},
		{"bad JSON", "read_file", `{"path": `, "not valid JSON"},
		{"missing field", "write_file", `{"path":"a.txt"}`, `missing required field "content" (string)`},
		{"empty args", "read_file", ``, "the arguments are empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := snapshot(t, b.Root)
			res := b.Run(context.Background(), contract.ToolCall{Name: tt.tool, Arguments: tt.args})
			checkFailure(t, b, res)
			assertUnchanged(t, before, snapshot(t, b.Root))
			if !res.IsError || res.Changed || !strings.Contains(res.Content, tt.want) {
				t.Fatalf("result %+v, want a refusal containing %q", res, tt.want)
			}
		})
	}
	missing := &Box{Root: filepath.Join(t.TempDir(), "gone")}
	res := call(t, missing, "list_dir", map[string]any{"path": "."})
	if !res.IsError || !strings.Contains(res.Content, "work directory is not available") {
		t.Fatalf("missing root: %+v", res)
	}
}

// TestFileToolsLeaveGitAlone tries every way a file tool could write into git's own folder: plain
// paths, ./ and .. detours, another case, a link to a control file, a git folder a .git file
// names. Each is refused, the result says nothing changed and what to do instead, and nothing
// changes.
func TestFileToolsLeaveGitAlone(t *testing.T) {
	b, _ := newBox(t)
	root := b.Root
	for _, d := range []string{".git/hooks", ".GIT", "store", "sub/mod"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range map[string]string{
		".git/config": "[core]\n", ".git/HEAD": "ref: refs/heads/main\n", "store/HEAD": "ref: refs/heads/main\n",
		"store/config": "[core]\n", "sub/mod/.git": "gitdir: ../../store\n",
	} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(".git/config", filepath.Join(root, "cfg")); err != nil {
		t.Fatal(err)
	}
	hook := "#!/bin/sh\ntouch /tmp/canary\n"
	tests := []struct {
		tool string
		args map[string]any
	}{
		{"write_file", map[string]any{"path": ".git/config", "content": "[core]\n\tfsmonitor = touch /tmp/canary\n"}},
		{"write_file", map[string]any{"path": ".git/hooks/pre-commit", "content": hook}},
		{"write_file", map[string]any{"path": "./.git/info/exclude", "content": "evil.go\n"}},
		{"write_file", map[string]any{"path": "sub/../.git/hooks/post-checkout", "content": hook}},
		{"write_file", map[string]any{"path": ".GIT/config", "content": "[alias]\n"}},
		{"write_file", map[string]any{"path": "cfg", "content": "[alias]\n\tst = !touch /tmp/canary\n"}},
		{"write_file", map[string]any{"path": "sub/mod/.git", "content": "gitdir: ../../evil\n"}},
		{"write_file", map[string]any{"path": filepath.Join(root, ".git", "commondir"), "content": "../evil\n"}},
		{"edit_file", map[string]any{"path": ".git/config", "old": "[core]", "new": "[core]\n\tfsmonitor = touch /tmp/canary"}},
		{"edit_file", map[string]any{"path": "cfg", "old": "[core]", "new": "[alias]"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.tool, " ", tt.args["path"]), func(t *testing.T) {
			before := snapshot(t, root)
			res := call(t, b, tt.tool, tt.args)
			assertUnchanged(t, before, snapshot(t, root))
			if !res.IsError || res.Changed || !strings.Contains(res.Content, "read-only to the model") ||
				!strings.Contains(res.Content, "nothing changed") || !strings.Contains(res.Content, "git commit") {
				t.Fatalf("result %+v, want a refusal that says nothing changed and what to do instead", res)
			}
		})
	}
	t.Run("store is a git folder only through .git", func(t *testing.T) {
		if err := os.WriteFile(filepath.Join(root, ".git"), []byte("gitdir: store\n"), 0o644); err == nil {
			t.Fatal("wrote .git over a folder")
		}
		res := call(t, b, "write_file", map[string]any{"path": "notes.txt", "content": "fine\n"})
		if res.IsError {
			t.Fatalf("an ordinary write was refused: %+v", res)
		}
	})
}
