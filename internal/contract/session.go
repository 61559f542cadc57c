package contract

import (
	"fmt"
	"time"

	"github.com/keelrun/keel/internal/textfmt"
)

// SessionInput starts one AgentSession. It is also the state carried across continue-as-new and
// into a fork, through Carry.
type SessionInput struct {
	Task         string `json:"task"`
	SystemPrompt string `json:"system_prompt,omitempty"`
	// Settings are what every turn of the session is run with.
	Settings
	Limits Limits `json:"limits"`
	// Escalation configures deadlines and the default action of escalations.
	Escalation EscalationPolicy `json:"escalation"`
	// GitHub is the pull request the session works on, if any (see GitHubContext).
	GitHub *GitHubContext `json:"github,omitempty"`
	// TurnsPerRun, when set, continues the session as new after that many turns in one run, on top
	// of whenever the server suggests it; it keeps every run's history small and bounded.
	TurnsPerRun int `json:"turns_per_run,omitempty"`
	// Goal, when set, keeps the session going until its check passes (goal mode): a final answer
	// is not the end until the check says so.
	Goal *Goal `json:"goal,omitempty"`
	// Delegation is set when a delegate call started the session: its place in the tree.
	Delegation *Delegation `json:"delegation,omitempty"`
	// Carry is the state of an earlier run (continue-as-new) or of a forked session.
	Carry *SessionState `json:"carry,omitempty"`
	// Watchers are the leases on the session's live events: the starter that starts the session
	// and follows it asks for one here (Watch.Lease), and a run carries the running ones to the
	// next (Watch.Until).
	Watchers []Watch `json:"watchers,omitempty"`
}

// SessionState is what a session knows between turns. It is small by design: the transcript lives
// in the message store and only its head travels here.
type SessionState struct {
	TranscriptRef
	Turns     int       `json:"turns"`
	Usage     Usage     `json:"usage"`
	Counters  Counters  `json:"counters"`
	StartedAt time.Time `json:"started_at"`
	// Guards carry repeat detection, repair counts and the circuit breakers from turn to turn and
	// across continue-as-new, so a model that spins cannot escape by outliving a run.
	Guards
	// Events are the most recent session-level events; EventSeq numbers them across runs.
	Events   []Event `json:"events,omitempty"`
	EventSeq int     `json:"event_seq,omitempty"`
	// Tools are the tools offered to the model: the built-in ones and those of the MCP servers,
	// listed once when the session starts.
	Tools []ToolSpec `json:"tools,omitempty"`
	// Inbox holds messages people sent (the say update or signal) that no model call has seen yet;
	// the next turn that calls the model takes them. SaySeq numbers them across runs.
	Inbox  []Message `json:"inbox,omitempty"`
	SaySeq int       `json:"say_seq,omitempty"`
	// Compaction is what the model sees of the transcript once its oldest turns were summarised
	// (limits.context_tokens); nil until then. LastInput is the input tokens the provider reported
	// for the last model call, which decides when to compact; CompactAt is the turn count before
	// which no compaction is tried again.
	Compaction *Compaction `json:"compaction,omitempty"`
	LastInput  int64       `json:"last_input,omitempty"`
	CompactAt  int         `json:"compact_at,omitempty"`
	// Checks counts the goal checks run; CheckFails is how many times in a row the last check
	// failed the same way, and CheckFailure a digest of that failure's output.
	Checks       int    `json:"checks,omitempty"`
	CheckFails   int    `json:"check_fails,omitempty"`
	CheckFailure string `json:"check_failure,omitempty"`
	// Waits counts the usage-limit waits, WaitedMS their total time.
	Waits    int   `json:"waits,omitempty"`
	WaitedMS int64 `json:"waited_ms,omitempty"`
	// ModelTokens are the tokens used per model that answered (provider/model).
	ModelTokens map[string]int64 `json:"model_tokens,omitempty"`
	// Tree is what the session's sub-agents spent, charged to it as they went.
	Tree TreeUsage `json:"tree,omitzero"`
}

