package contract

import "time"

// Event kinds. The starter prints one JSON object per event with --output jsonl.
const (
	EventDelta      = "delta"
	EventToolCall   = "tool_call"
	EventToolResult = "tool_result"
	EventRetry      = "retry"
	EventBlocked    = "blocked"
	EventLimit      = "limit"
	EventEscalation = "escalation"
	EventApproval   = "approval"
	EventAnswer     = "answer"
	EventNotice     = "notice"
	EventSummary    = "summary"
	// EventMessage is one transcript message, as `starter watch` replays them (Class holds the role).
	EventMessage = "message"
	// EventModelCall marks the start of one model call attempt (Attempt), before its deltas.
	EventModelCall = "model_call"
	// EventOutput carries what a running command printed since the last one (Text, at most
	// OutputEventMax bytes: the end of it), at most every few hundred milliseconds. The tool
	// result has the whole kept output; these are for watching it live.
	EventOutput = "output"
	// EventCompaction says the oldest turns were summarised to keep the model's input within
	// limits.context_tokens: Tokens is what the summarising call used, SavedTokens about how many
	// input tokens every later model call is spared.
	EventCompaction = "compaction"
	// EventStatus carries the session's status (Status) to its watchers at the start of a turn's model
	// call: the session-level events since the last turn, the tokens and the turns so far. Followers
	// read it instead of querying the session, and never print it (it is not in EventKinds).
	EventStatus = "status"
	// EventCheck is one run of the goal's check: Text says how it ended and the end of its output,
	// IsError that it failed.
	EventCheck = "check"
	// EventWait says the session waits for a usage limit to reset (Text, WaitMS), or that the wait
	// is over.
	EventWait = "wait"
)

// EventKinds lists every event kind, for the documentation check.
var EventKinds = []string{
	EventNotice, EventDelta, EventToolCall, EventToolResult, EventRetry, EventBlocked, EventLimit,
	EventEscalation, EventApproval, EventAnswer, EventSay, EventMessage, EventSummary,
	EventModelCall, EventOutput, EventCompaction, EventCheck, EventWait,
}

// OutputEventMax bounds the text of one output event.
const OutputEventMax = 2 << 10

// Event is one thing that happened in a session, for the user's terminal. Activities publish live
// events (internal/events); session-level events are also kept in the session's status.
type Event struct {
	Event      string `json:"event"`
	Seq        int    `json:"seq,omitempty"`
	WorkflowID string `json:"workflow_id,omitempty"`
	Turn       int    `json:"turn,omitempty"`
	// Text is the delta text, the tool result, or the line to print.
	Text string `json:"text,omitempty"`
	Tool string `json:"tool,omitempty"`
	// CallID and Arguments identify a tool call.
	CallID    string `json:"call_id,omitempty"`
	Arguments string `json:"arguments,omitempty"`
	IsError   bool   `json:"is_error,omitempty"`
	// Attempt, Class and WaitMS describe a retry.
	Attempt int    `json:"attempt,omitempty"`
	Class   string `json:"class,omitempty"`
	WaitMS  int64  `json:"wait_ms,omitempty"`
	// Limit names the limit that tripped.
	Limit string `json:"limit,omitempty"`
	// Escalation is set on escalation events.
	Escalation *Escalation `json:"escalation,omitempty"`
	// By says who sent a steering message (say events).
	By string `json:"by,omitempty"`
	// Tokens and SavedTokens describe a compaction: the tokens its model call used and the input
	// tokens it saves every later model call (an estimate).
	Tokens      int64     `json:"tokens,omitempty"`
	SavedTokens int64     `json:"saved_tokens,omitempty"`
	Time        time.Time `json:"time,omitempty"`
	// Before is, on a write_file call, the file's content before the call as the worker read it
	// (nil when it was too large to compare), so a watcher that shows the call after it ran still
	// shows what it changed.
	Before *string `json:"before,omitempty"`
	// Status is set on status events ("session": a summary line's "status" is its status word).
	Status *SessionStatus `json:"session,omitempty"`
}
