package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/store"
	"github.com/keelrun/keel/internal/tools/toolspec"
)

// settleTimeout bounds recording a call's outcome, which runs even when the activity was
// cancelled: the outcome is the one fact a turn that never hears back needs.
const settleTimeout = 10 * time.Second

// ledgerKey names a call in the ledger. The turn workflow's run is the activity's own workflow
// run, so RunTool and ReadToolLedger, scheduled by the same turn, name the same entry.
func ledgerKey(ctx context.Context, session string, turn int, callID string) store.LedgerKey {
	return store.LedgerKey{SessionID: session, Turn: turn, CallID: callID, TurnRun: activity.GetInfo(ctx).WorkflowExecution.RunID}
}

// claims says whether a call is claimed before it starts: every tool that may change something
// (MCP tools, whose effects the worker cannot know, included). A read that never reports is
// answered "not run", which is true of what matters: nothing changed.
func claims(req contract.ToolRequest) bool {
	if req.Server != "" {
		return true
	}
	spec, ok := toolspec.Lookup(toolspec.Builtin(), req.Call.Name)
	return !ok || spec.Writes
}

// claim records the call before it starts. false means it must not start: the store could not
// take the claim, and a call nobody can account for later might be reported wrongly.
func (a *Activities) claim(ctx context.Context, key store.LedgerKey, req contract.ToolRequest) bool {
	if a.Store == nil || !claims(req) {
		return true
	}
	err := a.Store.Claim(ctx, key)
	switch {
	case errors.Is(err, store.ErrResolved):
		activity.GetLogger(ctx).Warn("tool call not run: its turn already answered it as never started", "tool", req.Call.Name, "call", req.Call.ID)
		return false
	case err != nil:
		activity.GetLogger(ctx).Warn("tool call not run: its claim could not be recorded in the ledger", "tool", req.Call.Name, "call", req.Call.ID, "error", err)
		return false
	}
	return true
}

// settle records how the call ended, before the activity reports, so a turn that never receives
// the report (a lost completion, a dead worker) still learns the real result. It returns false
// when the turn has already answered the call from the ledger: the result is kept there, but the
// model was told otherwise, so it is not posted as the call's result.
//
// The outcome is never recorded as shown: the call's tool_result event reaches watchers only in
// the activity's completion, so a turn that answers the call from the ledger (the completion was
// lost) shows the result itself.
//
// A read run as a local activity records nothing: its turn never asks the ledger about it, since
// a worker lost mid-read makes the turn run the read again.
func (a *Activities) settle(ctx context.Context, key store.LedgerKey, req contract.ToolRequest, res contract.ToolResult) bool {
	if a.Store == nil || activity.GetInfo(ctx).IsLocalActivity {
		return true
	}
	ctx2, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	resolved, err := a.Store.Settle(ctx2, key, store.Outcome{Result: res})
	if err != nil {
		activity.GetLogger(ctx).Warn("the outcome of a tool call could not be recorded in the ledger; if its completion is lost too, the call is reported as outcome unknown",
			"tool", req.Call.Name, "call", req.Call.ID, "error", err)
	}
	if resolved {
		activity.GetLogger(ctx).Warn("a tool call ended after its turn had answered it as outcome unknown; its result is kept in the ledger, not posted",
			"tool", req.Call.Name, "call", req.Call.ID)
	}
	return !resolved
}

// ReadToolLedger answers for a tool call whose activity never reported: its recorded outcome, or
// whether it was ever claimed. Without an outcome the call is resolved as it reads (store.Ledger's
// Resolve), so an activity still alive cannot start the tool or post a result the model was not
// given. Resolving again reads the same, so Temporal may retry it.
func (a *Activities) ReadToolLedger(ctx context.Context, req contract.LedgerRequest) (contract.LedgerAnswer, error) {
	if a.Store == nil {
		return contract.LedgerAnswer{Verdict: contract.LedgerUnknown}, nil
	}
	e, err := a.Store.Resolve(ctx, ledgerKey(ctx, req.SessionID, req.Turn, req.CallID))
	if err != nil {
		return contract.LedgerAnswer{}, fmt.Errorf("reading the ledger for tool call %s: %w", req.CallID, err)
	}
	ans := contract.LedgerAnswer{Verdict: e.Verdict()}
	if e.Outcome != nil {
		ans.Result, ans.Shown = e.Outcome.Result, e.Outcome.Shown
	}
	activity.GetLogger(ctx).Warn("a tool call's activity never reported; answered from the ledger", "call", req.CallID, "turn", req.Turn, "verdict", ans.Verdict)
	return ans, nil
}
