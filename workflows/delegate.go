package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/tools/toolspec"
)

// child is a sub-agent a turn started: its call, where its reply goes among the turn's
// messages, and its session.
type child struct {
	call contract.ToolCall
	id   string
	slot int
	fut  workflow.ChildWorkflowFuture
}

// delegate starts the sub-agent a delegate call asks for, without waiting for it: the calls after
// it run meanwhile, so several delegations in one reply run in parallel. The reply is kept in
// order and filled in by awaitChildren.
func (t *turn) delegate(ctx workflow.Context, call contract.ToolCall) {
	in, why := t.childInput(call)
	if why != "" {
		t.replyShown(call, why)
		return
	}
	id := contract.ChildSessionID(t.in.SessionID, call.ID)
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:            id,
		WaitForCancellation:   true,
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		StaticSummary:         "sub-agent: " + clip(in.Task, 120),
	})
	if len(t.children) == 0 {
		// The session learns of this turn's own spending only when the turn ends; its
		// sub-agents' charges arrive before that, so it hears of it now, once.
		workflow.SignalExternalWorkflow(ctx, t.in.SessionID, "", contract.SignalTreeCharge,
			contract.TreeCharge{Node: t.in.SessionID, Tokens: t.res.Usage.Total(), Running: true})
	}
	t.res.Counters.ToolCalls++
	t.reply(call, "", false)
	t.children = append(t.children, child{call: call, id: id, slot: len(t.feedback) - 1,
		fut: workflow.ExecuteChildWorkflow(cctx, contract.SessionWorkflow, in)})
}

// childInput builds the sub-agent's session from the call, or says why none is started: this
// session may not delegate, too many already run, or it names tools the parent lacks.
func (t *turn) childInput(call contract.ToolCall) (contract.SessionInput, string) {
	d := t.in.Delegate
	if d == nil {
		return contract.SessionInput{}, toolspec.DelegateRefusedFeedback("this session may not start sub-agents; do the task with your other tools")
	}
	var args toolspec.DelegateArgs
	if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil {
		return contract.SessionInput{}, toolspec.DelegateRefusedFeedback("its arguments are not a JSON object; send the call again")
	}
	most := maxChildren(d.Left)
	if len(t.children) >= most {
		return contract.SessionInput{}, toolspec.DelegateRefusedFeedback(fmt.Sprintf(
			"at most %d sub-agents run at once and %d already do; send this one again after their results arrive", most, len(t.children)))
	}
	tools, unknown := toolspec.DelegateTools(t.tools, args.Tools, d.Left.DelegationDepth > 0)
	if len(unknown) > 0 {
		return contract.SessionInput{}, toolspec.DelegateUnknownToolsFeedback(unknown, toolspec.Names(t.tools))
	}
	left := d.Left
	if left.MaxTokens > 0 {
		left.MaxTokens = max(left.MaxTokens-t.res.Usage.Total(), 1) // this turn's model call spent some
	}
	limits := contract.Within(contract.Limits{MaxTurns: args.MaxTurns, MaxTokens: int64(args.MaxTokens)}, left)
	// The children of this turn share what is left of the tree's concurrency, so the whole tree
	// never runs more than the session's bound at once.
	n := min(max(t.planned, 1), most)
	limits.MaxChildren = max((most-n)/n, 0)
	if limits.MaxChildren == 0 {
		limits.DelegationDepth = 0
		tools = toolspec.WithoutDelegate(tools)
	}
	set := t.in.Settings
	// The parent's watchers follow the parent: a child's events would land in the middle of its
	// replies. A person follows a child with `starter watch <its ID>`, which attaches a sink.
	set.Sinks = nil
	if args.Model != "" {
		set.Model = args.Model
		if set.Endpoint != nil {
			e := *set.Endpoint
			e.Model = args.Model
			set.Endpoint = &e
		}
	}
	builtin, rest := toolspec.Split(tools)
	return contract.SessionInput{
		Task: args.Task, SystemPrompt: d.SystemPrompt, Settings: set, Limits: limits, Escalation: d.Escalation, GitHub: d.GitHub,
		Delegation: &contract.Delegation{
			Parent: t.in.SessionID, CallID: call.ID, Ancestors: d.Ancestors,
			Path: append(d.Path[:len(d.Path):len(d.Path)], clip(args.Task, 80)), BuiltinTools: builtin, Tools: rest,
		},
	}, ""
}

// maxChildren is how many sub-agents a session with these limits runs at once.
func maxChildren(l contract.Limits) int {
	if l.MaxChildren > 0 {
		return l.MaxChildren
	}
	return contract.DefaultMaxChildren
}

// awaitChildren waits for every sub-agent the turn started and answers each call with its
// outcome. Waiting on a child workflow costs nothing while it runs: no heartbeat, no timer. A
// cancelled turn has cancelled them all (their sessions are children of it); it waits for them to
// end so nothing of theirs still runs when the turn reports.
func (t *turn) awaitChildren(ctx workflow.Context) {
	for _, c := range t.children {
		var sum contract.Summary
		err := c.fut.Get(ctx, &sum)
		text, isErr := childOutcome(c.id, sum, err)
		t.feedback[c.slot] = contract.Message{Role: contract.RoleTool, ToolCallID: c.call.ID, Name: c.call.Name, Content: text, IsError: isErr}
		t.res.Events = append(t.res.Events, contract.Event{Event: contract.EventToolResult, Turn: t.in.Turn, Tool: c.call.Name, CallID: c.call.ID, IsError: isErr, Text: clip(text, 2000)})
	}
	t.children = nil
}

