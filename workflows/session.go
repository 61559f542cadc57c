package workflows

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/textfmt"
	"github.com/keelrun/keel/internal/tools/toolspec"
)

// AgentSession runs one task: turns as AgentTurn child workflows until the model answers without
// tool calls, a limit trips, a person stops it, or a failure it cannot fix is surfaced.
func AgentSession(ctx workflow.Context, in contract.SessionInput) (contract.Summary, error) {
	s := newSession(ctx, in)
	if err := s.registerHandlers(ctx); err != nil {
		return contract.Summary{}, fmt.Errorf("registering session handlers: %w", err)
	}
	if err := s.listTools(ctx); err != nil {
		return contract.Summary{}, err
	}
	return s.run(ctx)
}

// session is the state of one AgentSession run.
type session struct {
	in     contract.SessionInput
	state  contract.SessionState
	status string
	sinks  []string
	// watch holds the watchers' leases (watch.go).
	watch watchState

	// turnsThisRun counts the turns of this run, for TurnsPerRun.
	turnsThisRun int

	cancelReq *contract.CancelRequest
	// cancelTurn cancels the turn in flight, if any.
	cancelTurn workflow.CancelFunc

	escalation *contract.Escalation
	escalSeq   int
	approval   *contract.Approval
	decision   *contract.ApprovalDecision

	// running is the turn in flight (0 between turns); noted is the last event number a turn's
	// status note carried to the watchers (statusNote).
	running int
	noted   int

	// sayCh receives the say signal; modelTurn says the turn in flight calls the model (only such a
	// turn may be interrupted); interrupted marks a turn a person's message cancelled; closing
	// refuses new messages once the session has decided to complete.
	sayCh       workflow.ReceiveChannel
	modelTurn   bool
	interrupted bool
	closing     bool

	// searched holds the search attribute values this run last upserted, so a turn upserts only
	// what changed.
	searched *searchValues
	// lastSearch is what the search attributes were last set from (upsertSearch); searchOnChange
	// says this run upserts only when that changed (versionSearchOnChange).
	lastSearch     searchKey
	searchOnChange bool

	// usageWaits says this session waits out usage limits on a timer (versionUsageWait); wait is
	// the wait in progress, for the status query.
	usageWaits bool
	wait       *contract.UsageWait
	// localReads says this run's turns run reads as local activities (versionRunStart, or
	// versionLocalReads in older runs).
	localReads bool
	// runStart says this run recorded versionRunStart in its first workflow task, so it takes
	// every change that marker stands for without asking each one's own.
	runStart bool

	// tripped is the limit the session's tree crossed while a turn ran (delegate.go), or "".
	tripped string
}

func newSession(ctx workflow.Context, in contract.SessionInput) *session {
	s := &session{in: in, status: contract.StatusRunning, sinks: in.Sinks}
	if in.Carry != nil {
		s.state = *in.Carry
	} else {
		s.state.StartedAt = workflow.Now(ctx)
		s.state.Pending = initialMessages(in)
	}
	s.runStart = workflow.GetVersion(ctx, versionRunStart, workflow.DefaultVersion, 1) == 1
	s.initSearchKey(ctx)
	s.usageWaits = s.takes(ctx, versionUsageWait)
	s.localReads = s.takes(ctx, versionLocalReads)
	for _, w := range in.Watchers {
		s.takeWatch(ctx, w)
	}
	return s
}

