package snapshot

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/keelrun/keel/internal/contract"
)

// TestSessionChanges: the first snapshot against the last names every file and link created,
// changed (content, permission, link target) and deleted, not folders, byte for byte.
func TestSessionChanges(t *testing.T) {
	ws, s := t.TempDir(), New(t.TempDir())
	w := func(p, text string, mode fs.FileMode) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, p), []byte(text), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(ws, p), mode); err != nil {
			t.Fatal(err)
		}
	}
	w("same.go", "a", 0o644)
	w("edited.go", "a", 0o644)
	w("chmod.sh", "a", 0o644)
	w("gone/old.go", "a", 0o644)
	if err := os.Symlink("same.go", filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureBase("wf", ws); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.SessionChanges("other"); err != ErrNone {
		t.Fatalf("a session without snapshots: %v, want ErrNone", err)
	}
	w("edited.go", "b", 0o644)
	w("chmod.sh", "a", 0o755)
	w("new/dir/init.go", "package main", 0o644)
	w("bad\xffname", "x", 0o644)
	if err := os.RemoveAll(filepath.Join(ws, "gone")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("edited.go", filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Take("wf", 1, ws); err != nil {
		t.Fatal(err)
	}
	got, note, err := s.SessionChanges("wf")
	if err != nil || note != "" {
		t.Fatalf("SessionChanges: %v, note %q", err, note)
	}
	want := []pathKind{
		{"bad\xffname", contract.FileCreated},
		{"chmod.sh", contract.FileChanged},
		{"edited.go", contract.FileChanged},
		{"gone/old.go", contract.FileDeleted},
		{"link", contract.FileChanged},
		{"new/dir/init.go", contract.FileCreated},
	}
	if !reflect.DeepEqual(kinds(got), want) {
		t.Fatalf("got %q\nwant %q", kinds(got), want)
	}
}

// TestDiffSkipped: a file a snapshot skipped cannot be compared and is counted, unless it is new.
func TestDiffSkipped(t *testing.T) {
	a := Manifest{Entries: []Entry{{Path: "big", Mode: 0o644, Hash: "x"}}, Skipped: []Name{"huge"}}
	b := Manifest{Skipped: []Name{"big", "huge", "newbig"}}
	got, unknown := Diff(a, b)
	if want := []pathKind{{"newbig", contract.FileCreated}}; !reflect.DeepEqual(kinds(got), want) || unknown != 2 {
		t.Fatalf("got %q, %d unknown; want %q, 2", kinds(got), unknown, want)
	}
}

// pathKind is a change as a change list shows it.
type pathKind struct {
	Path Name
	Kind string
}

func kinds(cs []Change) []pathKind {
	out := make([]pathKind, len(cs))
	for i, c := range cs {
		out[i] = pathKind{c.Path, c.Kind()}
	}
	return out
}
