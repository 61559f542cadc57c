package workflows

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/metrics/record"
)

// checkLimits is the limits ledger's check before a turn: turns and tokens. The duration limit is
// a timer raced against the turn (see runTurn), so it also stops a turn that hangs.
func (s *session) checkLimits(ctx workflow.Context) (contract.Summary, bool) {
	l := s.in.Limits
	if l.MaxTurns > 0 && s.state.Turns+s.state.Tree.Turns >= l.MaxTurns {
		return s.limitSummary(ctx, contract.LimitTurns), true
	}
	if l.MaxTokens > 0 && s.state.Usage.Total()+s.state.Tree.Tokens >= l.MaxTokens {
		return s.limitSummary(ctx, contract.LimitTokens), true
	}
	return contract.Summary{}, false
}

// limitText says which limit stopped the session and its numbers.
func (s *session) limitText(ctx workflow.Context, limit string) string {
	l := s.in.Limits
	switch limit {
	case contract.LimitTurns:
		return fmt.Sprintf("stopped: %d of %d turns used", s.state.Turns+s.state.Tree.Turns, l.MaxTurns) + s.treeText(int64(s.state.Tree.Turns), "turns")
	case contract.LimitTokens:
		return fmt.Sprintf("stopped: %d of %d tokens used", s.state.Usage.Total()+s.state.Tree.Tokens, l.MaxTokens) + s.treeText(s.state.Tree.Tokens, "tokens")
	default:
		used := workflow.Now(ctx).Sub(s.state.StartedAt).Round(100_000_000)
		return fmt.Sprintf("stopped: %s of %s used", used, l.MaxDuration)
	}
}

// limitSummary ends the session on a limit: the user is told which one, and a record goes into the
// transcript so a later turn or a resumed session knows why the last one stopped.
func (s *session) limitSummary(ctx workflow.Context, limit string) contract.Summary {
	text := s.limitText(ctx, limit)
	s.state.Pending = append(s.state.Pending, contract.Message{
		Role: contract.RoleUser, Note: "limit", Content: "[keel] " + text + ". The session ended here.",
	})
	s.addEvent(ctx, contract.Event{Event: contract.EventLimit, Limit: limit, Text: text, Turn: s.state.Turns})
	record.LimitTripped(workflow.GetMetricsHandler(ctx), limit)
	sum := s.summary(ctx, contract.StatusLimit, "")
	sum.Limit = limit
	sum.Reason = text
	return sum
}

// cancelledSummary ends a cancelled session, keeping the text the user had already seen.
func (s *session) cancelledSummary(ctx workflow.Context, partial string) contract.Summary {
	sum := s.summary(ctx, contract.StatusCancelled, partial)
	sum.Reason = "cancelled by the user"
	if r := s.cancelReq; r != nil && r.Reason != "" {
		sum.Reason = "cancelled: " + r.Reason
	}
	if partial != "" {
		s.state.Pending = append(s.state.Pending, contract.Message{Role: contract.RoleAssistant, Content: partial, Note: "partial"})
	}
	s.state.Pending = append(s.state.Pending, contract.Message{
		Role: contract.RoleUser, Note: "cancelled", Content: "[keel] " + sum.Reason + ". The session ended here.",
	})
	return sum
}

func (s *session) failedSummary(ctx workflow.Context, f *contract.Failure) contract.Summary {
	sum := s.summary(ctx, contract.StatusFailed, f.Partial)
	sum.Reason = f.Reason
	sum.Class = f.Class
	return sum
}

