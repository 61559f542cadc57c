package workflows_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/tools/toolspec"
)

// parentID is the workflow ID the test environment gives the session it runs.
const parentID = "default-test-workflow-id"

// delegateCall is a delegate call with the given task and extra arguments.
func delegateCall(id, task, extra string) contract.ToolCall {
	return call(id, toolspec.Delegate, fmt.Sprintf(`{"task":%q%s}`, task, extra))
}

// toolResult finds the reply to a call in a model request's appended messages.
func toolResult(t *testing.T, req contract.ModelRequest, callID string) contract.Message {
	t.Helper()
	m, ok := findMessage(req.Append, func(m contract.Message) bool { return m.ToolCallID == callID })
	require.True(t, ok, "no result for call %s among %d messages", callID, len(req.Append))
	return m
}

// TestDelegateRunsChildrenInParallel: three delegate calls in one reply start three child
// sessions at once (their model calls overlap on the workflow clock), each with its own task, and
// the parent's next model call gets their three answers.
func TestDelegateRunsChildrenInParallel(t *testing.T) {
	w := newWorld(t)
	w.modelDelay = 10 * time.Second
	var childCalls []time.Time
	w.model = func(req contract.ModelRequest) reply {
		if req.SessionID == parentID {
			if req.Turn == 1 {
				return toolsReply(contract.Usage{InputTokens: 10},
					delegateCall("d1", "task A", ""), delegateCall("d2", "task B", `,"tools":"read_file"`), delegateCall("d3", "task C", ""))
			}
			return answerReply("all done", contract.Usage{InputTokens: 10})
		}
		childCalls = append(childCalls, w.env.Now())
		task := req.Append[len(req.Append)-1].Content
		return answerReply("answer to "+task, contract.Usage{InputTokens: 5, OutputTokens: 5})
	}
	in := input(contract.Limits{MaxTurns: 10, MaxTokens: 10_000, DelegationDepth: 1})
	in.Sinks = []string{"http://127.0.0.1:1/events"}
	start := w.env.Now()
	sum := w.run(in)
	require.Equal(t, contract.StatusCompleted, sum.Status)

	reqs := w.modelRequests()
	require.Len(t, reqs, 5, "the parent's two calls and one per child")
	var last contract.ModelRequest
	children := map[string]contract.ModelRequest{}
	for _, r := range reqs {
		if r.SessionID == parentID && r.Turn == 2 {
			last = r
		} else if r.SessionID != parentID {
			children[r.SessionID] = r
		}
	}
	for i, task := range []string{"task A", "task B", "task C"} {
		id := contract.ChildSessionID(parentID, fmt.Sprintf("d%d", i+1))
		child, ok := children[id]
		require.True(t, ok, "no child session %s", id)
		tools, err := toolspec.Join(child.BuiltinTools, child.Tools)
		require.NoError(t, err)
		require.NotContains(t, toolspec.Names(tools), toolspec.Delegate, "a child at the depth limit must not delegate")
		require.Empty(t, child.Sinks, "the parent's watchers do not get the child's events")
		if task == "task B" {
			require.Equal(t, []string{toolspec.ReadFile}, toolspec.Names(tools), "the tools the call named")
		}
		res := toolResult(t, last, fmt.Sprintf("d%d", i+1))
		require.False(t, res.IsError)
		require.Contains(t, res.Content, "answer to "+task)
		require.Contains(t, res.Content, id)
	}
	// Sequential children would call the model 10 s apart; in parallel they call at one time.
	require.Len(t, childCalls, 3)
	for _, at := range childCalls {
		require.Equal(t, childCalls[0], at, "the children's model calls did not overlap")
	}
	require.Equal(t, start.Add(10*time.Second), childCalls[0].Add(-10*time.Second), "the children start as the parent's first call ends")
}

// TestDelegateOffered: a session offers the delegate tool only while its configuration allows
// delegation; without it, it is offered the released set without delegate.
func TestDelegateOffered(t *testing.T) {
	for _, depth := range []int{0, 1} {
		t.Run(fmt.Sprint("depth ", depth), func(t *testing.T) {
			w := newWorld(t, answerReply("done", contract.Usage{}))
			w.run(input(contract.Limits{MaxTurns: 3, DelegationDepth: depth}))
			req := w.modelRequests()[0]
			tools, err := toolspec.Join(req.BuiltinTools, req.Tools)
			require.NoError(t, err)
			require.Equal(t, depth > 0, strings.Contains(strings.Join(toolspec.Names(tools), " "), toolspec.Delegate))
			require.Empty(t, req.Tools, "the tool list travels by a released digest")
		})
	}
}