// childOutcome words a sub-agent's end as its parent's tool result.
func childOutcome(id string, sum contract.Summary, err error) (string, bool) {
	if err == nil {
		return toolspec.DelegateAnswerFeedback(id, sum), false
	}
	var again *temporal.ChildWorkflowExecutionAlreadyStartedError
	if errors.As(err, &again) {
		return toolspec.DelegateAgainFeedback(id), true
	}
	if s, ok := contract.EndedSummary(err); ok {
		return toolspec.DelegateEndedFeedback(id, s), true
	}
	return toolspec.DelegateLostFeedback(id), true
}

// delegateContext is what a turn of this session needs to start sub-agents, or nil when it may
// not: its own limits less what the session and its tree have spent.
func (s *session) delegateContext(ctx workflow.Context) *contract.DelegateContext {
	if s.in.Limits.DelegationDepth <= 0 {
		return nil
	}
	var ancestors, path []string
	if d := s.in.Delegation; d != nil {
		ancestors, path = d.Ancestors, d.Path
	} else {
		path = []string{clip(s.in.Task, 80)}
	}
	elapsed := workflow.Now(ctx).Sub(s.state.StartedAt)
	return &contract.DelegateContext{
		SystemPrompt: s.in.SystemPrompt,
		Left:         contract.LimitsLeft(s.in.Limits, s.state.Turns+s.state.Tree.Turns, s.state.Usage.Total()+s.state.Tree.Tokens, elapsed),
		Escalation:   s.in.Escalation,
		GitHub:       s.in.GitHub,
		Ancestors:    append(ancestors[:len(ancestors):len(ancestors)], workflow.GetInfo(ctx).WorkflowExecution.ID),
		Path:         path,
	}
}

// countDelegations counts the delegate calls among calls.
func countDelegations(calls []contract.ToolCall) int {
	n := 0
	for _, c := range calls {
		if c.Name == toolspec.Delegate {
			n++
		}
	}
	return n
}

// listenCharges adds what sub-agents report spending to the session's tree usage as the signals
// arrive, whatever the main loop waits on, and stops the tree once a limit is crossed.
func (s *session) listenCharges(ctx workflow.Context) {
	ch := workflow.GetSignalChannelWithOptions(ctx, contract.SignalTreeCharge, workflow.SignalChannelOptions{
		Description: `A sub-agent's turn, charged to this session's limits. Input {"node":"<workflow ID>","tokens":1200,"turns":1}`,
	})
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var c contract.TreeCharge
			ch.Receive(ctx, &c)
			s.charge(c)
		}
	})
}

// charge adds one sub-agent turn to the tree's usage. When that crosses a limit, the turn in
// flight (and with it every sub-agent under it) is cancelled, and the session ends on that limit.
func (s *session) charge(c contract.TreeCharge) {
	if c.Running {
		s.state.Tree.Running = c.Tokens
	} else {
		s.state.Tree.Tokens += c.Tokens
	}
	s.state.Tree.Turns += c.Turns
	if !c.Running {
		s.state.Tree.Last = c.Node
	}
	if s.tripped != "" {
		return
	}
	if s.tripped = s.treeLimit(); s.tripped != "" && s.cancelTurn != nil {
		s.cancelTurn()
	}
}

// treeLimit names the limit the session and its sub-agents together have reached, or "".
func (s *session) treeLimit() string {
	l := s.in.Limits
	switch {
	case l.MaxTokens > 0 && s.state.Usage.Total()+s.state.Tree.Tokens+s.state.Tree.Running >= l.MaxTokens:
		return contract.LimitTokens
	case l.MaxTurns > 0 && s.state.Turns+s.state.Tree.Turns >= l.MaxTurns:
		return contract.LimitTurns
	}
	return ""
}

// chargeAncestors charges what one turn spent to every session above this sub-agent, one signal
// each. A signal to an ancestor that has ended fails and is not waited for: it has nothing left
// to limit.
func (s *session) chargeAncestors(ctx workflow.Context, tokens int64, turns int) {
	d := s.in.Delegation
	if d == nil || (tokens == 0 && turns == 0) {
		return
	}
	c := contract.TreeCharge{Node: workflow.GetInfo(ctx).WorkflowExecution.ID, Tokens: tokens, Turns: turns}
	sctx, _ := workflow.NewDisconnectedContext(ctx)
	for _, a := range d.Ancestors {
		workflow.SignalExternalWorkflow(sctx, a, "", contract.SignalTreeCharge, c)
	}
}

// treeText is what a limit's text adds when sub-agents spent part of it: how much, and the node
// whose charge came last (the one that tripped it when the tree stopped mid-turn).
func (s *session) treeText(spent int64, unit string) string {
	if spent == 0 {
		return ""
	}
	return fmt.Sprintf(" across the tree, %d %s of them by sub-agents; the last charge came from %s", spent, unit, s.state.Tree.Last)
}

// treePrefix starts what a sub-agent's escalation says with its path from the root's task down to
// its own, so the person it reaches knows which node of which tree asks; "" for a root session.
func (s *session) treePrefix() string {
	if d := s.in.Delegation; d != nil && len(d.Path) > 0 {
		return "[sub-agent: " + strings.Join(d.Path, " → ") + "] "
	}
	return ""
}