// listTools fixes the tools of the session once: the built-in ones and those the worker's MCP
// servers serve. Sessions started before MCP support (version DefaultVersion) keep the built-in
// tools, so their histories still replay: a released set, not this build's text, since their
// history holds no list of its own.
func (s *session) listTools(ctx workflow.Context) error {
	if len(s.state.Tools) > 0 {
		return nil
	}
	if d := s.in.Delegation; d != nil {
		tools, err := toolspec.Join(d.BuiltinTools, d.Tools)
		if err != nil {
			return fmt.Errorf("resolving the sub-agent's tools: %w", err)
		}
		s.state.Tools = tools
		return nil
	}
	defer func() {
		if s.in.Limits.DelegationDepth <= 0 {
			s.state.Tools = toolspec.WithoutDelegate(s.state.Tools)
		}
	}()
	if !s.takes(ctx, versionListTools) {
		s.state.Tools = toolspec.PreListing()
		return nil
	}
	actx := workflow.WithActivityOptions(ctx, listToolsOptions())
	if err := workflow.ExecuteActivity(actx, contract.ListToolsActivity).Get(actx, &s.state.Tools); err != nil {
		return fmt.Errorf("listing the session's tools: %w", err)
	}
	return nil
}

func initialMessages(in contract.SessionInput) []contract.Message {
	var msgs []contract.Message
	if in.SystemPrompt != "" {
		msgs = append(msgs, contract.Message{Role: contract.RoleSystem, Content: in.SystemPrompt})
	}
	return append(msgs, contract.Message{Role: contract.RoleUser, Content: in.Task})
}

func (s *session) run(ctx workflow.Context) (contract.Summary, error) {
	logger := workflow.GetLogger(ctx)
	deadline, stopTimer := s.startDurationTimer(ctx)
	defer stopTimer()

	for {
		if sum, done := s.checkLimits(ctx); done {
			return s.finish(ctx, sum)
		}
		if deadline != nil && deadline.IsReady() {
			return s.finish(ctx, s.limitSummary(ctx, contract.LimitDuration))
		}
		if s.cancelReq != nil || ctx.Err() != nil {
			return s.finish(ctx, s.cancelledSummary(ctx, ""))
		}
		if s.shouldContinueAsNew(ctx) {
			return contract.Summary{}, s.continueAsNew(ctx)
		}
		if s.compact(ctx, deadline) {
			continue
		}

		turn := s.state.Turns + 1
		id := contract.TurnWorkflowID(workflow.GetInfo(ctx).WorkflowExecution.ID, turn)
		// What the turn runs (the model call, a tool call) is in the turn's own details: the
		// session learns of it only when the turn ends.
		s.setDetails(ctx, fmt.Sprintf("turn %d running: what it runs now is in the details of %s", turn, id))
		s.deliverInbox(ctx)
		s.modelTurn, s.running = true, turn
		in := s.turnInput(ctx, turn)
		in.Status = s.statusNote()
		res, outcome := s.runTurn(ctx, in, id, deadline)
		s.modelTurn, s.running = false, 0
		for k := 1; outcome == turnDone && s.waitsOut(res.Failure); k++ {
			if sum, done := s.awaitReset(ctx, turn, res, deadline); done {
				return s.finish(ctx, sum)
			}
			s.deliverInbox(ctx)
			s.modelTurn, s.running = true, turn
			in := s.turnInput(ctx, turn)
			in.Status = s.statusNote()
			res, outcome = s.runTurn(ctx, in, fmt.Sprintf("%s-wait-%d", id, k), deadline)
			s.modelTurn, s.running = false, 0
		}
		if outcome == turnInterrupted {
			s.fold(ctx, turn, res, outcome)
			s.turnsThisRun++
			continue
		}
		if sum, done := s.turnStopped(ctx, turn, res, outcome); done {
			return s.finish(ctx, sum)
		}
		s.fold(ctx, turn, res, turnDone)
		s.turnsThisRun++
		for k := 1; res.NeedsApproval != nil; k++ {
			dec, sum, done := s.awaitApproval(ctx, *res.NeedsApproval, deadline)
			if done {
				return s.finish(ctx, sum)
			}
			in := s.turnInput(ctx, turn)
			in.Resume, in.Approved = res.Resume, dec
			res, outcome = s.runTurn(ctx, in, fmt.Sprintf("%s-approval-%d", id, k), deadline)
			if sum, done := s.turnStopped(ctx, turn, res, outcome); done {
				return s.finish(ctx, sum)
			}
			s.fold(ctx, turn, res, turnDone)
		}
		logger.Info("turn finished", "turn", turn, "final", res.Final, "tokens", s.state.Usage.Total())

		switch {
		case res.Failure != nil:
			s.raiseNotice(ctx, res.Failure)
			return s.finish(ctx, s.failedSummary(ctx, res.Failure))
		case res.Escalate != nil:
			if sum, done := s.escalate(ctx, res.Escalate, deadline); done {
				return s.finish(ctx, sum)
			}
		case res.Final:
			if s.in.Goal != nil && s.in.Goal.Check != "" && s.takes(ctx, versionGoal) {
				sum, done, again := s.checkGoal(ctx, turn, deadline)
				if done {
					return s.finish(ctx, sum)
				}
				if again {
					continue
				}
			}
			if s.holdForInbox(ctx) {
				continue
			}
			return s.finish(ctx, s.summary(ctx, contract.StatusCompleted, res.Answer))
		}
	}
}