// TestDelegateFailureIsFeedback: a child that fails, one that cannot start (a tool its parent
// lacks) and a delegation the session may not make each come back as a tool result that says what
// happened, and the parent goes on.
func TestDelegateFailureIsFeedback(t *testing.T) {
	w := newWorld(t)
	w.model = func(req contract.ModelRequest) reply {
		if req.SessionID == parentID {
			if req.Turn == 1 {
				return toolsReply(contract.Usage{}, delegateCall("bad", "fail please", ""), delegateCall("tools", "x", `,"tools":"fly"`))
			}
			return answerReply("carried on", contract.Usage{})
		}
		return reply{err: fmt.Errorf("the provider is down")}
	}
	sum := w.run(input(contract.Limits{MaxTurns: 5, DelegationDepth: 1}))
	require.Equal(t, contract.StatusCompleted, sum.Status)
	var last contract.ModelRequest
	for _, r := range w.modelRequests() {
		if r.SessionID == parentID && r.Turn == 2 {
			last = r
		}
	}
	failed := toolResult(t, last, "bad")
	require.True(t, failed.IsError)
	require.Contains(t, failed.Content, "failed")
	require.Contains(t, failed.Content, "may have changed files", "a failed child's side effects are stated")
	refused := toolResult(t, last, "tools")
	require.True(t, refused.IsError)
	require.Contains(t, refused.Content, "No sub-agent was started")
	require.Contains(t, refused.Content, "fly")
}

// TestDelegateLimitsAreASlice: a child asked for more than its parent has left gets what is left:
// asked for 5,000 tokens when the parent had 400 left, it stops on its token limit after the second
// call of 300, where 5,000 would have let it run into its turn limit of 5.
func TestDelegateLimitsAreASlice(t *testing.T) {
	w := newWorld(t)
	childCalls := 0
	w.model = func(req contract.ModelRequest) reply {
		if req.SessionID == parentID {
			if req.Turn == 1 {
				return toolsReply(contract.Usage{InputTokens: 600}, delegateCall("d", "big job", `,"max_tokens":5000,"max_turns":5`))
			}
			return answerReply("ok", contract.Usage{})
		}
		childCalls++
		return toolsReply(contract.Usage{InputTokens: 300}, call(fmt.Sprint("r", childCalls), toolspec.ReadFile, `{"path":"a.go"}`))
	}
	w.run(input(contract.Limits{MaxTurns: 10, MaxTokens: 1000, DelegationDepth: 1}))
	require.Equal(t, 2, childCalls, "the child had 400 tokens, not the 5,000 it asked for")
}

// TestTreeLimitStopsTheTree: two sub-agents that each stay within their own slice together cross
// the parent's token limit; the charges stop the whole tree within one model call of crossing it,
// and the parent's summary names the limit and the node whose charge tripped it.
func TestTreeLimitStopsTheTree(t *testing.T) {
	w := newWorld(t)
	w.modelDelay = time.Second
	calls := map[string]int{}
	w.model = func(req contract.ModelRequest) reply {
		if req.SessionID == parentID {
			if req.Turn == 1 {
				return toolsReply(contract.Usage{InputTokens: 100}, delegateCall("a", "task A", ""), delegateCall("b", "task B", ""))
			}
			return answerReply("should not be reached", contract.Usage{})
		}
		calls[req.SessionID]++
		return toolsReply(contract.Usage{InputTokens: 300}, call(fmt.Sprint("r", calls[req.SessionID]), toolspec.ReadFile, `{"path":"a.go"}`))
	}
	sum := w.run(input(contract.Limits{MaxTurns: 50, MaxTokens: 1000, DelegationDepth: 1}))
	require.Equal(t, contract.StatusLimit, sum.Status)
	require.Equal(t, contract.LimitTokens, sum.Limit)
	require.Contains(t, sum.Reason, parentID+"/sub-", "the summary names the node")
	total := 0
	for _, n := range calls {
		total += n
	}
	// 100 + 300 per child call: the limit is crossed by the third child call; each child may
	// have one call in flight when the charge lands.
	require.LessOrEqual(t, total, 4, "the tree ran on after crossing its limit: %v", calls)
	require.Len(t, w.modelRequests(), total+1, "the parent made no model call after the limit")
}

