package contract

import (
	"time"

	"github.com/keelrun/keel/internal/jsondur"
)

// Escalation reasons: why a session stopped to ask a person.
const (
	ReasonGatewayRetries = "gateway_retries_exhausted"
	ReasonRepairCap      = "repair_cap_exceeded"
	ReasonLoop           = "loop_persists"
	ReasonFatalTool      = "fatal_tool_error"
	ReasonPolicy         = "policy_violation"
	ReasonBudget         = "budget"
	ReasonApproval       = "approval"
	// ReasonUsageLimit: the provider's usage limit resets after the session's deadline.
	ReasonUsageLimit = "usage_limit_after_deadline"
	// ReasonGoalCheck: the goal's check failed the same way too many times in a row.
	ReasonGoalCheck = "goal_check_repeats"
)

// Answer actions.
const (
	ActionRetry = "retry"
	ActionEdit  = "edit"
	ActionAbort = "abort"
	// ActionApprove and ActionDeny answer an approval notice.
	ActionApprove = "approve"
	ActionDeny    = "deny"
	// ActionSay is not an answer: it is the word a chat or pull request command uses to add a
	// person's message to the session (the say update).
	ActionSay = "say"
)

// EscalationPolicy configures how long an escalation waits and whom it tells.
type EscalationPolicy struct {
	// Deadline is how long an escalation waits for an answer before DefaultAction is taken.
	Deadline jsondur.Duration `json:"deadline,omitempty"`
	// Channels are notified in order, spread evenly over the deadline (the first at once).
	Channels []string `json:"channels,omitempty"`
	// DefaultAction is taken at the deadline: abort (the default) or retry.
	DefaultAction string `json:"default_action,omitempty"`
	// UIBase is the Web UI's base URL, for links in notices.
	UIBase string `json:"ui_base,omitempty"`
}

// Escalation is the record a session keeps while it waits on a person: what happened, what was
// tried, and how to answer.
type Escalation struct {
	ID         string   `json:"id"`
	WorkflowID string   `json:"workflow_id"`
	Reason     string   `json:"reason"`
	Class      string   `json:"class,omitempty"`
	Summary    string   `json:"summary"`
	Tried      []string `json:"tried,omitempty"`
	Attempts   int      `json:"attempts,omitempty"`
	LastError  string   `json:"last_error,omitempty"`
	// Calls are the tool calls involved, with their arguments.
	Calls []ToolCall `json:"calls,omitempty"`
	// SpentMS is how long the session had run, in milliseconds (jsonl writes every duration as
	// integer milliseconds in a field ending _ms).
	SpentMS int64  `json:"spent_ms,omitempty"`
	Link    string `json:"link,omitempty"`
	// GitHub is the session's pull request, copied from its input, so the GitHub channel comments
	// there; nil when the session names none.
	GitHub   *GitHubContext `json:"github,omitempty"`
	Choices  []string       `json:"choices"`
	Deadline time.Time      `json:"deadline"`
	// DefaultAction is the answer taken at the deadline when nobody answers.
	DefaultAction string `json:"default_action,omitempty"`
	// Answer is set once someone answered.
	Answer *Answer `json:"answer,omitempty"`
	// Approval is set when the notice asks a person to approve one tool call (reason approval):
	// the answer is then an approve_call update naming the call and its argument digest, and the
	// choices are ActionApprove and ActionDeny.
	Approval *Approval `json:"approval,omitempty"`
}

// Answer is a person's decision on an escalation, delivered by update or signal.
type Answer struct {
	EscalationID string `json:"escalation_id"`
	Action       string `json:"action"`
	// Text is the corrected arguments or the instruction for the model, with ActionEdit.
	Text string `json:"text,omitempty"`
	By   string `json:"by,omitempty"`
	// Via names the channel the answer came through (terminal, slack, cli, signal).
	Via string `json:"via,omitempty"`
}

// AnswerResult is what the answer update returns to its sender.
type AnswerResult struct {
	Accepted bool   `json:"accepted"`
	Message  string `json:"message"`
}

// Approval is a tool call that waits for a person before it runs.
type Approval struct {
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
	// Digest is the SHA-256 of the argument text; an approval must name it, so it can never
	// approve a different call.
	Digest    string    `json:"digest"`
	Arguments string    `json:"arguments"`
	Deadline  time.Time `json:"deadline"`
}

// ApprovalDecision answers an Approval.
type ApprovalDecision struct {
	CallID  string `json:"call_id"`
	Digest  string `json:"digest"`
	Approve bool   `json:"approve"`
	By      string `json:"by,omitempty"`
	// Reason, on a denial, is what the person tells the model: why not, or what to do instead.
	Reason string `json:"reason,omitempty"`
	// AllowFor, on an approval, also allows later calls for the rest of the session: AllowTool
	// every call of the tool, AllowCommand (run_command) every call of exactly this command.
	AllowFor string `json:"allow_for,omitempty"`
}

// The scopes of an ApprovalDecision's AllowFor. For a tool other than run_command both allow the
// tool: its calls have no command to tell apart.
const (
	AllowTool    = "tool"
	AllowCommand = "command"
)

// Allowance is what a person allowed for the rest of a session: every call of Tool, or, with
// Command set, the run_command calls of exactly that command. Calls it covers run without asking,
// and the session says which allowance let each one through.
type Allowance struct {
	Tool    string `json:"tool"`
	Command string `json:"command,omitempty"`
	By      string `json:"by,omitempty"`
}

// MaxAllowances bounds a session's allowances, so a stream of them cannot grow its state.
const MaxAllowances = 64

// MaxDenyReason bounds a denial's reason, in bytes.
const MaxDenyReason = 2000

// NotifyRequest is the input of the escalation notice activity: one channel, one escalation.
// Notices are idempotent by escalation id and channel, so the activity may be retried.
type NotifyRequest struct {
	Channel    string     `json:"channel"`
	Escalation Escalation `json:"escalation"`
}

// UpdateApproveCall is the update that answers a pending approval.
const UpdateApproveCall = "approve_call"

// EscalationRequest is what a turn hands its session when it needs a person: the session turns it
// into an Escalation record, notifies the channels and waits for an answer.
type EscalationRequest struct {
	Reason    string     `json:"reason"`
	Class     string     `json:"class,omitempty"`
	Summary   string     `json:"summary"`
	Tried     []string   `json:"tried,omitempty"`
	Attempts  int        `json:"attempts,omitempty"`
	LastError string     `json:"last_error,omitempty"`
	Calls     []ToolCall `json:"calls,omitempty"`
}