// turnOutcome says how the race between a turn, the duration timer and a cancel ended.
type turnOutcome int

const (
	turnDone turnOutcome = iota
	turnCancelled
	turnTimedOut
	// turnInterrupted: a person's message cancelled the turn; the session goes on.
	turnInterrupted
)

// turnStopped ends the session when a turn was cancelled or ran out of time, keeping what the
// turn did in the ledger first.
func (s *session) turnStopped(ctx workflow.Context, turn int, res contract.TurnResult, outcome turnOutcome) (contract.Summary, bool) {
	switch outcome {
	case turnCancelled:
		s.fold(ctx, turn, res, outcome)
		if s.tripped != "" {
			return s.limitSummary(ctx, s.tripped), true
		}
		return s.cancelledSummary(ctx, res.Partial), true
	case turnTimedOut:
		s.fold(ctx, turn, res, outcome)
		return s.limitSummary(ctx, contract.LimitDuration), true
	}
	return contract.Summary{}, false
}

// runTurn runs one AgentTurn child and races it against the duration deadline and a cancel.
// When either wins, the child is cancelled and awaited, so the session reports only once the
// tool's process group and the model stream are really gone.
func (s *session) runTurn(ctx workflow.Context, in contract.TurnInput, id string, deadline workflow.Future) (contract.TurnResult, turnOutcome) {
	childCtx, cancel := workflow.WithCancel(ctx)
	s.cancelTurn = cancel
	defer func() { s.cancelTurn = nil }()
	childCtx = workflow.WithChildOptions(childCtx, workflow.ChildWorkflowOptions{
		WorkflowID:          id,
		WaitForCancellation: true,
		ParentClosePolicy:   enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
		StaticSummary:       fmt.Sprintf("turn %d", in.Turn),
	})
	fut := workflow.ExecuteChildWorkflow(childCtx, contract.TurnWorkflow, in)

	outcome := turnDone
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(fut, func(workflow.Future) {})
	if deadline != nil {
		sel.AddFuture(deadline, func(workflow.Future) { outcome = turnTimedOut })
	}
	sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) { outcome = turnCancelled })
	sel.Select(ctx)
	if outcome == turnDone && s.cancelReq != nil {
		outcome = turnCancelled
	}
	if outcome != turnDone || !fut.IsReady() {
		cancel()
	}

	var res contract.TurnResult
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	err := fut.Get(dctx, &res)
	defer func() { s.interrupted = false }()
	switch {
	case s.cancelReq != nil || ctx.Err() != nil:
		return res, turnCancelled
	case outcome == turnTimedOut:
		return res, turnTimedOut
	case s.interrupted && (res.Cancelled || isCanceled(err)):
		s.interrupted = false
		return res, turnInterrupted
	case res.Cancelled || isCanceled(err):
		return res, turnCancelled
	case err != nil:
		return contract.TurnResult{Failure: &contract.Failure{Class: contract.ClassUnknown, Reason: "the turn failed: " + err.Error()}}, turnDone
	}
	return res, turnDone
}

