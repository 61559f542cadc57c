// Package session is the client side of an AgentSession: starting one, asking where it is, and
// sending it answers, approval decisions, messages and the cancel, for the starter and the bots
// alike. Failures a caller acts on are typed: ErrNotFound, ErrEnded, ErrAlreadyAnswered and
// RefusedError, checked with errors.Is and errors.As, never by the server's wording.
package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/jsondur"
)

// Client talks to sessions through a Temporal client. The zero value is not usable; Temporal is
// required.
type Client struct {
	Temporal client.Client
}

// Start is what Start needs to start a session.
type Start struct {
	ID        string
	TaskQueue string
	// Task labels the session: its summary in the Web UI and the task a listing shows.
	Task string
	// Details is the session's details in the Web UI (markdown).
	Details string
	Input   contract.SessionInput
	// Job says the ID comes from a job key: a job that already ran is not run again.
	Job bool
	// Watcher is the watcher whose lease the session's input holds (SessionInput.Watchers), to
	// take by signal when the session was running already.
	Watcher string
	// Listed puts the task in the KeelTask search attribute, a column of the Web UI's list. It
	// is in clear there, so leave it false when payloads are encrypted.
	Listed bool
}

// Start starts a session, or attaches to the running one with the same ID (taking a lease on
// its live events for s.Watcher too). For a job that already ran, ran is true and run is that run, whose
// result says how it ended.
func (c Client) Start(ctx context.Context, s Start) (run client.WorkflowRun, ran bool, err error) {
	opts := client.StartWorkflowOptions{
		ID:                       s.ID,
		TaskQueue:                s.TaskQueue,
		StaticSummary:            s.Task,
		StaticDetails:            s.Details,
		Memo:                     map[string]any{taskMemo: s.Task},
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes:    contract.StartSearchAttributes(s.Input),
	}
	if s.Listed {
		opts.TypedSearchAttributes = contract.StartSearchAttributes(s.Input, contract.TaskKey.ValueSet(contract.ListedTask(s.Task)))
	}
	if s.Job {
		// An ended job is refused by the server (reject duplicate). The SDK would hide that refusal
		// and hand back the old run as if this call had started it; asking for the error is how the
		// caller learns the job already ran. A running job is still joined (use existing).
		opts.WorkflowIDReusePolicy = enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE
		opts.WorkflowExecutionErrorWhenAlreadyStarted = true
	}
	run, err = c.Temporal.ExecuteWorkflow(ctx, opts, contract.SessionWorkflow, s.Input)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	switch {
	case errors.As(err, &started) && s.Job:
		return c.Temporal.GetWorkflow(ctx, s.ID, ""), true, nil
	case err != nil:
		return nil, false, fmt.Errorf("starting the session: %w", err)
	}
	if s.Watcher != "" && s.Job {
		// A second starter of the same running job attaches to it: it takes its own lease. Other
		// sessions have fresh IDs, so this start made them and their input holds the lease
		// already; a signal would cost an action for nothing.
		_ = c.Watch(ctx, run.GetID(), contract.Watch{Watcher: s.Watcher, Lease: jsondur.Duration(contract.WatchLease)})
	}
	return run, false, nil
}

// Run is the handle of a session's current run, whose Get waits for its end.
func (c Client) Run(ctx context.Context, workflowID string) client.WorkflowRun {
	return c.Temporal.GetWorkflow(ctx, workflowID, "")
}

// Watch takes, renews or (with a zero lease) gives back a watcher's lease on a running
// session's live events.
func (c Client) Watch(ctx context.Context, workflowID string, w contract.Watch) error {
	if err := c.Temporal.SignalWorkflow(ctx, workflowID, "", contract.SignalWatch, w); err != nil {
		return fmt.Errorf("watching %s: %w", workflowID, c.classify(ctx, workflowID, err))
	}
	return nil
}

// KeepWatching renews watcher's lease on the session every half lease until stop is called,
// which gives the lease back (a watcher that vanishes without stopping loses it when it runs
// out). take sends the first lease now; a session started with the lease in its input needs
// none.
func (c Client) KeepWatching(ctx context.Context, workflowID, watcher string, take bool) (stop func()) {
	lease := contract.Watch{Watcher: watcher, Lease: jsondur.Duration(contract.WatchLease)}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if take {
			_ = c.Watch(ctx, workflowID, lease)
		}
		t := time.NewTicker(contract.WatchLease / 2)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				_ = c.Watch(ctx, workflowID, lease)
			}
		}
	}()
	return func() {
		cancel()
		<-done
		// Given back only when the session still runs: a signal to an ended one fails anyway.
		dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if d, err := c.Temporal.DescribeWorkflow(dctx, workflowID, ""); err == nil && d.RawResponse.GetWorkflowExecutionInfo().GetCloseTime() == nil {
			_ = c.Watch(dctx, workflowID, contract.Watch{Watcher: watcher})
		}
	}
}