// Goal is a session's goal: a check command whose exit status says whether the task is done.
type Goal struct {
	// Check is a command run as run_command runs one, in the work directory and under the
	// session's tool policy; exit status 0 means done.
	Check string `json:"check"`
	// Repeats is how many times in a row the same failure may come back before a person is asked;
	// 0 means DefaultGoalRepeats.
	Repeats int `json:"repeats,omitempty"`
}

// DefaultGoalRepeats is how many identical check failures in a row escalate.
const DefaultGoalRepeats = 3

// UsageWait is a session waiting for a provider's usage limit to reset.
type UsageWait struct {
	// Reason is what the provider said, one line.
	Reason string    `json:"reason"`
	Since  time.Time `json:"since"`
	Until  time.Time `json:"until"`
}

// MaxKeptEvents bounds the session-level events a session keeps for its status query.
const MaxKeptEvents = 200

// Counters are the running totals that end up in the summary.
type Counters struct {
	ToolCalls       int `json:"tool_calls,omitempty"`
	BlockedCalls    int `json:"blocked_calls,omitempty"`
	GatewayCalls    int `json:"gateway_calls,omitempty"`
	GatewayAttempts int `json:"gateway_attempts,omitempty"`
	// FallbackCalls counts model calls a fallback model answered because the primary was down.
	FallbackCalls int `json:"fallback_calls,omitempty"`
	// Compactions counts the transcript compactions; CompactionTokens are the tokens their model
	// calls used (also part of the usage).
	Compactions      int   `json:"compactions,omitempty"`
	CompactionTokens int64 `json:"compaction_tokens,omitempty"`
	// ReconciledCalls counts tool calls whose activity never reported (timed out, lost its worker
	// or its completion) and whose answer came from the ledger of side effects instead.
	ReconciledCalls int `json:"reconciled_calls,omitempty"`
}

// Add returns the sum of two counter sets.
func (c Counters) Add(o Counters) Counters {
	return Counters{
		ToolCalls:       c.ToolCalls + o.ToolCalls,
		BlockedCalls:    c.BlockedCalls + o.BlockedCalls,
		GatewayCalls:    c.GatewayCalls + o.GatewayCalls,
		GatewayAttempts: c.GatewayAttempts + o.GatewayAttempts,
		FallbackCalls:   c.FallbackCalls + o.FallbackCalls,

		Compactions:      c.Compactions + o.Compactions,
		CompactionTokens: c.CompactionTokens + o.CompactionTokens,
		ReconciledCalls:  c.ReconciledCalls + o.ReconciledCalls,
	}
}

