package cli

import (
	"slices"
	"testing"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/session"
)

// TestTreeOrder: a listing shows each sub-agent under its parent, deeper ones further in, and
// leaves sessions without a listed parent where they were.
func TestTreeOrder(t *testing.T) {
	a1 := contract.ChildSessionID("a", "c1")
	a2 := contract.ChildSessionID("a", "c2")
	a11 := contract.ChildSessionID(a1, "c3")
	orphan := contract.ChildSessionID("gone", "c4")
	in := []session.Row{{WorkflowID: a2}, {WorkflowID: "b"}, {WorkflowID: a11}, {WorkflowID: "a"}, {WorkflowID: orphan}, {WorkflowID: a1}}
	rows, depths := treeOrder(in)
	var got []string
	for i, r := range rows {
		got = append(got, treeLabel(r.WorkflowID, depths[i]))
	}
	want := []string{"b", "a", "└ " + a2, "└ " + a1, "  └ " + a11, orphan}
	if !slices.Equal(got, want) {
		t.Fatalf("tree order\n%q\nwant\n%q", got, want)
	}
}
