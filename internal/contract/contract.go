// Package contract is the one place where Keel's workflows, activities, worker, starter and
// escalation channels agree on names and payloads. It imports nothing of Keel's but the pure
// breaker state it carries, and does no I/O, so workflow code may use every part of it.
package contract

import (
	"encoding/json"
	"fmt"

	"github.com/keelrun/keel/internal/jsondur"
	"github.com/keelrun/keel/internal/tools/breaker"
)

// TaskQueue is the default task queue that workers poll and starters target.
const TaskQueue = "keel"

// Workflow type names. They are registered by name so that renaming a Go function never breaks a
// running session's history.
const (
	SessionWorkflow = "AgentSession"
	TurnWorkflow    = "AgentTurn"
)

// Activity type names.
const (
	CallModelActivity = "CallModel"
	CompactActivity   = "CompactTranscript"
	ListToolsActivity = "ListTools"
	RunToolActivity   = "RunTool"
	NotifyActivity    = "NotifyEscalation"
)

// Signal, update and query names of an AgentSession. Each answer path exists as an Update (so the
// sender learns whether it was accepted) and as a signal (so it can be sent from the Web UI or
// `temporal workflow signal`).
const (
	SignalCancel           = "cancel"
	SignalAnswerEscalation = "answer_escalation_signal"
	UpdateAnswerEscalation = "answer_escalation"
	SignalAttachSink       = "attach_sink"
	QueryStatus            = "status"
	QueryTranscript        = "transcript"
	// QueryTurnStep asks a turn (AgentTurn) what it runs now: a TurnStep.
	QueryTurnStep = "step"
)

// Session statuses, as they appear in the summary and the AgentStatus search attribute.
const (
	StatusRunning = "running"
	StatusWaiting = "waiting" // on a person
	// StatusWaitingReset: waiting on a timer for a provider's usage limit to reset.
	StatusWaitingReset = "waiting_reset"
	StatusCompleted    = "completed"
	StatusFailed       = "failed"
	StatusCancelled    = "cancelled"
	StatusLimit        = "limit"
	StatusEscalated    = "escalated"
	StatusAborted      = "aborted"
)

// Limit names, as they appear in Summary.Limit.
const (
	LimitTurns    = "turns"
	LimitDuration = "duration"
	LimitTokens   = "tokens"
)

// Message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one entry of a transcript in a provider-neutral shape. Provider clients translate it
// to their wire format; the workflow only ever sees this.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	// Name is the tool's name on a tool message.
	Name string `json:"name,omitempty"`
	// IsError marks a tool message that reports a failure, so providers that know the notion
	// (Anthropic's is_error) can pass it on.
	IsError bool `json:"is_error,omitempty"`
	// Note marks a record Keel itself wrote into the transcript (a limit that tripped, an
	// escalation answer) so a later turn or a resumed session knows why something happened.
	Note string `json:"note,omitempty"`
	// Reasoning holds the reasoning items an OpenAI Responses model returned before this
	// assistant message, each the item's JSON exactly as sent (id, summary, encrypted_content).
	// Nothing in Keel reads them: the next request hands them back in order, so the model keeps
	// its reasoning across turns without the gateway storing the conversation.
	Reasoning []json.RawMessage `json:"reasoning,omitempty"`
}

// ToolCall is a model's request to run one tool. Arguments is kept as the raw text the model sent,
// because repeat detection and argument repair both work on that text.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolSpec describes a tool to the model. Parameters is a JSON Schema object.
type ToolSpec struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Parameters  Schema `json:"parameters"`
	// Writes says the tool may change the world; approval policy "writes" gates these.
	Writes bool `json:"writes,omitempty"`
	// Server names the MCP server that serves the tool; empty for built-in tools.
	Server string `json:"server,omitempty"`
}

