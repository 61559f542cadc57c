package gitview

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=u", "-c", "user.email=u@example.com"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHidden: every way a file escapes git status is named, with its reason, and what git shows
// is not; a fsmonitor in the repository's configuration does not run while git is asked.
func TestHidden(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed: apt-get install git")
	}
	ws := t.TempDir()
	canary := filepath.Join(t.TempDir(), "ran")
	git(t, ws, "init", "-q", ".")
	for _, f := range []string{"tracked.go", "assumed.go", "skipped.go", "gone.go"} {
		write(t, filepath.Join(ws, f), "package main\n")
	}
	git(t, ws, "add", ".")
	git(t, ws, "commit", "-q", "-m", "first")
	git(t, ws, "update-index", "--assume-unchanged", "assumed.go")
	git(t, ws, "update-index", "--skip-worktree", "skipped.go", "gone.go")
	git(t, ws, "config", "core.fsmonitor", "touch "+canary)
	write(t, filepath.Join(ws, ".gitignore"), "init.go\n!kept.log\n*.log\nbuild/\n")
	write(t, filepath.Join(ws, ".git", "info", "exclude"), "excluded.go\n")
	for _, f := range []string{"init.go", "excluded.go", "kept.log", "plain.go", "build/out.go", "a\nb.go", "tracked.go", "assumed.go", "skipped.go"} {
		write(t, filepath.Join(ws, f), "package main\n\nfunc init() {}\n")
	}
	if err := os.Remove(filepath.Join(ws, "gone.go")); err != nil {
		t.Fatal(err)
	}
	present := []string{"init.go", "excluded.go", "kept.log", "plain.go", "build/out.go", "a\nb.go", "tracked.go", "assumed.go", "skipped.go", ".gitignore"}
	got, err := Hidden(context.Background(), ws, present, []string{"gone.go", "missing/x.go"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"init.go":      "ignored by .gitignore:1: init.go",
		"excluded.go":  "ignored by .git/info/exclude:1: excluded.go",
		"kept.log":     "ignored by .gitignore:3: *.log",
		"build/out.go": "ignored by .gitignore:4: build/",
		"assumed.go":   "assume-unchanged",
		"skipped.go":   "skip-worktree",
		"gone.go":      "skip-worktree",
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%q: got %q, want %q", p, got[p], w)
		}
	}
	for p, why := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%q is named hidden (%s), but git status shows it", p, why)
		}
	}
	if _, err := os.Stat(canary); err == nil {
		t.Error("the repository's core.fsmonitor ran")
	}
	// The same answer git status gives: none of the hidden files it shows.
	out, err := exec.Command("git", "-C", ws, "-c", "core.fsmonitor=false", "status", "--porcelain").Output()
	if err != nil {
		t.Fatal(err)
	}
	for p := range want {
		if strings.Contains(string(out), p) {
			t.Errorf("git status shows %q:\n%s", p, out)
		}
	}
}

// TestHiddenOutsideARepository: a work directory git does not track hides nothing.
func TestHiddenOutsideARepository(t *testing.T) {
	ws := t.TempDir()
	write(t, filepath.Join(ws, "x.go"), "package x\n")
	got, err := Hidden(context.Background(), ws, []string{"x.go"}, nil)
	if err != nil || len(got) != 0 {
		t.Fatalf("got %v, %v; want nothing hidden", got, err)
	}
}