func (s *session) turnInput(ctx workflow.Context, turn int) contract.TurnInput {
	builtin, tools := toolspec.Split(s.state.Tools)
	in := contract.TurnInput{
		SessionID:     workflow.GetInfo(ctx).WorkflowExecution.ID,
		Turn:          turn,
		TranscriptRef: s.state.TranscriptRef,
		BuiltinTools:  builtin,
		Tools:         tools,
		Settings:      s.in.Settings,
		Guards:        s.state.Guards,
		Compaction:    s.state.Compaction,
	}
	in.Sinks = s.sinks
	in.Watched = s.watched(ctx)
	in.WaitLimits = s.usageWaits
	in.LocalReads = s.localReads
	in.Delegate = s.delegateContext(ctx)
	return in
}

// eventsBeforeContinue continues a run as new before its history reaches 4,096 events, the point
// where the server starts suggesting it: the turn in flight when the suggestion comes still adds
// events, and a run should never pass the warning.
const eventsBeforeContinue = 3800

// shouldContinueAsNew says whether this run has done enough: the server suggests it, the run is
// close to the event bound, or the configured turns per run are done.
func (s *session) shouldContinueAsNew(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	return info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() >= eventsBeforeContinue ||
		(s.in.TurnsPerRun > 0 && s.turnsThisRun >= s.in.TurnsPerRun)
}

// continueAsNew starts a fresh run with the same state once the server suggests it, after every
// handler has finished.
func (s *session) continueAsNew(ctx workflow.Context) error {
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	s.drainSay(ctx)
	next := s.in
	st := s.state
	next.Carry = &st
	next.Sinks = s.sinks
	next.Watchers = s.runningLeases(ctx)
	return workflow.NewContinueAsNewError(ctx, contract.SessionWorkflow, next)
}

// finish waits for handlers and stamps the final status everywhere a person looks, Temporal's own
// included: a session that did not complete ends Canceled or Failed with a typed error carrying
// the summary (contract.EndError). Sessions whose histories predate typed ends
// (version DefaultVersion) complete with the summary as their result, as they did.
func (s *session) finish(ctx workflow.Context, sum contract.Summary) (contract.Summary, error) {
	sum.Transcript = &contract.Transcript{Head: s.state.Head, Pending: slices.Concat(s.state.Pending, s.state.Inbox)}
	sum.Events = s.state.Events
	sum.Changes = s.reviewChanges(ctx)
	sum.Branch = s.pushBranch(ctx, sum)
	s.status = sum.Status
	s.upsertSearch(ctx)
	s.setDetails(ctx, fmt.Sprintf("%s after %s", sum.Status, textfmt.Count(int64(sum.Turns), "turn")))
	_ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
	if sum.Status == contract.StatusCompleted {
		return sum, nil
	}
	if !s.takes(ctx, versionTypedEnds) {
		return sum, nil
	}
	return sum, contract.EndError(sum)
}

// reviewChanges lists what the session created, changed and deleted in its work directory and
// which of those files git would not show (the ReviewChanges activity), for the summary. It
// runs also when the session was cancelled, and a failure leaves the summary without the list
// rather than failing the session. Sessions whose histories predate it (version
// DefaultVersion) end as they did.
func (s *session) reviewChanges(ctx workflow.Context) *contract.Changes {
	if s.in.Workdir == "" || !s.takes(ctx, versionReviewChanges) {
		return nil
	}
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	actx := workflow.WithActivityOptions(dctx, reviewOptions())
	var ch contract.Changes
	req := contract.ReviewRequest{SessionID: workflow.GetInfo(ctx).WorkflowExecution.ID, Workdir: s.in.Workdir}
	if err := workflow.ExecuteActivity(actx, contract.ReviewChangesActivity, req).Get(actx, &ch); err != nil {
		workflow.GetLogger(ctx).Warn("listing the session's changes to its work directory", "error", err)
		return &contract.Changes{Note: "the files the session changed could not be listed"}
	}
	return &ch
}