func (s *session) summary(ctx workflow.Context, status, answer string) contract.Summary {
	info := workflow.GetInfo(ctx)
	c := s.state.Counters
	return contract.Summary{
		Status:           status,
		WorkflowID:       info.WorkflowExecution.ID,
		RunID:            info.WorkflowExecution.RunID,
		Turns:            s.state.Turns,
		ToolCalls:        c.ToolCalls,
		BlockedCalls:     c.BlockedCalls,
		GatewayCalls:     c.GatewayCalls,
		GatewayAttempts:  c.GatewayAttempts,
		FallbackCalls:    c.FallbackCalls,
		Compactions:      c.Compactions,
		CompactionTokens: c.CompactionTokens,
		ReconciledCalls:  c.ReconciledCalls,
		CachedTokens:     s.state.Usage.CachedTokens,
		Tokens:           s.state.Usage.Total(),
		Usage:            s.state.Usage,
		Answer:           answer,
		Checks:           s.state.Checks,
		Waits:            s.state.Waits,
		WaitedMS:         s.state.WaitedMS,
		ModelTokens:      s.state.ModelTokens,
		Allowed:          s.state.Allowed,
	}
}

// setDetails keeps the Web UI's current details readable: state, turns, tokens.
func (s *session) setDetails(ctx workflow.Context, state string) {
	workflow.SetCurrentDetails(ctx, s.details(state))
}

// setWaitingDetails is setDetails plus how to answer, while the session waits on a person.
func (s *session) setWaitingDetails(ctx workflow.Context, state, help string) {
	workflow.SetCurrentDetails(ctx, s.details(state)+"\n\n"+help)
}

func (s *session) details(state string) string {
	return fmt.Sprintf("**%s**\n\nturns: %d · tokens: %d · tool calls: %d · model attempts: %d",
		state, s.state.Turns, s.state.Usage.Total(), s.state.Counters.ToolCalls, s.state.Counters.GatewayAttempts)
}

// searchRefreshTurns is how many turns the KeelTurns and KeelTokens search attributes may lag:
// an upsert is a billed action, so a running session refreshes them every this many turns, and
// at once whenever its status or pending escalation changes (which also ends every session).
const searchRefreshTurns = 10

// searchKey is what decides whether an upsert is worth its action.
type searchKey struct {
	status  string
	pending bool
	bucket  int
}

func (s *session) searchKey() searchKey {
	return searchKey{status: s.status, pending: s.status == contract.StatusWaiting, bucket: s.state.Turns / searchRefreshTurns}
}

// initSearchKey starts from the search attributes the run already has (KeelStatus set when the
// session was started), so the first turn's upsert is skipped when it would change nothing that
// matters. Runs that recorded run-start take search-on-change without a marker; older runs ask it
// here, in their first workflow task; sessions started before it upsert after every turn, and
// their histories replay.
func (s *session) initSearchKey(ctx workflow.Context) {
	s.searchOnChange = s.takes(ctx, versionSearchOnChange)
	status, _ := workflow.GetTypedSearchAttributes(ctx).GetKeyword(contract.StatusKey)
	s.lastSearch = searchKey{status: status, pending: status == contract.StatusWaiting, bucket: s.state.Turns / searchRefreshTurns}
}

// searchValues are the session's search attribute values.
type searchValues struct {
	status        string
	turns, tokens int64
	waiting       bool
}

// upsertSearch upserts the search attributes that changed since this run last did, all of them
// the first time, and only when something a person filters on changed (searchRefreshTurns).
// Unchanged ones are left out because every byte is paid in every turn's history; the turn count
// is always sent. Sessions started before versionSearchOnChange upsert after every turn, so
// their histories replay.
func (s *session) upsertSearch(ctx workflow.Context) {
	k := s.searchKey()
	if s.searchOnChange && k == s.lastSearch {
		return
	}
	s.lastSearch = k
	now := searchValues{status: s.status, turns: int64(s.state.Turns), tokens: s.state.Usage.Total(), waiting: s.status == contract.StatusWaiting}
	last := s.searched
	updates := []temporal.SearchAttributeUpdate{contract.TurnsKey.ValueSet(now.turns)}
	if last == nil || last.status != now.status {
		updates = append(updates, contract.StatusKey.ValueSet(now.status))
	}
	if last == nil || last.tokens != now.tokens {
		updates = append(updates, contract.TokensKey.ValueSet(now.tokens))
	}
	if last == nil || last.waiting != now.waiting {
		updates = append(updates, contract.PendingEscalationKey.ValueSet(now.waiting))
	}
	s.searched = &now
	_ = workflow.UpsertTypedSearchAttributes(ctx, updates...)
}