// Usage counts tokens as the provider reported them. Tokens are counted, never priced.
// InputTokens are all input tokens, cached or not; CachedTokens are those read from the provider's
// prompt cache (billed at a fraction of the input price) and CacheWriteTokens those written to it
// (Anthropic bills these above the input price).
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CachedTokens     int64 `json:"cached_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
}

// Total is input plus output tokens, the figure the token limit is checked against.
func (u Usage) Total() int64 { return u.InputTokens + u.OutputTokens }

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		InputTokens: u.InputTokens + o.InputTokens, OutputTokens: u.OutputTokens + o.OutputTokens,
		CachedTokens: u.CachedTokens + o.CachedTokens, CacheWriteTokens: u.CacheWriteTokens + o.CacheWriteTokens,
	}
}

// Limits are the hard limits of one session. A zero value means "no limit" for that dimension.
type Limits struct {
	MaxTurns    int              `json:"max_turns,omitempty"`
	MaxDuration jsondur.Duration `json:"max_duration,omitempty"`
	MaxTokens   int64            `json:"max_tokens,omitempty"`
	// ContextTokens is the context window the session keeps its model calls within: once a call's
	// input reaches 80 % of it, the oldest turns are summarised (compaction). Zero never
	// compacts. It is not a hard limit: nothing stops when a call goes past it.
	ContextTokens int64 `json:"context_tokens,omitempty"`
	// DelegationDepth is how many levels of sub-agents the session may start under it (the
	// delegate tool); zero offers no delegate tool. MaxChildren bounds the sub-agents running at
	// once in its whole tree.
	DelegationDepth int `json:"delegation_depth,omitempty"`
	MaxChildren     int `json:"max_children,omitempty"`
}

// RetryConfig shapes the gateway's equal-jitter backoff. Zero values take the defaults
// (DefaultRetryBase, DefaultRetryCap).
type RetryConfig struct {
	Base jsondur.Duration `json:"base,omitempty"`
	Cap  jsondur.Duration `json:"cap,omitempty"`
}

// ToolPolicy decides which tool calls wait for a person and which commands may run at all. The
// turn applies its gates (approvals, the allow and deny lists, breakers, fallbacks); the tools
// apply its ToolLimits, the one part a tool request carries (ToolPolicy.ForTools).
type ToolPolicy struct {
	// Approval says which calls wait for a person (ApprovalModes).
	Approval ApprovalMode `json:"approval,omitempty"`
	// Allow lists tools that never need approval; Deny lists tools that are refused outright.
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
	// ApprovalTimeout is how long an approval waits before the call is denied.
	ApprovalTimeout jsondur.Duration `json:"approval_timeout,omitempty"`
	// ToolLimits are embedded, so their fields keep their place in the policy's JSON.
	ToolLimits
	// Breaker shapes the circuit breaker of every tool and MCP server.
	Breaker breaker.Config `json:"breaker,omitzero"`
	// Fallbacks names, per tool, the tool the model is offered while the first one's breaker is open.
	Fallbacks map[string]string `json:"fallbacks,omitempty"`
}

// ToolLimits are the session's settings the built-in tools apply themselves; the worker's own
// are WorkerTools.
type ToolLimits struct {
	// Commands is the allow list of program names run_command may start; empty allows any.
	Commands []string `json:"commands,omitempty"`
	// CommandTimeout bounds one run_command call; zero is DefaultCommandTimeout.
	CommandTimeout jsondur.Duration `json:"command_timeout,omitempty"`
}

// ForTools is the policy a tool request carries: its ToolLimits alone, since the rest is the
// turn's to apply and would only make every tool request's history larger.
func (p ToolPolicy) ForTools() ToolPolicy {
	return ToolPolicy{ToolLimits: p.ToolLimits}
}

// Schema is a JSON Schema kept as its JSON text, so it reads as JSON in a history. Histories
// written before it was JSON hold it as a base64 string, which still decodes.
type Schema []byte

// MarshalJSON writes the schema as it is; an empty one is null.
func (s Schema) MarshalJSON() ([]byte, error) {
	if len(s) == 0 {
		return []byte("null"), nil
	}
	if !json.Valid(s) {
		return nil, fmt.Errorf("encoding a tool schema: not valid JSON: %.40q", s)
	}
	return s, nil
}

// UnmarshalJSON takes the schema's JSON, or the base64 string of older histories.
func (s *Schema) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var raw []byte
		if err := json.Unmarshal(b, &raw); err != nil {
			return fmt.Errorf("decoding a base64 tool schema: %w", err)
		}
		*s = raw
		return nil
	}
	if string(b) == "null" {
		*s = nil
		return nil
	}
	*s = append((*s)[:0], b...)
	return nil
}
