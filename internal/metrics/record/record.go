// Package record names Keel's own metrics and records them through the Temporal SDK's metrics
// handler. It is pure (no I/O), so workflow code can use it with workflow.GetMetricsHandler, which
// skips recording during replay.
package record

import (
	"time"

	"go.temporal.io/sdk/client"
)

// Names of Keel's metrics, exactly as a scrape of /metrics shows them (see the package doc).
const (
	ModelAttempts   = "keel_model_attempts_total"
	ModelRetries    = "keel_model_retries_total"
	ModelRetryWait  = "keel_model_retry_wait_seconds"
	ToolCalls       = "keel_tool_calls_total"
	BreakerOpen     = "keel_breaker_open"
	LimitsTripped   = "keel_limits_tripped_total"
	Escalations     = "keel_escalations_total"
	EscalationsOpen = "keel_escalations_open"
	Tokens          = "keel_tokens_total"
)

// Tag (label) names of Keel's metrics.
const (
	TagClass   = "class"
	TagOutcome = "outcome"
	TagTool    = "tool"
	TagKey     = "key"
	TagLimit   = "limit"
	TagReason  = "reason"
	TagKind    = "kind"
)

// Outcomes of a model attempt. The class tag is a failure class from the contract package, or
// ClassNone for an attempt that succeeded.
const (
	AttemptOK        = "ok"
	AttemptRetry     = "retry"
	AttemptSurfaced  = "surfaced"
	AttemptCancelled = "cancelled"
	// AttemptFallback is a failed attempt whose call went on to the next model of the fallback chain.
	AttemptFallback = "fallback"
)

// ClassNone is the class tag of a model attempt that did not fail.
const ClassNone = "none"

// Outcomes of a tool call.
const (
	ToolOK        = "ok"
	ToolError     = "error"
	ToolBlocked   = "blocked"
	ToolUnknown   = "unknown"
	ToolCancelled = "cancelled"
)

// Token kinds.
const (
	TokensInput  = "input"
	TokensOutput = "output"
)

// Handler is the SDK's metrics handler interface, as returned by workflow.GetMetricsHandler and
// activity.GetMetricsHandler, so every helper works in both kinds of code.
type Handler = client.MetricsHandler

// ModelAttempt counts one model attempt of a failure class (ClassNone when it succeeded) and its
// outcome (AttemptOK, AttemptRetry, AttemptSurfaced, AttemptCancelled, AttemptFallback).
func ModelAttempt(h Handler, class, outcome string) {
	if class == "" {
		class = ClassNone
	}
	h.WithTags(map[string]string{TagClass: class, TagOutcome: outcome}).Counter(ModelAttempts).Inc(1)
}

// ModelRetry counts one retry of a model call and the wait chosen before it.
func ModelRetry(h Handler, class string, wait time.Duration) {
	th := h.WithTags(map[string]string{TagClass: class})
	th.Counter(ModelRetries).Inc(1)
	th.Timer(ModelRetryWait).Record(wait)
}

// ToolCall counts one tool call and its outcome (ToolOK, ToolError, ToolBlocked, ToolUnknown,
// ToolCancelled).
func ToolCall(h Handler, tool, outcome string) {
	h.WithTags(map[string]string{TagTool: tool, TagOutcome: outcome}).Counter(ToolCalls).Inc(1)
}

// Breaker records whether the circuit breaker for key (a tool or tool server) is open.
func Breaker(h Handler, key string, open bool) {
	v := 0.0
	if open {
		v = 1
	}
	h.WithTags(map[string]string{TagKey: key}).Gauge(BreakerOpen).Update(v)
}

// LimitTripped counts a hard limit (contract.LimitTurns, LimitDuration, LimitTokens) that tripped.
func LimitTripped(h Handler, limit string) {
	h.WithTags(map[string]string{TagLimit: limit}).Counter(LimitsTripped).Inc(1)
}

// EscalationRaised counts an escalation by reason and adds it to the open escalations.
func EscalationRaised(h Handler, reason string) {
	h.WithTags(map[string]string{TagReason: reason}).Counter(Escalations).Inc(1)
	h.Counter(EscalationsOpen).Inc(1)
}

// EscalationClosed takes an answered (or abandoned) escalation off the open escalations.
func EscalationClosed(h Handler) {
	h.Counter(EscalationsOpen).Inc(-1)
}

// TokensUsed counts the input and output tokens of a model reply; zero counts record nothing.
func TokensUsed(h Handler, input, output int64) {
	if input > 0 {
		h.WithTags(map[string]string{TagKind: TokensInput}).Counter(Tokens).Inc(input)
	}
	if output > 0 {
		h.WithTags(map[string]string{TagKind: TokensOutput}).Counter(Tokens).Inc(output)
	}
}
