package githubjobs

import (
	"fmt"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/contract"
)

// TestChangesBlock: the comment names hidden files as such, keeps the model's names inert (no
// fence break, no marker), and stays bounded however many files changed.
func TestChangesBlock(t *testing.T) {
	c := &contract.Changes{
		Files: []contract.FileChange{
			{Path: "zz_init.go", Change: contract.FileCreated, Hidden: "ignored by .gitignore:1: zz_init.go"},
			{Path: "x```\n<!-- keel-job:other -->", Change: contract.FileChanged},
		},
		Created: 1, Changed: 1, Hidden: 1,
	}
	got := changesBlock(c)
	for _, want := range []string{"**1 hidden from `git status`**", "+ zz_init.go   HIDDEN from git status: ignored by .gitignore:1: zz_init.go"} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q:\n%s", want, got)
		}
	}
	if strings.Count(got, "```") != 2 || strings.Contains(got, "<!-- keel-job:") {
		t.Errorf("a name breaks out of the block or forges a marker:\n%s", got)
	}
	var many contract.Changes
	for i := range contract.MaxListedChanges {
		many.Files = append(many.Files, contract.FileChange{Path: fmt.Sprintf("dir/%0200d", i), Change: contract.FileCreated})
	}
	many.Created, many.More = contract.MaxListedChanges+50, 50
	if got := changesBlock(&many); len(got) > maxChangesBlock+500 || !strings.Contains(got, "more") {
		t.Errorf("%d characters for %d files, or no count of the rest", len(got), many.Created)
	}
	if changesBlock(nil) != "" || changesBlock(&contract.Changes{Note: "x"}) != "" {
		t.Error("a session that changed nothing gets a block")
	}
}

// TestBranchBlock: a job's comment names the branch its changes were pushed to and its commit,
// or why nothing was pushed, on one line, with no name able to leave its code span.
func TestBranchBlock(t *testing.T) {
	cases := []struct {
		br   *contract.Branch
		want string
	}{
		{nil, ""},
		{&contract.Branch{Name: "keel/job-1", Commit: "abc", Parent: "def", Pushed: true}, "\n\nChanges pushed as branch `keel/job-1` (commit `abc`, on `def`)."},
		{&contract.Branch{Name: "keel/x`y", Commit: "abc", Parent: "def", Pushed: true}, "\n\nChanges pushed as branch `keel/x'y` (commit `abc`, on `def`)."},
		{&contract.Branch{Name: "keel/job-1", Note: "the branch could not be pushed:\nrefused"}, "\n\nBranch: the branch could not be pushed: refused"},
	}
	for _, c := range cases {
		if got := branchBlock(c.br); got != c.want {
			t.Errorf("branchBlock(%+v) = %q, want %q", c.br, got, c.want)
		}
	}
}
