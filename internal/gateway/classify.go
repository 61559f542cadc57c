package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/contract"
)

// Handling is what the caller does with a failed attempt.
type Handling int

// The three handlings of a gateway failure. The zero value is Surface, so a Diagnosis built by
// mistake fails closed.
const (
	// Surface tells a person; the attempt is not repeated.
	Surface Handling = iota
	// Retry tries again after a backoff, because a later moment may work.
	Retry
	// Stop ends the call without counting it as a failure: the user cancelled.
	Stop
)

// String names the handling for logs and events.
func (h Handling) String() string {
	switch h {
	case Retry:
		return "retry"
	case Stop:
		return "stop"
	default:
		return "surface"
	}
}

// Diagnosis is what Classify concludes about one failed attempt.
type Diagnosis struct {
	// Class is one of the contract.Class* failure classes.
	Class    string
	Handling Handling
	// RetryAfter is the wait the server asked for, a floor on the backoff; 0 if none.
	RetryAfter time.Duration
	// Message is one line for the user.
	Message string
}

// Messages of the diagnoses, one line each, written for the person watching the session.
const (
	msgCancelled     = "cancelled"
	msgRateLimited   = "gateway rate limited"
	msgOverloaded    = "gateway overloaded"
	msgBudget        = "the gateway's quota or spend limit is exhausted"
	msgRefusal       = "the model declined the request"
	msgSchema        = "the gateway sent a reply that does not parse"
	msgTruncated     = "the stream was cut mid-way; a retry would repeat the passage"
	msgDiedAtStart   = "the stream died at the start"
	msgNetwork       = "network blip"
	msgTimeout       = "the gateway did not answer in time"
	maxMessageLength = 200
)

// now is the clock Retry-After dates are read against.
var now = time.Now

// Classify sorts a failed attempt into a failure class and a handling. deltas is the number of
// text deltas this attempt already published: once the user has seen output, the attempt is
// never retried (the emitted rule), because a retry would show the same text twice. A failure
// that would otherwise be retried is then reported as truncated and surfaced, so the caller
// keeps the partial text and stops.
func Classify(err error, deltas int) Diagnosis {
	d := classify(err, deltas)
	if deltas > 0 && d.Handling == Retry {
		return Diagnosis{Class: contract.ClassTruncated, Handling: Surface, Message: msgTruncated}
	}
	return d
}

// AttemptCap is how many attempts a failure class gets in all, first attempt included.
func AttemptCap(class string) int {
	switch class {
	case contract.ClassTransport:
		return 4
	case contract.ClassThrottle:
		return 6
	case contract.ClassSchema:
		return 2
	default:
		return 1
	}
}

// classify applies the failure table, without the emitted rule.
func classify(err error, deltas int) Diagnosis {
	var (
		truncated *TruncatedError
		schema    *SchemaError
		refusal   *RefusalError
	)
	switch {
	case err == nil:
		return unknown("no error to classify")
	case errors.Is(err, context.Canceled):
		return Diagnosis{Class: contract.ClassCancelled, Handling: Stop, Message: msgCancelled}
	case errors.As(err, &refusal):
		return Diagnosis{Class: contract.ClassRefusal, Handling: Surface, Message: msgRefusal}
	case errors.As(err, &truncated):
		if deltas > 0 {
			return Diagnosis{Class: contract.ClassTruncated, Handling: Surface, Message: msgTruncated}
		}
		return retry(contract.ClassTransport, msgDiedAtStart, 0)
	case errors.As(err, &schema):
		return retry(contract.ClassSchema, msgSchema, 0)
	}
	if f, ok := apiFailureOf(err); ok {
		return classifyAPI(f)
	}
	if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
		return retry(contract.ClassTransport, msgTimeout, 0)
	}
	if isNetwork(err) {
		return retry(contract.ClassTransport, msgNetwork, 0)
	}
	return unknown("unrecognised gateway failure: " + err.Error())
}

// classifyAPI sorts an error the gateway itself reported, by status and error type.
func classifyAPI(f apiFailure) Diagnosis {
	after, _ := ParseRetryAfter(f.header, now())
	switch {
	case f.isBudget():
		return Diagnosis{Class: contract.ClassBudget, Handling: Surface, Message: msgBudget}
	case f.status == http.StatusTooManyRequests || f.kind == "rate_limit_error" || f.code == "rate_limit_exceeded":
		return retry(contract.ClassThrottle, msgRateLimited, after)
	case f.status == 529 || f.kind == "overloaded_error":
		return retry(contract.ClassThrottle, msgOverloaded, after)
	case f.status >= 500, f.status == http.StatusRequestTimeout,
		f.kind == "api_error", f.kind == "server_error", f.kind == "timeout_error":
		return retry(contract.ClassTransport, fmt.Sprintf("gateway failed (%s)", f.describe()), after)
	default:
		return unknown(fmt.Sprintf("unrecognised gateway failure (%s)", f.describe()))
	}
}

// retry builds a retryable diagnosis.
func retry(class, msg string, after time.Duration) Diagnosis {
	return Diagnosis{Class: class, Handling: Retry, RetryAfter: after, Message: msg}
}

// unknown fails closed: an error nobody classified is a missing branch, not a blip.
func unknown(msg string) Diagnosis {
	return Diagnosis{Class: contract.ClassUnknown, Handling: Surface, Message: oneLine(msg)}
}

// oneLine flattens and shortens text for a one-line user message.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxMessageLength {
		s = s[:maxMessageLength-3] + "..."
	}
	return s
}