// Summary is the result of an AgentSession and the closing `summary` event of the starter.
type Summary struct {
	Status          string `json:"status"`
	WorkflowID      string `json:"workflow_id"`
	RunID           string `json:"run_id"`
	Turns           int    `json:"turns"`
	ToolCalls       int    `json:"tool_calls"`
	BlockedCalls    int    `json:"blocked_calls"`
	GatewayCalls    int    `json:"gateway_calls"`
	GatewayAttempts int    `json:"gateway_attempts"`
	// FallbackCalls counts model calls a fallback model answered (gateway.fallbacks).
	FallbackCalls int `json:"fallback_calls"`
	// Compactions counts the transcript compactions (limits.context_tokens); CompactionTokens are
	// the tokens their model calls used, part of Tokens.
	Compactions      int   `json:"compactions"`
	CompactionTokens int64 `json:"compaction_tokens"`
	// ReconciledCalls counts the tool calls answered from the ledger of side effects because their
	// activity never reported (see Counters.ReconciledCalls).
	ReconciledCalls int   `json:"reconciled_calls"`
	Tokens          int64 `json:"tokens"`
	// CachedTokens are the input tokens read from the provider's prompt cache, part of Tokens.
	CachedTokens int64 `json:"cached_tokens"`
	// Usage splits Tokens into input and output.
	Usage  Usage  `json:"usage"`
	Limit  string `json:"limit,omitempty"`
	Reason string `json:"reason,omitempty"`
	Answer string `json:"answer,omitempty"`
	// Class is the failure class when a failure was surfaced.
	Class string `json:"class,omitempty"`
	// Checks counts the goal checks run; Waits and WaitedMS the usage-limit waits and their time;
	// ModelTokens the tokens per model that answered.
	Checks      int              `json:"checks,omitempty"`
	Waits       int              `json:"waits,omitempty"`
	WaitedMS    int64            `json:"waited_ms,omitempty"`
	ModelTokens map[string]int64 `json:"model_tokens,omitempty"`
	// Allowed are the calls people allowed for the rest of the session at its approvals.
	Allowed []Allowance `json:"allowed,omitempty"`
	// Changes are the files the session created, changed or deleted in its work directory, and
	// which of them git would not show; nil when the session has no work directory or ended
	// before Keel listed them.
	Changes *Changes `json:"changes,omitempty"`
	// Branch is where the session's changes were pushed, or why they were not; nil when the
	// session did not run in a workspace made from git (contract.Source).
	Branch *Branch `json:"branch,omitempty"`
	// Transcript and Events let `starter watch`, `fork` and Slack's status read an ended session
	// from its history and the store, with no worker to answer a query. The starter does not print
	// them in the summary line.
	Transcript *Transcript `json:"transcript,omitempty"`
	Events     []Event     `json:"events,omitempty"`
}

// SessionStatus answers the status query: enough for a terminal, the Slack bot or a dashboard to
// show where a session is without reading its history.
type SessionStatus struct {
	Status string `json:"status"`
	// Turn is how many turns are done; Running is the turn in flight (0 when none runs).
	Turn       int         `json:"turn"`
	Running    int         `json:"running,omitempty"`
	Usage      Usage       `json:"usage"`
	Counters   Counters    `json:"counters"`
	Limits     Limits      `json:"limits"`
	Escalation *Escalation `json:"escalation,omitempty"`
	// Approval is the tool call waiting for a person's approval, if any.
	Approval *Approval `json:"approval,omitempty"`
	// Wait is the usage limit the session waits for, if any (StatusWaitingReset).
	Wait *UsageWait `json:"wait,omitempty"`
	// Events are the session-level events so far (blocked calls, limits, escalations), numbered so
	// a poller can ask for what is new.
	Events []Event `json:"events,omitempty"`
}

// Transcript answers the transcript query: the store head plus messages not yet stored.
type Transcript struct {
	Head    string    `json:"head"`
	Pending []Message `json:"pending,omitempty"`
}

// CancelRequest is the payload of the cancel signal.
type CancelRequest struct {
	Reason string `json:"reason,omitempty"`
	By     string `json:"by,omitempty"`
}

// AttachSink is the payload of the attach_sink signal, which starters sent before the watch
// signal (SignalWatch); a session takes it and does nothing with it.
type AttachSink struct {
	URL string `json:"url"`
}

// DefaultHeartbeatTimeout is a session's heartbeat timeout when its input sets none: a worker
// that died mid-call is noticed within it (between two thirds of it and all of it after the
// kill). Running calls beat every 15 s, so it leaves two beats to spare on a busy machine;
// shorter ones beat more often (docs/operations.md measures the trade).
const DefaultHeartbeatTimeout = 45 * time.Second

// Text says what the session waits for in the words of the status line and `starter list`:
// "waiting for the usage limit to reset at 14:05, 2h 13m", the time in loc.
func (w UsageWait) Text(now time.Time, loc *time.Location) string {
	return fmt.Sprintf("waiting for the usage limit to reset at %s, %s", w.Until.In(loc).Format("15:04"), textfmt.Duration(w.Until.Sub(now)))
}
