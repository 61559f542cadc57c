package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/keelrun/keel/internal/contract"
)

// shouldCompact says whether the context window is nearly full and there may be enough old
// turns to fold (contract.CompactionDue).
func (s *session) shouldCompact() bool {
	return s.state.Head != "" && contract.CompactionDue(s.in.Limits.ContextTokens, s.state.LastInput, s.state.Turns, s.state.CompactAt)
}

// compact folds the oldest turns into a summary when the context window is nearly full, before the
// next turn. It returns whether it ran, so the caller checks the limits, the deadline and a cancel
// again. A compaction that fails is reported and skipped: the session goes on with the whole
// transcript, and the next model call fails on its own if it no longer fits.
func (s *session) compact(ctx workflow.Context, deadline workflow.Future) bool {
	if !s.shouldCompact() || !s.takes(ctx, versionCompaction) {
		return false
	}
	s.state.CompactAt = s.state.Turns + contract.CompactEveryTurns
	s.setDetails(ctx, fmt.Sprintf("compacting the transcript after turn %d", s.state.Turns))
	cctx, cancel := workflow.WithCancel(ctx)
	s.cancelTurn = cancel
	defer func() { s.cancelTurn = nil }()
	req := contract.CompactRequest{
		SessionID: workflow.GetInfo(ctx).WorkflowExecution.ID, Turn: s.state.Turns, Head: s.state.Head,
		Compaction: s.state.Compaction, KeepReplies: contract.CompactKeepReplies, MinReplies: contract.CompactMinReplies,
		ModelSettings: s.in.ModelSettings,
	}
	fut := workflow.ExecuteActivity(workflow.WithActivityOptions(cctx, compactOptions(s.state.Turns, s.in.HeartbeatTimeout.Std())), contract.CompactActivity, req)
	if deadline != nil {
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(fut, func(workflow.Future) {})
		sel.AddFuture(deadline, func(workflow.Future) { cancel() })
		sel.Select(ctx)
	}
	var res contract.CompactResult
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	err := fut.Get(dctx, &res)
	switch {
	case err != nil && (isCanceled(err) || ctx.Err() != nil || s.cancelReq != nil):
		return true
	case err != nil:
		f := modelFailure(err)
		s.addEvent(ctx, contract.Event{Event: contract.EventNotice, Turn: s.state.Turns, Class: f.Class,
			Text: "the transcript could not be compacted (" + f.Reason + "); the session goes on with all of it"})
		return true
	case res.Compaction == nil:
		return true
	}
	s.state.Compaction = res.Compaction
	s.state.Usage = s.state.Usage.Add(res.Usage)
	s.state.Counters.Compactions++
	s.state.Counters.CompactionTokens += res.Usage.Total()
	if res.Fallback {
		s.state.Counters.FallbackCalls++
	}
	s.addEvent(ctx, contract.Event{
		Event: contract.EventCompaction, Turn: s.state.Turns, Tokens: res.Usage.Total(), SavedTokens: res.SavedTokens,
		Text: fmt.Sprintf("the first %d model replies and their tool results are summarised for later model calls (the full transcript is kept): the summary took %d tokens and saves about %d input tokens a call",
			res.Replies, res.Usage.Total(), res.SavedTokens),
	})
	return true
}

// compactOptions are a model call's options: the activity decides its retries as CallModel does.
func compactOptions(turn int, hb time.Duration) workflow.ActivityOptions {
	o := modelCallOptions(turn, hb)
	o.Summary = fmt.Sprintf("compaction after turn %d", turn)
	return o
}
