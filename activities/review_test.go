package activities

import (
	"fmt"
	"testing"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/tools/snapshot"
)

// TestRoutineGitPath: what git add and commit write is left out of a change list; git's control
// files, a submodule's .git file and files of the work tree are not.
func TestRoutineGitPath(t *testing.T) {
	for p, want := range map[string]bool{
		".git/objects/ab/cdef":             true,
		".git/index":                       true,
		".git/refs/heads/main":             true,
		".git/modules/lib/x/objects/12/34": true,
		".git/modules/lib/x/HEAD":          true,
		"sub/.git/logs/HEAD":               true,
		".git/config":                      false,
		".git/hooks/pre-commit":            false,
		".git/modules/lib/config":          false,
		"sub/.git":                         false,
		"objects/index":                    false,
		"main.go":                          false,
		"refs/heads/main":                  false,
	} {
		if got := routineGitPath(p); got != want {
			t.Errorf("routineGitPath(%q) = %v, want %v", p, got, want)
		}
	}
}

// TestChangeList: hidden files come first and are never cut by the bound; every kind is counted.
func TestChangeList(t *testing.T) {
	var changes []snapshot.Change
	file := snapshot.Entry{Mode: 0o644}
	for i := range contract.MaxListedChanges + 10 {
		changes = append(changes, snapshot.Change{Path: snapshot.Name(fmt.Sprintf("f%03d.go", i)), After: &file})
	}
	changes = append(changes, snapshot.Change{Path: "zz\x1b[2J.go", Before: &file, After: &file}, snapshot.Change{Path: "gone.go", Before: &file})
	got := changeList(changes, map[string]string{"zz\x1b[2J.go": "ignored by .gitignore:1: zz*"}, "")
	if got.Created != contract.MaxListedChanges+10 || got.Changed != 1 || got.Deleted != 1 || got.Hidden != 1 || got.More != 12 {
		t.Fatalf("counts %+v", got)
	}
	if len(got.Files) != contract.MaxListedChanges || got.Files[0].Path != `"zz\x1b[2J.go"` || got.Files[0].Hidden == "" {
		t.Fatalf("first listed %+v of %d", got.Files[0], len(got.Files))
	}
}
