package workflows

import "go.temporal.io/sdk/workflow"

// The version markers of every change to what a running session or turn does, in one place (see
// CONTRIBUTING, "What changes running sessions", and docs/operations.md, "Versioning"). Each is a
// workflow.GetVersion change ID that recorded histories carry, so a name is never reused or
// changed; the histories in testdata/histories recorded before a marker are what
// TestReplayRecordedHistories replays to prove the old path still runs. A new marker goes here,
// with its comment saying what a session takes on at it and which sessions never meet it.
const (
	// versionListTools: a session lists its tools (built-in and MCP) in an activity at its start.
	versionListTools = "list-tools"
	// versionStrictRetry: the turn, not a worker's memory, retries a reply that did not parse.
	versionStrictRetry = "strict-retry"
	// versionSearchOnChange: search attributes are upserted only when something a person filters
	// on changed, not after every turn.
	versionSearchOnChange = "search-on-change"
	// versionToolLedger: a turn answers a tool activity that never reported from the ledger of
	// side effects (its outcome, "not run" or "outcome unknown") rather than always "outcome
	// unknown".
	versionToolLedger = "tool-ledger"
	// versionTypedEnds: a session that did not complete ends Canceled or Failed (with a typed
	// error carrying the summary) rather than Completed.
	versionTypedEnds = "typed-ends"
	// versionCompaction: a session compacts its transcript. Only a session whose input sets
	// limits.context_tokens asks for it, so histories without compaction never meet it.
	versionCompaction = "compaction"
	// versionSay delivers queued messages to the next model call and keeps a session going when a
	// message arrived with its final answer. Reached only once a person has sent a message.
	versionSay = "say"
	// versionKeepInterrupted makes a turn cancelled during its tool calls return what it has (the
	// model's tool calls and the results so far) rather than a cancellation error, so an
	// interrupted turn stays in the transcript. Reached only once a person has sent a message.
	versionKeepInterrupted = "keep-interrupted-turn"
	// versionUsageWait: the session asks its model calls to report a usage limit beyond the retry
	// cap (ModelSettings.WaitLimits) and waits for its reset on a timer (docs/failure-handling.md).
	// Asked for in the run's first workflow task; a session started without it keeps the
	// activity's long retry.
	versionUsageWait = "usage-wait"
	// versionGoal: a final answer of a session with a goal runs the goal's check. Only sessions
	// with a goal ask, and only at their first final answer.
	versionGoal = "goal"
	// versionDelegate: a turn runs a delegate call as a child session. Asked only when a turn
	// meets such a call, so turns without one record nothing.
	versionDelegate = "delegate"
	// versionReviewChanges: an ending session's summary lists the files it changed and those git
	// would not show (the ReviewChanges activity). Asked once, when a session ends.
	versionReviewChanges = "review-changes"
	// versionDenyReason: a denied call's feedback carries the reason the person gave. Asked only
	// when a decision has a reason, which no turn from before it had.
	versionDenyReason = "deny-reason"
	// versionAllowSession: an approval may allow the tool, or run_command's exact command, for
	// the rest of the session; later calls it covers run without asking. Asked only when a
	// decision allows more than its call, which no decision from before it did.
	versionAllowSession = "allow-session"
	// versionPushBranch: an ending session that ran in a workspace made from git pushes its
	// changes as the branch keel/<session> (the PushBranch activity). Asked once, when such a
	// session ends; sessions on a directory of their own and sub-agents never ask.
	versionPushBranch = "push-branch"
	// versionLiveWatch: a session keeps the leases watchers take with the watch signal (or its
	// starter in its input) and tells each turn whether it is watched, so the turn's activities
	// heartbeat their live events. Asked at a session's first lease; unwatched sessions never
	// ask, and a session from before it ignores the signal.
	versionLiveWatch = "live-watch"
	// versionLocalReads: a built-in tool that only reads (read_file, list_dir, search) runs as a
	// local activity in the turn's workflow task, its result recorded in a marker, not as an
	// activity of its own. Asked in the run's first workflow task and passed to every turn
	// (TurnInput.LocalReads): a marker in each turn would cost each an upsert of the
	// TemporalChangeVersion search attribute, which the SDK makes with every new marker.
	versionLocalReads = "local-reads"
	// versionRunStart: one marker in a run's first workflow task stands for every change a session
	// asks through session.takes: a run that recorded it asks none of their own. The SDK upserts
	// the TemporalChangeVersion search attribute with each new marker, a billed action, so one
	// marker a run is one upsert. Runs from before it ask each marker as they did. The next change
	// a session takes raises this marker's version, rather than adding one; the turns' changes
	// keep their own markers.
	versionRunStart = "run-start"
)

// takes says whether this run takes a session's change: a run that recorded versionRunStart does,
// with no marker of its own; a run from before it asks the change's own marker where it meets
// the change, as it always did, so its history replays.
func (s *session) takes(ctx workflow.Context, change string) bool {
	return s.runStart || workflow.GetVersion(ctx, change, workflow.DefaultVersion, 1) == 1
}
