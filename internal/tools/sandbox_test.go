package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEscapesAreRefused checks that `..`, absolute paths outside the work directory and symbolic
// links that point out of it are refused by every tool, with nothing changed anywhere.
func TestEscapesAreRefused(t *testing.T) {
	b, outside := newBox(t)
	if err := os.Symlink(outside, filepath.Join(b.Root, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(b.Root, "secret-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "nowhere"), filepath.Join(b.Root, "dangling")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		tool string
		args map[string]any
		want string
	}{
		{"read dotdot", "read_file", map[string]any{"path": "../outside/secret.txt"}, "outside the work directory"},
		{"read absolute", "read_file", map[string]any{"path": filepath.Join(outside, "secret.txt")}, "absolute and outside"},
		{"read through link dir", "read_file", map[string]any{"path": "out/secret.txt"}, "through a symbolic link"},
		{"read link file", "read_file", map[string]any{"path": "secret-link"}, "through a symbolic link"},
		{"write dotdot", "write_file", map[string]any{"path": "sub/../../x.txt", "content": "x"}, "outside the work directory"},
		{"write through link dir", "write_file", map[string]any{"path": "out/new/x.txt", "content": "x"}, "through a symbolic link"},
		{"write over link file", "write_file", map[string]any{"path": "secret-link", "content": "x"}, "through a symbolic link"},
		{"write dangling link", "write_file", map[string]any{"path": "dangling", "content": "x"}, "points nowhere"},
		{"edit through link", "edit_file", map[string]any{"path": "secret-link", "old": "outside", "new": "inside"}, "through a symbolic link"},
		{"list dotdot", "list_dir", map[string]any{"path": ".."}, "outside the work directory"},
		{"list link dir", "list_dir", map[string]any{"path": "out"}, "through a symbolic link"},
		{"search dotdot", "search", map[string]any{"pattern": "outside", "path": "../outside"}, "outside the work directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := snapshot(t, filepath.Dir(b.Root))
			res := call(t, b, tt.tool, tt.args)
			assertUnchanged(t, before, snapshot(t, filepath.Dir(b.Root)))
			if !res.IsError || res.Changed {
				t.Fatalf("result %+v, want a refusal that changed nothing", res)
			}
			if !strings.Contains(res.Content, tt.want) || !strings.Contains(res.Content, "nothing was read or changed") {
				t.Fatalf("content %q, want it to contain %q", res.Content, tt.want)
			}
			if strings.Contains(res.Content, outside) || strings.Contains(res.Content, "outside\n") {
				t.Fatalf("content %q leaks the outside location or content", res.Content)
			}
		})
	}
}

// TestInsidePathsResolve checks that symbolic links and absolute paths that stay inside the work
// directory are followed and shown relative to it.
func TestInsidePathsResolve(t *testing.T) {
	b, _ := newBox(t)
	if err := os.Symlink("sub", filepath.Join(b.Root, "alias")); err != nil {
		t.Fatal(err)
	}
	if res := call(t, b, "read_file", map[string]any{"path": "alias/b.txt"}); res.IsError || res.Content != "beta\nTODO: two\n" {
		t.Fatalf("read through an inside link: %+v", res)
	}
	res := call(t, b, "write_file", map[string]any{"path": filepath.Join(b.Root, "sub", "abs.txt"), "content": "x"})
	if res.IsError || !strings.Contains(res.Content, `"sub/abs.txt"`) {
		t.Fatalf("write by absolute inside path: %+v", res)
	}
}

// TestRootThroughSymlink checks that a work directory reached through a symbolic link works.
func TestRootThroughSymlink(t *testing.T) {
	b, _ := newBox(t)
	link := filepath.Join(t.TempDir(), "root-link")
	if err := os.Symlink(b.Root, link); err != nil {
		t.Fatal(err)
	}
	lb := &Box{Root: link}
	if res := call(t, lb, "read_file", map[string]any{"path": "calc.go"}); res.IsError {
		t.Fatalf("read: %+v", res)
	}
	if res := call(t, lb, "read_file", map[string]any{"path": filepath.Join(link, "a.txt")}); res.IsError {
		t.Fatalf("read by absolute path through the linked root: %+v", res)
	}
}
