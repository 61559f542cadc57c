package cli

import (
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/contract"
)

// TestChangeLines: the summary names hidden files with why, on one line each and harmless, and
// says how many it leaves out.
func TestChangeLines(t *testing.T) {
	c := &contract.Changes{
		Files: []contract.FileChange{
			{Path: "zz_init.go", Change: contract.FileCreated, Hidden: "ignored by .gitignore:1: zz_init.go"},
			{Path: "a\x1b[2Jb.go", Change: contract.FileChanged, Hidden: "ignored by x\ny:1: *"},
			{Path: "main.go", Change: contract.FileChanged},
			{Path: "old.go", Change: contract.FileDeleted},
		},
		Created: 1, Changed: 2, Deleted: 1, Hidden: 2, More: 3,
	}
	got := strings.Join(changeLines(c, true), "\n")
	want := strings.Join([]string{
		"files: 1 created, 2 changed, 1 deleted · 2 hidden from git status",
		"  + zz_init.go  (hidden from git status: ignored by .gitignore:1: zz_init.go)",
		`  ~ a\x1b[2Jb.go  (hidden from git status: ignored by x\ny:1: *)`,
		"  ~ main.go",
		"  - old.go",
		"  … and 3 more (--output jsonl lists up to 200)",
	}, "\n")
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if lines := changeLines(&contract.Changes{Note: "no snapshot"}, false); len(lines) != 0 {
		t.Fatalf("a session that ran no tool gets %q", lines)
	}
	if lines := changeLines(&contract.Changes{Note: "no snapshot"}, true); len(lines) != 1 || lines[0] != "files: no snapshot" {
		t.Fatalf("the note: %q", lines)
	}
}

// TestBranchLine: the summary names the pushed branch, its commit and the start commit, or why
// nothing was pushed, harmless and on one line.
func TestBranchLine(t *testing.T) {
	cases := []struct {
		br   *contract.Branch
		want string
	}{
		{nil, ""},
		{&contract.Branch{Repo: "acme/app", Name: "keel/s1", Commit: "1111111111111111111111111111111111111111",
			Parent: "0123456789abcdef0123456789abcdef01234567", Pushed: true}, "branch: keel/s1 pushed to acme/app at 111111111111 (on 0123456789ab)"},
		{&contract.Branch{Name: "keel/s1", Note: "no change\x1b[2J"}, `branch: no change\x1b[2J`},
	}
	for _, c := range cases {
		if got := branchLine(c.br); got != c.want {
			t.Errorf("branchLine(%+v) = %q, want %q", c.br, got, c.want)
		}
	}
}
