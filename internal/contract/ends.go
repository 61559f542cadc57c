package contract

import (
	"errors"

	"go.temporal.io/sdk/temporal"
)

// Error types of a session that ended without completing. Temporal shows the session as Failed
// with one of these as the failure's type, so the Web UI, `temporal workflow list` and the starter
// agree on how it ended. A cancelled session ends Canceled instead.
const (
	EndAborted = "KeelSessionAborted"
	EndFailed  = "KeelSessionFailed"
	EndLimit   = "KeelSessionLimitReached"
)

// EndError is what a session returns when it did not complete: a cancellation for a cancelled
// session, otherwise a non-retryable application error whose type names the outcome. Either way the
// summary travels in the error's details, so `starter` still prints it (see EndedSummary).
func EndError(sum Summary) error {
	var typ string
	switch sum.Status {
	case StatusCompleted:
		return nil
	case StatusCancelled:
		return temporal.NewCanceledError(sum)
	case StatusAborted:
		typ = EndAborted
	case StatusLimit:
		typ = EndLimit
	default:
		typ = EndFailed
	}
	msg := sum.Reason
	if msg == "" {
		msg = "session " + sum.Status
	}
	return temporal.NewApplicationErrorWithOptions(msg, typ, temporal.ApplicationErrorOptions{
		NonRetryable: true,
		Details:      []any{sum},
	})
}

// EndedSummary reads the summary back from a session's end error (as a client's Get returns it).
// It reports false for any other error: a terminated session, a timeout, a lost connection.
func EndedSummary(err error) (Summary, bool) {
	var sum Summary
	var canceled *temporal.CanceledError
	if errors.As(err, &canceled) && canceled.HasDetails() && canceled.Details(&sum) == nil && sum.Status != "" {
		return sum, true
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) && isEndType(app.Type()) && app.HasDetails() && app.Details(&sum) == nil {
		return sum, true
	}
	return Summary{}, false
}

func isEndType(t string) bool {
	return t == EndAborted || t == EndFailed || t == EndLimit
}
