package contract

import (
	"time"
)

// TurnInput is the input of one AgentTurn child workflow.
type TurnInput struct {
	SessionID string `json:"session_id"`
	Turn      int    `json:"turn"`
	// TranscriptRef is where the transcript stands as the turn starts.
	TranscriptRef
	// BuiltinTools, when set, is the digest of a released set of built-in tools (toolspec's released
	// sets, which every worker carries, older ones included), and Tools holds only the tools after
	// them (those of MCP servers): the tool list travels by digest as the transcript travels by head.
	// Empty means Tools is the whole list.
	BuiltinTools string     `json:"builtin_tools,omitempty"`
	Tools        []ToolSpec `json:"tools,omitempty"`
	// Settings are the session's SessionInput.Settings.
	Settings
	// Guards are the session's, as the last turn left them.
	Guards
	// Resume continues a turn that stopped for an approval: these calls are taken through the gates
	// again without a new model call, and Approved holds the person's decision on the first one.
	Resume   []ToolCall        `json:"resume,omitempty"`
	Approved *ApprovalDecision `json:"approved,omitempty"`
	// Compaction is the session's view of a compacted transcript, passed on to the model call.
	Compaction *Compaction `json:"compaction,omitempty"`
	// Status is the session's status as the turn starts, with only the events since the last
	// turn's; the model call makes it its first live event, so followers need not query.
	Status *SessionStatus `json:"status,omitempty"`
	// Watched says a watcher held a lease on the session's live events as the turn started
	// (SignalWatch): its activities then heartbeat their recent events at events.interval.
	Watched bool `json:"watched,omitempty"`
	// LocalReads says the turn runs the tools that only read as local activities (decided by the
	// session's version markers once per run, so that its turns record no marker of their own).
	LocalReads bool `json:"local_reads,omitempty"`
	// Delegate is set while the session may start sub-agents (the delegate tool).
	Delegate *DelegateContext `json:"delegate,omitempty"`
}

// RepairCap is how many argument repairs a tool gets before the session escalates.
const RepairCap = 3

// RepeatState is the consecutive-identical-call counter.
type RepeatState struct {
	Key   string `json:"key,omitempty"`
	Count int    `json:"count,omitempty"`
}

// TurnResult is the output of one AgentTurn.
type TurnResult struct {
	// Transcript is where the turn left the transcript: its head, always written (recorded
	// histories hold "head" even when it is empty), and the messages not stored yet.
	Transcript
	// Final is true when the model answered without tool calls; Answer holds that answer.
	Final    bool     `json:"final,omitempty"`
	Answer   string   `json:"answer,omitempty"`
	Usage    Usage    `json:"usage"`
	Counters Counters `json:"counters"`
	// Model is the model that answered the turn's call (ModelResponse.Model), so the session can
	// count tokens per model.
	Model string `json:"model,omitempty"`
	// Guards are as the turn leaves them, for the next turn.
	Guards
	// Failure is set when the turn surfaced a failure it could not handle itself.
	Failure *Failure `json:"failure,omitempty"`
	// Cancelled is true when the turn stopped because it was cancelled.
	Cancelled bool `json:"cancelled,omitempty"`
	// Partial is the model text shown before the turn was cancelled; the session keeps it.
	Partial string `json:"partial,omitempty"`
	// NeedsApproval is set when a call waits for a person's approval; Resume holds it and the calls
	// after it, to be continued once the person has decided.
	NeedsApproval *Approval  `json:"needs_approval,omitempty"`
	Resume        []ToolCall `json:"resume,omitempty"`
	// Escalate is set when the turn needs a person's decision before the session can go on.
	Escalate *EscalationRequest `json:"escalate,omitempty"`
	// Events are session-level events the turn produced (blocked calls and the like).
	Events []Event `json:"events,omitempty"`
}

// Failure describes a surfaced failure: its class, what the user is told, and how many attempts
// were spent on it.
type Failure struct {
	Class    string `json:"class"`
	Reason   string `json:"reason"`
	Attempts int    `json:"attempts"`
	// Partial is text that reached the user before the failure, kept so nothing is lost.
	Partial string `json:"partial,omitempty"`
	// StrictRetryMS, when set, asks the turn to call the model again with ModelRequest.Strict
	// after this many milliseconds: a reply that did not parse gets one more attempt with the
	// stricter instruction.
	StrictRetryMS int64 `json:"strict_retry_ms,omitempty"`
	// ResetAt is when a usage limit resets (ClassUsageLimit): the session waits for it on a timer
	// and then makes the same call once more.
	ResetAt time.Time `json:"reset_at,omitzero"`
}

