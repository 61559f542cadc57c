package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// apiFailure is an error the gateway reported itself, in one shape for both providers.
type apiFailure struct {
	status  int
	header  http.Header
	kind    string // the error type: rate_limit_error, overloaded_error, insufficient_quota, ...
	code    string // the error code, where the provider sends one
	message string
	body    string
}

// budgetKinds are error types and codes that mean money or quota, not load.
var budgetKinds = map[string]bool{
	"insufficient_quota":          true,
	"billing_error":               true,
	"billing_hard_limit_reached":  true,
	"billing_not_active":          true,
	"credit_balance_too_low":      true,
	"spend_limit_exceeded":        true,
	"organization_spend_exceeded": true,
}

// budgetPhrases are how providers word a quota or spend error when no type says it.
var budgetPhrases = []string{
	"insufficient_quota", "exceeded your current quota", "credit balance", "billing",
	"spend limit", "spending limit", "out of credits",
}

// isBudget reports a quota, billing or spend-limit error, which no retry can fix.
func (f apiFailure) isBudget() bool {
	if f.status == http.StatusPaymentRequired || budgetKinds[f.kind] || budgetKinds[f.code] {
		return true
	}
	if f.status >= 500 {
		return false
	}
	text := strings.ToLower(f.message + " " + f.body)
	for _, p := range budgetPhrases {
		if strings.Contains(text, p) {
			return true
		}
	}
	return false
}

// authKinds are error types and codes that mean the key was refused, whatever the status.
var authKinds = map[string]bool{
	"authentication_error": true,
	"permission_error":     true,
	"invalid_api_key":      true,
}

// isAuth reports a refused key (HTTP 401 or 403, or an error type that says so): no retry sends a
// different key.
func (f apiFailure) isAuth() bool {
	return f.status == http.StatusUnauthorized || f.status == http.StatusForbidden || authKinds[f.kind] || authKinds[f.code]
}

// describe is a short account of the failure for a user message.
func (f apiFailure) describe() string {
	s := fmt.Sprintf("HTTP %d", f.status)
	if f.status == http.StatusOK {
		s = "error event in the stream" // the request succeeded; the stream reported the failure
	}
	switch {
	case f.message != "":
		s += ": " + f.message
	case f.kind != "":
		s += ": " + f.kind
	case f.body != "":
		s += ": " + f.body
	}
	return oneLine(s)
}

// apiFailureOf extracts the gateway-reported failure from err, whichever client produced it.
func apiFailureOf(err error) (apiFailure, bool) {
	var (
		oe  *openai.Error
		ae  *anthropic.Error
		se  *StatusError
		sse *ssestream.StreamError
		ee  *EventError
	)
	switch {
	case errors.As(err, &ee):
		return apiFailure{status: http.StatusOK, kind: ee.Code, code: ee.Code, message: ee.Message}, true
	case errors.As(err, &oe):
		return apiFailure{status: oe.StatusCode, header: headerOf(oe.Response), kind: oe.Type,
			code: oe.Code, message: oe.Message, body: oe.RawJSON()}, true
	case errors.As(err, &ae):
		return apiFailure{status: ae.StatusCode, header: headerOf(ae.Response), kind: string(ae.Type()),
			code: string(ae.ErrorCode()), message: ae.Message, body: ae.RawJSON()}, true
	case errors.As(err, &sse):
		return eventFailure(sse.Event.Data), true
	case errors.As(err, &se):
		f := bodyFailure([]byte(se.Body))
		f.status, f.header = se.StatusCode, se.Header
		return f, true
	}
	return apiFailure{}, false
}

// eventFailure reads an error object sent inside an OpenAI stream (HTTP status 200).
func eventFailure(data []byte) apiFailure {
	f := bodyFailure(data)
	f.status = http.StatusOK
	return f
}

// bodyFailure reads {"error": {"type", "code", "message"}} (or a bare error object) from a body
// that may be anything at all.
func bodyFailure(body []byte) apiFailure {
	f := apiFailure{body: string(body)}
	var wrapped struct {
		Error json.RawMessage `json:"error"`
	}
	obj := body
	if json.Unmarshal(body, &wrapped) == nil && len(wrapped.Error) > 0 {
		obj = wrapped.Error
	}
	var e struct {
		Type    string `json:"type"`
		Code    any    `json:"code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(obj, &e) == nil {
		f.kind, f.message = e.Type, e.Message
		if c, ok := e.Code.(string); ok {
			f.code = c
		}
	}
	return f
}

// headerOf returns the response's headers, or nil without a response.
func headerOf(res *http.Response) http.Header {
	if res == nil {
		return nil
	}
	return res.Header
}

// isTimeout reports a network timeout.
func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// isNetwork reports a failure to reach the gateway or to keep the connection: refused, reset,
// DNS, or a connection closed before the response was complete.
func isNetwork(err error) bool {
	var (
		op  *net.OpError
		dns *net.DNSError
	)
	switch {
	case errors.As(err, &op), errors.As(err, &dns),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "server closed idle connection") || strings.Contains(msg, "connection reset")
}
