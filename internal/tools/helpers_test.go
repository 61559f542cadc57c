package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/tools/toolspec/feedbacktest"
)

// call runs one tool call and, whenever the result is a failure, checks its wording: it says
// whether anything changed, names a next action and leaks nothing technical, including the real
// location of the work directory.
func call(t *testing.T, b *Box, name string, args any) contract.ToolResult {
	t.Helper()
	return callCtx(t, context.Background(), b, name, args)
}

func callCtx(t *testing.T, ctx context.Context, b *Box, name string, args any) contract.ToolResult {
	t.Helper()
	text, ok := args.(string)
	if !ok {
		raw, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		text = string(raw)
	}
	res := b.Run(ctx, contract.ToolCall{ID: "c1", Name: name, Arguments: text})
	if res.IsError {
		checkFailure(t, b, res)
	}
	return res
}

func checkFailure(t *testing.T, b *Box, res contract.ToolResult) {
	t.Helper()
	feedbacktest.Check(t, res.Content)
	if strings.Contains(res.Content, b.Root) {
		t.Errorf("failure %q shows the work directory's real location", res.Content)
	}
}

// newBox makes a work directory with a few files and an outside directory next to it.
func newBox(t *testing.T) (*Box, string) {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "work")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{root, outside, filepath.Join(root, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(root, "calc.go"):       "package calc\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n",
		filepath.Join(root, "sub", "b.txt"):  "beta\nTODO: two\n",
		filepath.Join(root, "a.txt"):         "alpha\nTODO: one\n",
		filepath.Join(outside, "secret.txt"): "outside\n",
	}
	for name, content := range files {
		if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return &Box{Root: root}, outside
}

// entry is what snapshot records for one file system entry.
type entry struct {
	Mode    fs.FileMode
	Content string
	Link    string
}

// snapshot records a directory tree byte for byte, so a test can assert nothing changed.
func snapshot(t *testing.T, dirs ...string) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := os.Lstat(p)
			if err != nil {
				return err
			}
			e := entry{Mode: info.Mode()}
			switch {
			case info.Mode()&fs.ModeSymlink != 0:
				e.Link, err = os.Readlink(p)
			case info.Mode().IsRegular():
				e.Content, err = fileContent(p, info)
			}
			out[p] = e
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// fileContent is a file's content, or for a file over 1 MiB its identity (inode, size and
// modification time), so that a snapshot of a tree with a file of hundreds of MiB stays small and
// quick. A write through a temporary file changes the inode; one in place changes the time.
func fileContent(name string, info fs.FileInfo) (string, error) {
	if info.Size() <= 1<<20 {
		b, err := os.ReadFile(name)
		return string(b), err
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return "", fmt.Errorf("no inode for %s", name)
	}
	return fmt.Sprintf("inode %d, %d bytes, modified %d", st.Ino, info.Size(), info.ModTime().UnixNano()), nil
}

func assertUnchanged(t *testing.T, before, after map[string]entry) {
	t.Helper()
	if !reflect.DeepEqual(before, after) {
		t.Errorf("the tree changed:\nbefore %v\nafter  %v", before, after)
	}
}