// NewWatcher is a fresh watcher name.
func NewWatcher() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Answer sends the answer as the session's update and waits for its outcome, so the sender learns
// whether it won. The update ID is derived from the escalation, the action, the text and the
// person, so a repeated delivery of the same answer (a redelivered click, a bot restart) is
// deduplicated by the server instead of being applied twice. A session that rejects the answer
// returns a *RefusedError (errors.Is ErrAlreadyAnswered when someone answered first); one that
// has ended, ErrEnded.
func (c Client) Answer(ctx context.Context, workflowID string, a contract.Answer) (contract.AnswerResult, error) {
	return c.AnswerAs(ctx, workflowID, answerUpdateID(a), a)
}

// AnswerAs is Answer under the caller's update ID (a bot that names an update after the message
// that asked for it, so a redelivered message is one update); "" lets the SDK pick a fresh one.
func (c Client) AnswerAs(ctx context.Context, workflowID, updateID string, a contract.Answer) (contract.AnswerResult, error) {
	return c.update(ctx, workflowID, "answer", client.UpdateWorkflowOptions{
		UpdateID: updateID, UpdateName: contract.UpdateAnswerEscalation, Args: []any{a},
	})
}

// Approve sends the approve_call update and waits for its outcome. The session accepts only a
// decision on the call waiting right now, with the digest of its exact arguments, and only once;
// anything else is a *RefusedError with the reason. The update ID is derived from the decision, so
// the same decision delivered twice (a redelivered click) is one update.
func (c Client) Approve(ctx context.Context, workflowID string, d contract.ApprovalDecision) (contract.AnswerResult, error) {
	return c.ApproveAs(ctx, workflowID, approveUpdateID(d), d)
}

// ApproveAs is Approve under the caller's update ID. With "" every call is a new update: a person
// who sends the decision again after the call was decided is told so, rather than handed the first
// result as if it were new.
func (c Client) ApproveAs(ctx context.Context, workflowID, updateID string, d contract.ApprovalDecision) (contract.AnswerResult, error) {
	return c.update(ctx, workflowID, "approval", client.UpdateWorkflowOptions{
		UpdateID: updateID, UpdateName: contract.UpdateApproveCall, Args: []any{d},
	})
}

// update sends one update that returns an AnswerResult and waits for its outcome.
func (c Client) update(ctx context.Context, workflowID, what string, opts client.UpdateWorkflowOptions) (contract.AnswerResult, error) {
	opts.WorkflowID, opts.WaitForStage = workflowID, client.WorkflowUpdateStageCompleted
	h, err := c.Temporal.UpdateWorkflow(ctx, opts)
	if err != nil {
		return contract.AnswerResult{}, fmt.Errorf("sending the %s update to %s: %w", what, workflowID, c.classify(ctx, workflowID, err))
	}
	var res contract.AnswerResult
	if err := h.Get(ctx, &res); err != nil {
		if r := refusal(err); r != nil {
			return contract.AnswerResult{}, r
		}
		return contract.AnswerResult{}, fmt.Errorf("waiting for the %s update of %s: %w", what, workflowID, c.classify(ctx, workflowID, err))
	}
	return res, nil
}

// Cancel sends the cancel signal: the session stops its work and ends as cancelled.
func (c Client) Cancel(ctx context.Context, workflowID string, req contract.CancelRequest) error {
	if err := c.Temporal.SignalWorkflow(ctx, workflowID, "", contract.SignalCancel, req); err != nil {
		return fmt.Errorf("sending the cancel signal to %s: %w", workflowID, c.classify(ctx, workflowID, err))
	}
	return nil
}

// Say sends a person's message as the session's say update and waits until the session took it.
// A refusal (the text is empty or too long, the session is ending) is a *RefusedError; a session
// that has ended, ErrEnded. The SDK gives the update one ID for all its own retries, so the message
// is added once.
func (c Client) Say(ctx context.Context, workflowID string, m contract.Say) (contract.SayResult, error) {
	return c.SayAs(ctx, workflowID, "", m)
}

// SayAs is Say under the caller's update ID, so a message delivered twice is added once.
func (c Client) SayAs(ctx context.Context, workflowID, updateID string, m contract.Say) (contract.SayResult, error) {
	h, err := c.Temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		UpdateID:     updateID,
		WorkflowID:   workflowID,
		UpdateName:   contract.UpdateSay,
		Args:         []any{m},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return contract.SayResult{}, fmt.Errorf("sending the say update to %s: %w", workflowID, c.classify(ctx, workflowID, err))
	}
	var res contract.SayResult
	if err := h.Get(ctx, &res); err != nil {
		if r := refusal(err); r != nil {
			return contract.SayResult{}, r
		}
		return contract.SayResult{}, fmt.Errorf("waiting for the say update of %s: %w", workflowID, c.classify(ctx, workflowID, err))
	}
	if !res.Accepted {
		return contract.SayResult{}, &RefusedError{Message: res.Message}
	}
	return res, nil
}

