//go:build keel_drill_b

package main

import (
	"go.temporal.io/sdk/workflow"

	"github.com/keelrun/keel/internal/app"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/tools/toolspec"
	"github.com/keelrun/keel/workflows"
)

// NextBuildMemo is the memo key the second build's session change sets, and NextBuildChange
// the version marker that guards it: a session started on the first build replays on this one
// without it, a session started here records it.
const (
	NextBuildMemo   = "keel-drill-build"
	NextBuildChange = "drill-next-build"
)

// nextBuild makes this the deploy drill's second build: every built-in tool reworded (a release
// that changes tool text) and a session workflow change behind workflow.GetVersion.
func nextBuild(w *app.Wiring) {
	specs := toolspec.Builtin()
	for i := range specs {
		specs[i].Description += " (next build)"
	}
	toolspec.OverrideBuiltin(specs)
	w.Session = session
}

// session is Keel's session with one change of the kind a release makes inside a session's
// lifetime: new sessions record a memo, sessions already running take the old path.
func session(ctx workflow.Context, in contract.SessionInput) (contract.Summary, error) {
	if workflow.GetVersion(ctx, NextBuildChange, workflow.DefaultVersion, 1) == 1 {
		if err := workflow.UpsertMemo(ctx, map[string]any{NextBuildMemo: "b"}); err != nil {
			return contract.Summary{}, err
		}
	}
	return workflows.AgentSession(ctx, in)
}
