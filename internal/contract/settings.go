package contract

import (
	"github.com/keelrun/keel/internal/jsondur"
	"github.com/keelrun/keel/internal/tools/breaker"
)

// The pieces below are embedded, not copied: a payload that carries the session's settings, its
// guards or its place in the transcript embeds the one struct that holds them, so adding a field
// there reaches every payload at once and a copy is one struct assignment. Embedded fields
// marshal at the level of the payload that embeds them, so the JSON of recorded histories is the
// same as when each payload listed the fields itself (testdata/payloads proves it).

// Settings are what a session runs each of its turns with, unchanged from turn to turn: they come
// from its input and travel in every TurnInput.
type Settings struct {
	ModelSettings
	ToolSettings
	// Sinks are the URLs starters named for live events before the watch signal; sessions carry
	// them on and no worker reads them (live events travel through Temporal: SignalWatch).
	Sinks []string `json:"sinks,omitempty"`
	// HeartbeatTimeout is how long a running model call or tool may go without a heartbeat before
	// Temporal declares its worker dead (the outcome-unknown path for a tool, a retry for a model
	// call); zero is DefaultHeartbeatTimeout. Workers beat at least three times per timeout.
	HeartbeatTimeout jsondur.Duration `json:"heartbeat_timeout,omitempty"`
}

// ModelSettings are the settings a model call needs: a ModelRequest and a CompactRequest carry them.
type ModelSettings struct {
	// Model is the model alias the gateway sends.
	Model string `json:"model,omitempty"`
	// Endpoint is the model endpoint the session asked for; nil leaves provider, base URL, model
	// and key to the worker's configuration.
	Endpoint *Endpoint   `json:"endpoint,omitempty"`
	Retry    RetryConfig `json:"retry"`
	// WaitLimits asks the model call to report a usage limit whose reset lies beyond the retry
	// cap as ClassUsageLimit, for the session to wait out on a timer, instead of retrying it.
	// Sessions set it themselves (versionUsageWait); one started before that never sees the class.
	WaitLimits bool `json:"wait_limits,omitempty"`
}

// ToolSettings are the settings a tool call needs: a ToolRequest carries them.
type ToolSettings struct {
	// Workdir is the directory the tools are confined to, as the worker sees it.
	Workdir string     `json:"workdir"`
	Policy  ToolPolicy `json:"policy"`
	// Source, when set, is the repository and commit the session's workspace comes from: the
	// worker materializes it and runs the tools there, and Workdir is not read.
	Source *Source `json:"source,omitempty"`
}

// Guards are the per-session protections a turn reads and updates: repeat detection, repair
// counts and the circuit breakers. A session hands them to each turn (TurnInput), the turn returns
// them updated (TurnResult), and the session keeps them (SessionState), across continue-as-new too.
type Guards struct {
	// Repeat carries repeat detection across turns: the key of the last call and how many times in
	// a row it was made.
	Repeat RepeatState `json:"repeat"`
	// Repairs counts rejected (unparsable or schema-violating) calls per tool, plus the key "*"
	// for consecutive rejections of any tool; a person is asked once a count passes RepairCap.
	Repairs map[string]int `json:"repairs,omitempty"`
	// Rejected lists the rejected calls since the last valid one ("turn 2: read_file {..."), so an
	// escalation for the repair cap shows everything that was tried.
	Rejected []string `json:"rejected,omitempty"`
	// Breakers are the circuit breakers of the session's tools.
	Breakers breaker.State `json:"breakers,omitzero"`
	// Allowed are the calls people allowed for the rest of the session at an approval: calls
	// they cover skip the approval gate. Only the session adds to them.
	Allowed []Allowance `json:"allowed,omitempty"`
}

// TranscriptRef is where a session stands in its transcript: the head in the message store and
// the messages produced since (the task, tool results, feedback) that the next model call stores
// first. It is Transcript with an empty head left out, as SessionState and TurnInput always
// wrote it; TranscriptRef(t) converts one to the other.
type TranscriptRef struct {
	Head    string    `json:"head,omitempty"`
	Pending []Message `json:"pending,omitempty"`
}
