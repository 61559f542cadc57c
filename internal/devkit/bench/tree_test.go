package bench

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
)

// treeChildren is how many sub-agents the measured tree's parent starts.
const treeChildren = 3

// BenchmarkTreeActions measures what a tree of sub-agents costs in Temporal actions, read from the
// server's `action` counter: a session of actionTurns tool turns and the answer with no children,
// then the same session whose first tool turn delegates to treeChildren sub-agents that each run
// the same five turns. The tree's actions less the lone session's, divided by treeChildren, are
// what one sub-agent costs; less a lone session's, what being a sub-agent adds to a session.
func BenchmarkTreeActions(b *testing.B) {
	ctx := benchContext(b)
	srv := startServer(b, ctx, KeelDynamicConfig(nil))
	rig := startRig(b, srv, RigOptions{ToolTurns: actionTurns})
	if _, _, err := rig.RunSession(ctx, uniq("warm"), uniq("warm")); err != nil {
		b.Fatal(err)
	}
	tree := contract.Limits{MaxTurns: 100, DelegationDepth: 1, MaxChildren: treeChildren + 1}
	for i := 0; i < b.N; i++ {
		rig.Model.Delegate = 0
		before, err := SettledActions(ctx, srv.MetricsURL())
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := rig.RunSession(ctx, uniq("lone"), uniq("lone")); err != nil {
			b.Fatal(err)
		}
		mid, err := SettledActions(ctx, srv.MetricsURL())
		if err != nil {
			b.Fatal(err)
		}
		rig.Model.Delegate = treeChildren
		start := time.Now()
		run, err := rig.StartSessionWith(ctx, uniq("tree"), uniq("tree"), tree)
		if err != nil {
			b.Fatal(err)
		}
		var sum contract.Summary
		if err := run.Get(ctx, &sum); err != nil || sum.Status != contract.StatusCompleted {
			b.Fatalf("the tree's parent: %v, %+v", err, sum)
		}
		d := time.Since(start)
		after, err := SettledActions(ctx, srv.MetricsURL())
		if err != nil {
			b.Fatal(err)
		}
		lone, whole := mid.Sub(before), after.Sub(mid)
		node := (whole.Total - lone.Total) / treeChildren
		b.Logf("lone session of %d turns: %.0f actions (%s)", actionTurns+1, lone.Total, byType(lone))
		b.Logf("parent of %d turns with %d sub-agents of %d turns each: %.0f actions for the tree (%s), tree %.1fs",
			actionTurns+1, treeChildren, actionTurns+1, whole.Total, byType(whole), d.Seconds())
		b.Logf("per sub-agent: %.1f actions, %.1f more than a lone session of the same turns", node, node-lone.Total)
		b.ReportMetric(lone.Total, "lone_actions")
		b.ReportMetric(whole.Total, "tree_actions")
		b.ReportMetric(node, "actions/sub-agent")
	}
}

// byType lists a reading's actions by type, for the log.
func byType(a Actions) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(a.ByType)) {
		out = append(out, fmt.Sprintf("%s=%.0f", k, a.ByType[k]))
	}
	return strings.Join(out, " ")
}
