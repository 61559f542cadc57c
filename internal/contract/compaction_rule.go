package contract

// Compaction's rules (docs/architecture.md, "Compaction"), shared by the session workflow that
// decides and the benchmark that measures what deciding so saves.
const (
	// CompactPercent is how full the context window (limits.context_tokens) may get, as the input
	// tokens the provider reported for the last model call, before the oldest turns are folded.
	CompactPercent = 80
	// CompactKeepReplies is how many of the newest model replies, with their tool results, every
	// compaction keeps as they are.
	CompactKeepReplies = 2
	// CompactMinReplies is the fewest model replies worth a summary.
	CompactMinReplies = 2
	// CompactEveryTurns is how many turns pass after a compaction, or an attempt that folded
	// nothing or failed, before the next is tried.
	CompactEveryTurns = 2
)

// CompactionDue says whether a session with context window window, whose last model call took
// lastInput input tokens, should compact after turns turns; compactAt is the turn count before
// which no compaction is tried again (SessionState.CompactAt).
func CompactionDue(window, lastInput int64, turns, compactAt int) bool {
	return window > 0 && lastInput*100 >= window*CompactPercent &&
		turns >= max(compactAt, CompactKeepReplies+CompactMinReplies)
}