// Status asks the session where it is. A session that has ended is read from its history, so no
// worker needs to run to say how it ended.
func (c Client) Status(ctx context.Context, workflowID string) (contract.SessionStatus, error) {
	if sum, ended, err := c.Ended(ctx, workflowID); err != nil {
		return contract.SessionStatus{}, err
	} else if ended {
		return contract.SessionStatus{
			Status: sum.Status, Turn: sum.Turns, Usage: sum.Usage, Events: sum.Events,
			Counters: contract.Counters{ToolCalls: sum.ToolCalls, BlockedCalls: sum.BlockedCalls, GatewayCalls: sum.GatewayCalls, GatewayAttempts: sum.GatewayAttempts},
		}, nil
	}
	return c.LiveStatus(ctx, workflowID)
}

// LiveStatus queries a running session's status (one billed action, and a worker must answer).
func (c Client) LiveStatus(ctx context.Context, workflowID string) (contract.SessionStatus, error) {
	var st contract.SessionStatus
	err := c.query(ctx, workflowID, contract.QueryStatus, "the status", &st)
	return st, err
}

// Transcript queries a running session's transcript head and the messages not stored yet.
func (c Client) Transcript(ctx context.Context, workflowID string) (contract.Transcript, error) {
	var tr contract.Transcript
	err := c.query(ctx, workflowID, contract.QueryTranscript, "the transcript", &tr)
	return tr, err
}

// TurnStep asks the session's turn what it runs now (its model call or a tool call).
func (c Client) TurnStep(ctx context.Context, workflowID string, turn int) (contract.TurnStep, error) {
	var step contract.TurnStep
	err := c.query(ctx, contract.TurnWorkflowID(workflowID, turn), contract.QueryTurnStep, "the step", &step)
	return step, err
}

// query runs one query and decodes its answer into out.
func (c Client) query(ctx context.Context, workflowID, name, what string, out any) error {
	v, err := c.Temporal.QueryWorkflow(ctx, workflowID, "", name)
	if err != nil {
		return fmt.Errorf("querying %s of %s: %w", what, workflowID, c.classify(ctx, workflowID, err))
	}
	if err := v.Get(out); err != nil {
		return fmt.Errorf("decoding %s of %s: %w", what, workflowID, err)
	}
	return nil
}

// Ended reads how a session ended from its history, with no worker involved; ended is false while
// it runs. A session terminated or timed out by Temporal has no summary and is an error naming that.
func (c Client) Ended(ctx context.Context, workflowID string) (sum contract.Summary, ended bool, err error) {
	d, err := c.Temporal.DescribeWorkflow(ctx, workflowID, "")
	if err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			err = &kindError{kind: ErrNotFound, err: err}
		}
		return sum, false, fmt.Errorf("querying the status of %s: %w", workflowID, err)
	}
	status := d.RawResponse.GetWorkflowExecutionInfo().GetStatus()
	if status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return sum, false, nil
	}
	err = c.Temporal.GetWorkflow(ctx, workflowID, "").Get(ctx, &sum)
	if s, ok := contract.EndedSummary(err); ok {
		return s, true, nil
	}
	if err != nil {
		return sum, true, fmt.Errorf("session %s ended %s without a summary: %w", workflowID, status, err)
	}
	return sum, true, nil
}

// TerminateOnQueue terminates the session when its current run is on taskQueue, and says whether
// it did. A starter whose own worker is the only one on that queue uses it before it leaves: the
// session would otherwise wait forever.
func (c Client) TerminateOnQueue(ctx context.Context, workflowID, taskQueue, reason string) (bool, error) {
	d, err := c.Temporal.DescribeWorkflow(ctx, workflowID, "")
	if err != nil {
		return false, fmt.Errorf("describing %s: %w", workflowID, err)
	}
	if d.RawResponse.GetExecutionConfig().GetTaskQueue().GetName() != taskQueue {
		return false, nil
	}
	if err := c.Temporal.TerminateWorkflow(ctx, workflowID, "", reason); err != nil {
		return false, fmt.Errorf("terminating %s: %w", workflowID, c.classify(ctx, workflowID, err))
	}
	return true, nil
}

// answerUpdateID names an answer so that the same answer sent twice is one update.
func answerUpdateID(a contract.Answer) string {
	return "answer/" + a.EscalationID + "/" + contract.Digest(a.Action + "\x00" + a.Text + "\x00" + a.By)[:16]
}

// approveUpdateID names a decision so that the same decision sent twice is one update.
func approveUpdateID(d contract.ApprovalDecision) string {
	text := fmt.Sprintf("%s\x00%t\x00%s", d.Digest, d.Approve, d.By)
	if d.Reason != "" {
		text += "\x00" + d.Reason
	}
	if d.AllowFor != "" {
		text += "\x00allow:" + d.AllowFor
	}
	return "approve/" + d.CallID + "/" + contract.Digest(text)[:16]
}
