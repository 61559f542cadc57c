// Package gateway talks to model gateways and decides what a failed model call means.
//
// It holds three provider clients (OpenAI-compatible chat completions, OpenAI Responses and
// Anthropic Messages) behind one Provider interface, and the pure failure-handling logic of the CallModel activity:
// Classify sorts an error into a failure class and a handling, Backoff computes equal-jitter
// waits, and ParseRetryAfter reads a server's requested floor. The package knows nothing of
// Temporal, so the same logic can be tested with plain HTTP servers and reused by any caller.
package gateway
