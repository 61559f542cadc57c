package cli

import (
	"strings"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/session"
)

// treeOrder puts every sub-agent's row right after its parent's (and its own sub-agents after
// it), keeping the listing's order otherwise; a sub-agent whose parent is not listed stays where
// it was. It returns each row's depth in its tree with it, for treeLabel.
func treeOrder(rows []session.Row) ([]session.Row, []int) {
	listed := map[string]bool{}
	for _, r := range rows {
		listed[r.WorkflowID] = true
	}
	children := map[string][]session.Row{}
	var roots []session.Row
	for _, r := range rows {
		if p := contract.ParentSessionID(r.WorkflowID); p != "" && listed[p] {
			children[p] = append(children[p], r)
			continue
		}
		roots = append(roots, r)
	}
	out, depths := make([]session.Row, 0, len(rows)), make([]int, 0, len(rows))
	var walk func(r session.Row, depth int)
	walk = func(r session.Row, depth int) {
		out, depths = append(out, r), append(depths, depth)
		for _, c := range children[r.WorkflowID] {
			walk(c, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	return out, depths
}

// treeLabel is a row's ID as a listing shows it: a sub-agent indented under its parent.
func treeLabel(id string, depth int) string {
	if depth == 0 {
		return id
	}
	return strings.Repeat("  ", depth-1) + "└ " + id
}
