package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"

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
	msgAuth          = "the gateway refused the API key"
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
	host := hostOf(err)
	if f, ok := apiFailureOf(err); ok {
		return withHost(classifyAPI(f), host, f.status)
	}
	if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
		return retry(contract.ClassTransport, at(msgTimeout, host), 0)
	}
	var dns *net.DNSError
	switch {
	case errors.As(err, &dns) && dns.IsNotFound:
		return retry(contract.ClassTransport, fmt.Sprintf("cannot resolve the gateway host %s: check gateway.base_url", orName(host, dns.Name)), 0)
	case errors.Is(err, syscall.ECONNREFUSED):
		return retry(contract.ClassTransport, fmt.Sprintf("nothing answers at %s (connection refused): check gateway.base_url and that the gateway runs", orName(host, "the gateway")), 0)
	case isNetwork(err):
		return retry(contract.ClassTransport, at(msgNetwork, host), 0)
	}
	return unknown(at("unrecognised gateway failure", host) + ": " + err.Error())
}

// hostOf names the host a failed request went to, when the error says.
func hostOf(err error) string {
	var (
		ue *url.Error
		oe *openai.Error
		ae *anthropic.Error
	)
	switch {
	case errors.As(err, &oe) && oe.Request != nil && oe.Request.URL != nil:
		return oe.Request.URL.Host
	case errors.As(err, &ae) && ae.Request != nil && ae.Request.URL != nil:
		return ae.Request.URL.Host
	case errors.As(err, &ue):
		if u, perr := url.Parse(ue.URL); perr == nil {
			return u.Host
		}
	}
	return ""
}

// at adds the host to a message, when it is known.
func at(msg, host string) string {
	if host == "" {
		return msg
	}
	return msg + " (gateway " + host + ")"
}

func orName(host, name string) string {
	if host != "" {
		return host
	}
	return name
}

// withHost names the gateway host in a diagnosis of a status the gateway answered, with the likely
// fix for the statuses a wrong configuration causes.
func withHost(d Diagnosis, host string, status int) Diagnosis {
	d.Message = at(d.Message, host)
	switch status {
	case http.StatusNotFound:
		d.Message += ": the base URL or the model name is likely wrong (check gateway.base_url and gateway.model)"
	case http.StatusUnauthorized, http.StatusForbidden:
		d.Message += ": " + authFix
	}
	return d
}

// classifyAPI sorts an error the gateway itself reported, by status and error type.
func classifyAPI(f apiFailure) Diagnosis {
	after, ok := ParseRetryAfter(f.header, now())
	if !ok && (f.status == http.StatusTooManyRequests || f.kind == "rate_limit_error" || f.code == "rate_limit_exceeded") {
		// Without Retry-After, a refused request's exhausted limit says when it resets.
		after, _ = ParseReset(f.header, now())
	}
	switch {
	case f.isBudget():
		return Diagnosis{Class: contract.ClassBudget, Handling: Surface, Message: msgBudget}
	case f.isAuth():
		return Diagnosis{Class: contract.ClassAuth, Handling: Surface, Message: fmt.Sprintf("%s (%s)", msgAuth, f.describe())}
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

// authFix names the setting that holds the key a refused request sent. For a session with its own
// endpoint the activity rewords it to the session's key (activities' reword).
const authFix = "check gateway.api_key, the key the worker sends"

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