// pushBranch sends the changes of a session that ran in a workspace made from git to the origin
// as the branch keel/<session> (the PushBranch activity), whatever way it ended: a session
// stopped half-way leaves its work where a person can pick it up. A failed push is a note in
// the summary, never the session's result. Sub-agents work in their parent's workspace, which
// the parent pushes.
func (s *session) pushBranch(ctx workflow.Context, sum contract.Summary) *contract.Branch {
	if s.in.Source == nil || s.in.Delegation != nil || !s.takes(ctx, versionPushBranch) {
		return nil
	}
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	actx := workflow.WithActivityOptions(dctx, pushOptions())
	req := contract.PushRequest{SessionID: id, Source: *s.in.Source, Message: commitMessage(id, s.in.Task, sum), At: workflow.Now(ctx).UTC()}
	var br contract.Branch
	if err := workflow.ExecuteActivity(actx, contract.PushBranchActivity, req).Get(actx, &br); err != nil {
		workflow.GetLogger(ctx).Warn("pushing the session's branch", "error", err)
		return &contract.Branch{Repo: s.in.Source.Repo, Name: contract.BranchName(id), Note: "the branch could not be pushed: " + textfmt.Clip(pushError(err), 500)}
	}
	return &br
}

// commitMessage is the message of the commit that carries a session's changes: its task's first
// line as the subject, then how it ended and its answer, bounded (contract.MaxCommitMessage).
func commitMessage(id, task string, sum contract.Summary) string {
	subject, _, _ := strings.Cut(strings.TrimSpace(task), "\n")
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nKeel session %s, %s after %s.", textfmt.Clip(subject, 72), id, sum.Status, textfmt.Count(int64(sum.Turns), "turn"))
	if sum.Answer != "" {
		b.WriteString("\n\n" + sum.Answer)
	}
	m := b.String()
	if len(m) > contract.MaxCommitMessage {
		m = strings.ToValidUTF8(m[:contract.MaxCommitMessage], "")
	}
	return m
}

// pushError is what the summary says of a push that failed: the activity's own message, without
// Temporal's wrapping.
func pushError(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Error()
	}
	return err.Error()
}

// addEvent keeps one session-level event, stamped with the session's ID and the workflow's time
// when its producer (a turn) did not stamp it, so every line of --output jsonl says when and where.
func (s *session) addEvent(ctx workflow.Context, e contract.Event) {
	if e.WorkflowID == "" {
		e.WorkflowID = workflow.GetInfo(ctx).WorkflowExecution.ID
	}
	if e.Time.IsZero() {
		e.Time = workflow.Now(ctx).UTC()
	}
	s.state.EventSeq++
	e.Seq = s.state.EventSeq
	s.state.Events = append(s.state.Events, e)
	if n := len(s.state.Events); n > contract.MaxKeptEvents {
		s.state.Events = slices.Clone(s.state.Events[n-contract.MaxKeptEvents:])
	}
}

// startDurationTimer returns a future that fires when the session's duration limit is reached,
// or nil when there is no limit.
func (s *session) startDurationTimer(ctx workflow.Context) (workflow.Future, func()) {
	if s.in.Limits.MaxDuration <= 0 {
		return nil, func() {}
	}
	left := s.in.Limits.MaxDuration.Std() - workflow.Now(ctx).Sub(s.state.StartedAt)
	if left < time.Millisecond {
		left = time.Millisecond
	}
	tctx, cancel := workflow.WithCancel(ctx)
	f := workflow.NewTimerWithOptions(tctx, left, workflow.TimerOptions{
		Summary: fmt.Sprintf("duration limit %s", s.in.Limits.MaxDuration),
	})
	return f, cancel
}
