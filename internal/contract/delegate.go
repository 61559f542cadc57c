package contract

import (
	"strings"
	"time"

	"github.com/keelrun/keel/internal/jsondur"
)

// Delegation says where a sub-agent's session sits in its tree: a session a delegate call started
// carries it in its input, a session a person started has none.
type Delegation struct {
	// Parent is the workflow ID of the session whose turn started this one; CallID is the
	// delegate call that did.
	Parent string `json:"parent"`
	CallID string `json:"call_id"`
	// Ancestors are the workflow IDs of every session above this one, the root first; each is
	// charged this session's spending as it happens (SignalTreeCharge).
	Ancestors []string `json:"ancestors"`
	// Path is the task of every session from the root down to this one, each clipped to one line,
	// so an escalation says where in the tree it comes from.
	Path []string `json:"path"`
	// BuiltinTools and Tools are the sub-agent's tools, by digest as a turn carries them (see
	// TurnInput): a subset of its parent's, fixed when it starts.
	BuiltinTools string     `json:"builtin_tools,omitempty"`
	Tools        []ToolSpec `json:"tools,omitempty"`
}

// DelegateContext is what a turn needs to start sub-agents. A session sets it in the turn's input
// only while it may delegate (Limits.DelegationDepth above zero); the limits are what the session
// has left as the turn starts, so no child is given more.
type DelegateContext struct {
	SystemPrompt string           `json:"system_prompt,omitempty"`
	Left         Limits           `json:"left"`
	Escalation   EscalationPolicy `json:"escalation"`
	// GitHub is the pull request the session works on, if any: a sub-agent's escalations go there
	// too.
	GitHub *GitHubContext `json:"github,omitempty"`
	// Ancestors and Path are the session's own place in its tree, with itself added last.
	Ancestors []string `json:"ancestors"`
	Path      []string `json:"path"`
}

// TreeCharge is the payload of the tree_charge signal: what one turn of a sub-agent spent,
// charged to each of its ancestors, which stop their whole tree once a limit of theirs is crossed.
type TreeCharge struct {
	// Node is the workflow ID of the session whose turn spent it.
	Node   string `json:"node"`
	Tokens int64  `json:"tokens"`
	Turns  int    `json:"turns"`
	// Running is set when a session's own turn reports what its model call spent before it starts
	// sub-agents: the turn's result replaces it when the turn ends, so it is not added twice.
	Running bool `json:"running,omitempty"`
}

// TreeUsage is what a session's sub-agents have spent so far, as their charges arrived; the
// session's limits apply to its own spending plus this. Last names the node of the last charge,
// the one that tripped a limit when one trips.
type TreeUsage struct {
	Tokens int64  `json:"tokens,omitempty"`
	Turns  int    `json:"turns,omitempty"`
	Last   string `json:"last,omitempty"`
	// Running is what the session's turn in flight has spent so far (TreeCharge.Running).
	Running int64 `json:"running,omitempty"`
}

// SignalTreeCharge charges a sub-agent's turn to an ancestor session (TreeCharge).
const SignalTreeCharge = "tree_charge"

// DefaultDelegationDepth is how many levels of sub-agents a session may start under it.
const DefaultDelegationDepth = 1

// DefaultMaxChildren is how many sub-agents may run at once in one session's tree.
const DefaultMaxChildren = 4

// ChildSessionID names the session a delegate call starts: derived from the parent session and
// the call, so a turn that is retried or replayed finds the child it started instead of starting
// another. A call ID is the model's text: anything but letters, digits, '-' and '_' is dropped and
// it is clipped, so the ID stays readable and bounded whatever the model sent.
func ChildSessionID(parent, callID string) string {
	var b strings.Builder
	for _, r := range callID {
		if b.Len() >= 64 {
			break
		}
		if r == '-' || r == '_' || ('0' <= r && r <= '9') || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') {
			b.WriteRune(r)
		}
	}
	id := b.String()
	if id != callID {
		id += "-" + Digest(callID)[:8]
	}
	return parent + childMark + id
}

// ParentSessionID is the session that started the sub-agent id names (ChildSessionID), or "" for
// a session a person started.
func ParentSessionID(id string) string {
	i := strings.LastIndex(id, childMark)
	if i < 0 {
		return ""
	}
	return id[:i]
}

// childMark separates a sub-agent's workflow ID from its parent's.
const childMark = "/sub-"

// remaining is what is left of a limit of l after used; zero when l is zero (no limit), and at
// least 1 otherwise, so a child is never handed "no limit" by a parent that has little left.
func remaining[T int | int64](l, used T) T {
	if l <= 0 {
		return 0
	}
	return max(l-used, 1)
}

// LimitsLeft is what a session with limits l has left after spending turns and tokens in elapsed
// time, with one level less of delegation: the most a child of it may be given.
func LimitsLeft(l Limits, turns int, tokens int64, elapsed time.Duration) Limits {
	left := Limits{
		MaxTurns:        remaining(l.MaxTurns, turns),
		MaxTokens:       remaining(l.MaxTokens, tokens),
		ContextTokens:   l.ContextTokens,
		DelegationDepth: max(l.DelegationDepth-1, 0),
		MaxChildren:     l.MaxChildren,
	}
	if l.MaxDuration > 0 {
		left.MaxDuration = max(l.MaxDuration-jsondur.Duration(elapsed), jsondur.Duration(time.Second))
	}
	return left
}

// Within returns asked with every limit cut to what left allows: a child asking for more than its
// parent has left gets what is left. A zero in asked takes left's value.
func Within(asked, left Limits) Limits {
	out := left
	if asked.MaxTurns > 0 && (left.MaxTurns == 0 || asked.MaxTurns < left.MaxTurns) {
		out.MaxTurns = asked.MaxTurns
	}
	if asked.MaxTokens > 0 && (left.MaxTokens == 0 || asked.MaxTokens < left.MaxTokens) {
		out.MaxTokens = asked.MaxTokens
	}
	if asked.MaxDuration > 0 && (left.MaxDuration == 0 || asked.MaxDuration < left.MaxDuration) {
		out.MaxDuration = asked.MaxDuration
	}
	return out
}
