package session

import (
	"context"
	"errors"

	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/contract"
)

// Answerer delivers answers and commands to sessions. TemporalAnswerer is the real one; the Slack
// bot only knows this interface, so it never holds workflow code or a second answer path.
type Answerer interface {
	Answer(ctx context.Context, workflowID string, a contract.Answer) (contract.AnswerResult, error)
	// Approve approves or denies the tool call a session waits on (the approve_call update).
	Approve(ctx context.Context, workflowID string, d contract.ApprovalDecision) (contract.AnswerResult, error)
	Cancel(ctx context.Context, workflowID string, req contract.CancelRequest) error
	// Say adds a person's message to a running session (the say update).
	Say(ctx context.Context, workflowID string, m contract.Say) (contract.SayResult, error)
	Status(ctx context.Context, workflowID string) (contract.SessionStatus, error)
}

// TemporalAnswerer is the Answerer of the bots: the session client over a Temporal client, with
// a session's refusal reported as a result (AnswerResult{Accepted: false} or SayResult with the
// reason), so a bot shows it to the person who clicked. Only a failure to reach the session is an
// error, typed as the session client types it (ErrEnded, ErrNotFound).
type TemporalAnswerer struct {
	Client client.Client
}

func (t TemporalAnswerer) sessions() Client { return Client{Temporal: t.Client} }

// Answer sends the answer update; the same answer delivered twice is one update.
func (t TemporalAnswerer) Answer(ctx context.Context, workflowID string, a contract.Answer) (contract.AnswerResult, error) {
	return refusedResult(t.sessions().Answer(ctx, workflowID, a))
}

// Approve sends the approve_call update; the same decision delivered twice is one update.
func (t TemporalAnswerer) Approve(ctx context.Context, workflowID string, d contract.ApprovalDecision) (contract.AnswerResult, error) {
	return refusedResult(t.sessions().Approve(ctx, workflowID, d))
}

// Cancel sends the cancel signal: the session stops its work and ends as cancelled.
func (t TemporalAnswerer) Cancel(ctx context.Context, workflowID string, req contract.CancelRequest) error {
	return t.sessions().Cancel(ctx, workflowID, req)
}

// Say adds a person's message to a running session; a refusal comes back as the result's message.
func (t TemporalAnswerer) Say(ctx context.Context, workflowID string, m contract.Say) (contract.SayResult, error) {
	return refusedSay(t.sessions().Say(ctx, workflowID, m))
}

// AnswerAs, ApproveAs and SayAs are Answer, Approve and Say under the caller's update ID: a bot
// names the update after the message that asked for it (a pull request comment), so that message
// is one update however often it is delivered, even once the session has moved on.
func (t TemporalAnswerer) AnswerAs(ctx context.Context, workflowID, updateID string, a contract.Answer) (contract.AnswerResult, error) {
	return refusedResult(t.sessions().AnswerAs(ctx, workflowID, updateID, a))
}

// ApproveAs is Approve under the caller's update ID (see AnswerAs).
func (t TemporalAnswerer) ApproveAs(ctx context.Context, workflowID, updateID string, d contract.ApprovalDecision) (contract.AnswerResult, error) {
	return refusedResult(t.sessions().ApproveAs(ctx, workflowID, updateID, d))
}

// SayAs is Say under the caller's update ID (see AnswerAs).
func (t TemporalAnswerer) SayAs(ctx context.Context, workflowID, updateID string, m contract.Say) (contract.SayResult, error) {
	return refusedSay(t.sessions().SayAs(ctx, workflowID, updateID, m))
}

// Status asks the session where it is; an ended session is read from its history.
func (t TemporalAnswerer) Status(ctx context.Context, workflowID string) (contract.SessionStatus, error) {
	return t.sessions().Status(ctx, workflowID)
}

// refusedResult reports a session's refusal as a result that is not accepted.
func refusedResult(res contract.AnswerResult, err error) (contract.AnswerResult, error) {
	if r, ok := errors.AsType[*RefusedError](err); ok {
		return contract.AnswerResult{Accepted: false, Message: r.Message}, nil
	}
	return res, err
}

// refusedSay reports a session's refusal of a message as the result's message.
func refusedSay(res contract.SayResult, err error) (contract.SayResult, error) {
	if r, ok := errors.AsType[*RefusedError](err); ok {
		return contract.SayResult{Message: r.Message}, nil
	}
	return res, err
}