// TestCancelOneChild: a person's cancel of one sub-agent stops it alone; its sibling finishes and
// the parent's model is told which one was cancelled.
func TestCancelOneChild(t *testing.T) {
	w := newWorld(t)
	w.modelDelay = 10 * time.Second
	slow := contract.ChildSessionID(parentID, "slow")
	w.model = func(req contract.ModelRequest) reply {
		switch {
		case req.SessionID == parentID && req.Turn == 1:
			return toolsReply(contract.Usage{}, delegateCall("slow", "slow task", ""), delegateCall("fast", "fast task", ""))
		case req.SessionID == parentID:
			return answerReply("done", contract.Usage{})
		case req.SessionID == slow:
			return toolsReply(contract.Usage{}, call(fmt.Sprint("r", req.Turn), toolspec.ReadFile, fmt.Sprintf(`{"path":"%d"}`, req.Turn)))
		}
		return answerReply("fast answer", contract.Usage{})
	}
	w.at(35*time.Second, func() {
		require.NoError(t, w.env.SignalWorkflowByID(slow, contract.SignalCancel, contract.CancelRequest{Reason: "not needed", By: "ana"}))
	})
	sum := w.run(input(contract.Limits{MaxTurns: 50, DelegationDepth: 1}))
	require.Equal(t, contract.StatusCompleted, sum.Status, "cancelling a sub-agent does not stop its parent")
	var last contract.ModelRequest
	for _, r := range w.modelRequests() {
		if r.SessionID == parentID && r.Turn == 2 {
			last = r
		}
	}
	cancelled := toolResult(t, last, "slow")
	require.True(t, cancelled.IsError)
	require.Contains(t, cancelled.Content, slow)
	require.Contains(t, cancelled.Content, "was cancelled")
	require.Contains(t, toolResult(t, last, "fast").Content, "fast answer")
}

// TestChildEscalationNamesThePath: a sub-agent's escalation reaches the same channels and says
// where in the tree it comes from.
func TestChildEscalationNamesThePath(t *testing.T) {
	w := newWorld(t)
	w.model = func(req contract.ModelRequest) reply {
		switch {
		case req.SessionID == parentID && req.Turn == 1:
			return toolsReply(contract.Usage{}, delegateCall("d", "run the tests", ""))
		case req.SessionID == parentID:
			return answerReply("done", contract.Usage{})
		}
		return toolsReply(contract.Usage{}, call("c", toolspec.RunCommand, `{"command":"go test ./..."}`))
	}
	in := input(contract.Limits{MaxTurns: 5, DelegationDepth: 1})
	in.Policy.Deny = []string{toolspec.RunCommand}
	in.Escalation.Channels = []string{"webhook"}
	w.run(in)
	notices := w.sentNotices()
	require.NotEmpty(t, notices)
	require.Contains(t, notices[0].req.Escalation.Summary, "make the tests pass → run the tests")
	require.Equal(t, contract.ChildSessionID(parentID, "d"), notices[0].req.Escalation.WorkflowID)
}

// TestSayToOneChild: a message a person sends to one sub-agent reaches that sub-agent's next
// model call only: not its sibling's, not its parent's.
func TestSayToOneChild(t *testing.T) {
	w := newWorld(t)
	w.modelDelay = 10 * time.Second
	a, b := contract.ChildSessionID(parentID, "a"), contract.ChildSessionID(parentID, "b")
	w.model = func(req contract.ModelRequest) reply {
		switch {
		case req.SessionID == parentID && req.Turn == 1:
			return toolsReply(contract.Usage{}, delegateCall("a", "task A", ""), delegateCall("b", "task B", ""))
		case req.SessionID == parentID:
			return answerReply("done", contract.Usage{})
		case req.Turn < 3:
			return toolsReply(contract.Usage{}, call(fmt.Sprint("r", req.Turn), toolspec.ReadFile, fmt.Sprintf(`{"path":"%d"}`, req.Turn)))
		}
		return answerReply("child done", contract.Usage{})
	}
	w.at(15*time.Second, func() {
		require.NoError(t, w.env.SignalWorkflowByID(a, contract.SignalSay, contract.Say{Text: "only for A", By: "ana", Via: "cli"}))
	})
	w.run(input(contract.Limits{MaxTurns: 20, DelegationDepth: 1}))
	heard := map[string][]int{}
	for _, r := range w.modelRequests() {
		for _, m := range r.Append {
			if strings.Contains(m.Content, "only for A") {
				heard[r.SessionID] = append(heard[r.SessionID], r.Turn)
			}
		}
	}
	require.Equal(t, map[string][]int{a: {2}}, heard, "the message reaches A's next model call only (B is %s)", b)
}
