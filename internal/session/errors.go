package session

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"

	"github.com/keelrun/keel/internal/contract"
)

// Sentinel errors a caller tells apart with errors.Is instead of reading the server's wording.
var (
	// ErrNotFound: no session has this workflow ID (in this namespace, within retention).
	ErrNotFound = errors.New("no such session")
	// ErrEnded: the session has ended, so it takes no answer, decision, message or cancel.
	ErrEnded = errors.New("the session has ended")
	// ErrAlreadyAnswered: the escalation was answered, or the tool call decided, before this
	// answer or decision arrived. A RefusedError says so too.
	ErrAlreadyAnswered = errors.New("already answered")
)

// RefusedError is a running session's refusal of an answer, an approval decision or a message:
// the session was reached and said no, with the reason in its own words.
type RefusedError struct {
	// Message is the session's reason, meant for the person who sent it.
	Message string
	// Type is the refusal's kind when the session named one (contract.RefusalAlreadyAnswered).
	Type string
}

func (e *RefusedError) Error() string { return e.Message }

// Is makes errors.Is(err, ErrAlreadyAnswered) hold for a refusal of that kind.
func (e *RefusedError) Is(target error) bool {
	return target == ErrAlreadyAnswered && e.Type == contract.RefusalAlreadyAnswered
}

// kindError keeps the wording of the error it wraps and adds one of the sentinels, so the message a
// person reads stays the server's while code asks errors.Is.
type kindError struct {
	kind error
	err  error
}

func (e *kindError) Error() string   { return e.err.Error() }
func (e *kindError) Unwrap() []error { return []error{e.kind, e.err} }

// refusal turns an update's failure into a RefusedError when the workflow rejected it (validator or
// handler), or returns nil when the failure is something else.
func refusal(err error) *RefusedError {
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) {
		return nil
	}
	return &RefusedError{Message: appErr.Message(), Type: appErr.Type()}
}

// describeWait bounds the describe that tells an ended session from a missing one.
const describeWait = 5 * time.Second

// classify marks a failure to reach a session as ErrNotFound or ErrEnded. The server answers a
// signal or update to an ended session with the same NotFound as one to no session at all, so a
// NotFound is told apart by describing the workflow: one that can be described has ended.
func (c Client) classify(ctx context.Context, workflowID string, err error) error {
	var nf *serviceerror.NotFound
	if err == nil || !errors.As(err, &nf) {
		return err
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), describeWait)
	defer cancel()
	if _, derr := c.Temporal.DescribeWorkflow(dctx, workflowID, ""); derr == nil {
		return &kindError{kind: ErrEnded, err: err}
	}
	return &kindError{kind: ErrNotFound, err: err}
}
