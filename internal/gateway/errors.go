package gateway

import (
	"fmt"
	"net/http"
)

// TruncatedError reports a stream that ended without its terminator (OpenAI: no finish_reason
// or no [DONE]; Anthropic: no message_stop). Whether it may be retried depends on how many
// deltas the user already saw, which only the caller knows, so Classify takes that count.
type TruncatedError struct {
	Provider string
	// Err is the read error that ended the stream, nil if the server closed it cleanly.
	Err error
}

// Error describes the failure for logs.
func (e *TruncatedError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s stream ended without its terminator: %v", e.Provider, e.Err)
	}
	return fmt.Sprintf("%s stream ended without its terminator", e.Provider)
}

// Unwrap exposes the underlying error, so errors.Is and errors.As see through it.
func (e *TruncatedError) Unwrap() error { return e.Err }

// Truncated reports true, so callers can ask the question without naming the type.
func (e *TruncatedError) Truncated() bool { return true }

// SchemaError reports a successful response whose body or chunk does not parse or does not fit
// the expected shape. It is retried once, with a stricter instruction.
type SchemaError struct {
	Provider string
	Detail   string
	Err      error
}

// Error describes the failure for logs.
func (e *SchemaError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s reply has an unexpected shape: %s: %v", e.Provider, e.Detail, e.Err)
	}
	return fmt.Sprintf("%s reply has an unexpected shape: %s", e.Provider, e.Detail)
}

// Unwrap exposes the underlying error, so errors.Is and errors.As see through it.
func (e *SchemaError) Unwrap() error { return e.Err }

// RefusalError reports that the model declined the request. Retrying would get the same answer;
// the request has to be re-scoped by a person.
type RefusalError struct {
	Provider string
	// Reason is the refusal text the model sent, or the stop reason that signalled it.
	Reason string
}

// Error describes the refusal for logs.
func (e *RefusalError) Error() string {
	return fmt.Sprintf("%s model refused: %s", e.Provider, e.Reason)
}

// StatusError reports an HTTP error status whose body the SDK could not turn into its own error
// type (an odd body), so that the status code and headers still reach Classify.
type StatusError struct {
	Provider   string
	StatusCode int
	Header     http.Header
	// Body is the start of the response body, for the user message and for error types.
	Body string
	Err  error
}

// Error describes the failure for logs.
func (e *StatusError) Error() string {
	return fmt.Sprintf("%s gateway answered HTTP %d: %v", e.Provider, e.StatusCode, e.Err)
}

// Unwrap exposes the underlying error, so errors.Is and errors.As see through it.
func (e *StatusError) Unwrap() error { return e.Err }

// EventError reports a failure the gateway sent inside a successful (HTTP 200) event stream: an
// OpenAI Responses `error` event, or a response that ended with status failed. Code is the
// provider's error code (server_error, rate_limit_exceeded, ...), which Classify reads the way it
// reads the error type of an HTTP error.
type EventError struct {
	Provider string
	// Event is the event type that carried the failure.
	Event   string
	Code    string
	Message string
}

// Error describes the failure for logs.
func (e *EventError) Error() string {
	return fmt.Sprintf("%s stream reported a failure (%s): %s: %s", e.Provider, e.Event, e.Code, e.Message)
}
