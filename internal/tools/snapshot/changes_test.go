package snapshot

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// twoTurns snapshots a work directory at turn 0, then after a turn that changes a file, adds one
// in a new folder and removes another.
func twoTurns(t *testing.T) (wd string, s *Store, before, after Manifest) {
	t.Helper()
	wd, s = t.TempDir(), New(t.TempDir())
	write(t, filepath.Join(wd, "calc.go"), "package calc\n\nfunc Add(a, b int) int { return a - b }\n")
	write(t, filepath.Join(wd, "gone.txt"), "bye\n")
	if err := s.EnsureBase("s", wd); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(wd, "calc.go"), "package calc\n\nfunc Add(a, b int) int { return a + b }\n")
	write(t, filepath.Join(wd, "new", "notes.md"), "notes\n")
	if err := os.Remove(filepath.Join(wd, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Take("s", 1, wd); err != nil {
		t.Fatal(err)
	}
	var err error
	if before, err = s.Load("s", 0); err != nil {
		t.Fatal(err)
	}
	if after, err = s.Load("s", 1); err != nil {
		t.Fatal(err)
	}
	return wd, s, before, after
}

func paths(cs []Change) string {
	var out []string
	for _, c := range cs {
		out = append(out, string(c.Path))
	}
	return strings.Join(out, ",")
}

// TestRevertPutsTheTurnBack: the changes of a turn are listed, their stored content read, and a
// revert brings the work directory back as it was before the turn; a second revert finds it
// already so and refuses to touch it.
func TestRevertPutsTheTurnBack(t *testing.T) {
	wd, s, before, after := twoTurns(t)
	cs := Changes(before, after)
	if got := paths(cs); got != "calc.go,gone.txt,new,new/notes.md" {
		t.Fatalf("changes %s", got)
	}
	b, err := s.Content(*cs[0].Before, 1<<20)
	if err != nil || !strings.Contains(string(b), "a - b") {
		t.Fatalf("the stored content before: %q, %v", b, err)
	}
	if _, err := s.Content(*cs[0].Before, 3); !errors.Is(err, ErrTooBig) {
		t.Fatalf("a bound below the file's size: %v, want ErrTooBig", err)
	}
	if st, _, err := Compare(wd, cs); err != nil || st != AsAfter {
		t.Fatalf("before the revert: %v, %v; want AsAfter", st, err)
	}
	if err := s.Revert(wd, cs); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(wd, "calc.go")); !strings.Contains(got, "a - b") {
		t.Errorf("calc.go after the revert: %q", got)
	}
	if got := read(t, filepath.Join(wd, "gone.txt")); got != "bye\n" {
		t.Errorf("gone.txt after the revert: %q", got)
	}
	if _, err := os.Lstat(filepath.Join(wd, "new")); !os.IsNotExist(err) {
		t.Errorf("the folder the turn added is still there: %v", err)
	}
	if st, _, err := Compare(wd, cs); err != nil || st != AsBefore {
		t.Fatalf("after the revert: %v, %v; want AsBefore", st, err)
	}
	var conflict *ConflictError
	if err := s.Revert(wd, cs); !errors.As(err, &conflict) {
		t.Fatalf("a second revert: %v, want a conflict", err)
	}
}

// TestRevertRefusesAHostileWorkDirectory: a work directory changed since the snapshot is left
// alone, whatever was planted: a link where the file was (to a file outside, which keeps its
// content), a named pipe (nothing blocks), a folder on the way replaced by a link.
func TestRevertRefusesAHostileWorkDirectory(t *testing.T) {
	cases := []struct {
		name  string
		plant func(t *testing.T, wd, outside string)
	}{
		{"edited since", func(t *testing.T, wd, _ string) { write(t, filepath.Join(wd, "calc.go"), "edited by hand\n") }},
		{"link to a file outside", func(t *testing.T, wd, outside string) {
			must(t, os.Remove(filepath.Join(wd, "calc.go")))
			must(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(wd, "calc.go")))
		}},
		{"named pipe", func(t *testing.T, wd, _ string) {
			must(t, os.Remove(filepath.Join(wd, "calc.go")))
			must(t, syscall.Mkfifo(filepath.Join(wd, "calc.go"), 0o644))
		}},
		{"folder replaced by a link", func(t *testing.T, wd, outside string) {
			must(t, os.RemoveAll(filepath.Join(wd, "new")))
			must(t, os.Symlink(outside, filepath.Join(wd, "new")))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wd, s, before, after := twoTurns(t)
			outside := t.TempDir()
			write(t, filepath.Join(outside, "secret"), "keep me\n")
			write(t, filepath.Join(outside, "notes.md"), "notes\n")
			c.plant(t, wd, outside)
			var conflict *ConflictError
			if err := s.Revert(wd, Changes(before, after)); !errors.As(err, &conflict) {
				t.Fatalf("got %v, want a conflict", err)
			}
			if got := read(t, filepath.Join(outside, "secret")); got != "keep me\n" {
				t.Errorf("the file outside changed: %q", got)
			}
			if _, err := os.Stat(filepath.Join(outside, "notes.md")); err != nil {
				t.Errorf("the file outside is gone: %v", err)
			}
			if _, err := os.Lstat(filepath.Join(wd, "gone.txt")); !os.IsNotExist(err) {
				t.Errorf("a refused revert wrote gone.txt: %v", err)
			}
		})
	}
}

// TestContentRefusesAPlantedBlob: a stored blob that is a link or a pipe is not read.
func TestContentRefusesAPlantedBlob(t *testing.T) {
	_, s, before, _ := twoTurns(t)
	var e Entry
	for _, x := range before.Entries {
		if x.Path == "gone.txt" {
			e = x
		}
	}
	p := s.blobPath(e.Hash)
	must(t, os.Remove(p))
	must(t, syscall.Mkfifo(p, 0o600))
	if _, err := s.Content(e, 1<<20); err == nil {
		t.Fatal("a named pipe in the store was read")
	}
	must(t, os.Remove(p))
	must(t, os.Symlink("/etc/hostname", p))
	if _, err := s.Content(e, 1<<20); err == nil {
		t.Fatal("a link in the store was followed")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