// ModelRequest is the input of the CallModel activity.
type ModelRequest struct {
	SessionID string    `json:"session_id"`
	Turn      int       `json:"turn"`
	Head      string    `json:"head,omitempty"`
	Append    []Message `json:"append,omitempty"`
	// BuiltinTools and Tools name the tools offered, as in TurnInput.
	BuiltinTools string     `json:"builtin_tools,omitempty"`
	Tools        []ToolSpec `json:"tools,omitempty"`
	// ModelSettings are the session's: its model, the endpoint that is this call's primary route
	// (before the worker's fallbacks; nil is the worker's own gateway), and the backoff.
	ModelSettings
	Sinks []string `json:"sinks,omitempty"`
	// Strict adds StrictInstruction because the previous reply could not be parsed. The turn sets
	// it when it calls again, so the flag reaches whichever worker runs the call.
	Strict bool `json:"strict,omitempty"`
	// PriorAttempts are the attempts earlier CallModel activities of this turn already spent on
	// this call; attempt numbers and caps count on from them.
	PriorAttempts int `json:"prior_attempts,omitempty"`
	// Compaction, when set, is what the model sees of the transcript instead of all of it: the
	// messages are stored and the reply appended to the full transcript as always.
	Compaction *Compaction `json:"compaction,omitempty"`
	// Status is TurnInput.Status, the call's first live event.
	Status *SessionStatus `json:"status,omitempty"`
	// Watched is TurnInput.Watched.
	Watched bool `json:"watched,omitempty"`
}

// ModelResponse is the output of the CallModel activity. The assistant message is already in the
// store under Head; it also travels here because the turn needs its tool calls.
type ModelResponse struct {
	Head    string  `json:"head"`
	Message Message `json:"message"`
	Usage   Usage   `json:"usage"`
	// Attempt is the attempt that succeeded (1 for a first-time success).
	Attempt int `json:"attempt"`
	// Model is the model that answered, as provider/model; Fallback is true when it was not the
	// primary (gateway.fallbacks). Both are in the activity's recorded result, so replay and
	// `starter attempts` show which model served each call.
	Model    string `json:"model,omitempty"`
	Fallback bool   `json:"fallback,omitempty"`
	// Live are the call's live events, for watchers (LiveEvents).
	Live *LiveEvents `json:"live,omitempty"`
}

// ToolRequest is the input of the RunTool activity.
type ToolRequest struct {
	SessionID string   `json:"session_id"`
	Turn      int      `json:"turn"`
	Call      ToolCall `json:"call"`
	// ToolSettings are the session's: the working directory and the tool policy.
	ToolSettings
	Sinks []string `json:"sinks,omitempty"`
	// Watched is TurnInput.Watched.
	Watched bool `json:"watched,omitempty"`
	// Server is the MCP server for MCP tools; empty for built-in tools.
	Server string `json:"server,omitempty"`
}

// ToolResult is the output of the RunTool activity. A tool failure is a result with IsError set and
// Content written for the model, never an activity error: tool failures are fed back, not retried.
type ToolResult struct {
	Content string `json:"content"`
	IsError bool   `json:"is_error,omitempty"`
	// Changed says whether the call changed anything in the world.
	Changed bool `json:"changed,omitempty"`
	// Fatal marks a domain error the model cannot fix (unauthorized, merge conflict): it escalates.
	Fatal bool `json:"fatal,omitempty"`
	// Live are the call's live events, for watchers (LiveEvents).
	Live *LiveEvents `json:"live,omitempty"`
}

// Failure classes of a model call, as in the failure table of the design notes.
const (
	ClassTransport = "transport"
	ClassThrottle  = "throttle"
	ClassSchema    = "schema"
	ClassTruncated = "truncated"
	ClassRefusal   = "refusal"
	ClassBudget    = "budget"
	ClassUnknown   = "unknown"
	ClassCancelled = "cancelled"
	// ClassEndpoint is a session's model endpoint that the worker cannot serve (an unknown
	// provider, a base URL that does not parse, a key the worker has not declared for it): a
	// setting to fix, never retried.
	ClassEndpoint = "endpoint"
	// ClassAuth is the gateway refusing the API key (HTTP 401 or 403): a setting to fix, never
	// retried.
	ClassAuth = "auth"
	// ClassUsageLimit is a rate or usage limit whose reset lies beyond the retry cap (a 429 with a
	// long Retry-After or reset header): not retried by Temporal, but waited out by the session
	// on a durable timer (Failure.ResetAt). Only sessions that ask for it (ModelSettings.WaitLimits)
	// get this class; the others see the throttle retries they always did.
	ClassUsageLimit = "usage_limit"
)

// ModelErrorType is the ApplicationError type of every CallModel failure; its details hold a Failure.
const ModelErrorType = "ModelCallFailed"

// StrictInstruction is added to a model call that follows a reply which could not be parsed, so
// the second attempt asks the model for the exact format.
const StrictInstruction = "Your previous reply could not be parsed. Reply again using only plain text and well-formed tool calls whose arguments are valid JSON objects."

// PersonPrefix starts a user message that carries a person's instruction into the transcript (an
// escalation answered with edit), so the model can tell it apart from the original task.
const PersonPrefix = "[person] "

// TurnStep is what a turn runs now, for a terminal that attaches mid-turn: the model call (Tool
// empty) or one tool call, since when.
type TurnStep struct {
	Turn      int       `json:"turn"`
	Tool      string    `json:"tool,omitempty"`
	CallID    string    `json:"call_id,omitempty"`
	Arguments string    `json:"arguments,omitempty"`
	Since     time.Time `json:"since"`
}
