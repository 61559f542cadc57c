package mcp

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/keelrun/keel/internal/tools/toolspec/feedbacktest"
)

func TestFeedbackWording(t *testing.T) {
	reads := call{server: "flaky", tool: "flaky_lookup", readOnly: true}
	writes := call{server: "fs", tool: "write_note"}
	cases := []struct {
		name, text string
		want       []string
	}{
		{"tool error, read-only", reads.toolError("lookup backend unavailable"), []string{"lookup backend unavailable", "nothing changed"}},
		{"tool error, may write", writes.toolError("disk full: write failed"), []string{"disk full - write failed", "may or may not have changed"}},
		{"tool error with a schema location", reads.toolError(`validating root: validating /properties/query: type: 5 has type "integer"`), []string{"properties/query"}},
		{"unreachable", reads.unreachable(), []string{"could not be reached", "nothing changed"}},
		{"broken, read-only", reads.broken(), []string{"outcome is unknown", "nothing changed"}},
		{"broken, may write", writes.broken(), []string{"outcome is unknown", "check the state"}},
		{"cancelled", writes.cancelled(), []string{"cancelled", "outcome is unknown"}},
		{"cancelled before sending", reads.cancelledBeforeSending(), []string{"nothing was run"}},
		{"refused", reads.refused(&jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `unknown tool "x"`}), []string{"not run", "unknown tool"}},
		{"internal error", writes.refused(&jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "boom"}), []string{"boom", "may or may not"}},
		{"bad arguments", reads.badArgs(), []string{"not run", "JSON object"}},
		{"no server", noServerFeedback("x", "y"), []string{`"x"`, "not run"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			feedbacktest.Check(t, tc.text)
			for _, w := range tc.want {
				if !strings.Contains(tc.text, w) {
					t.Errorf("%q does not contain %q", tc.text, w)
				}
			}
		})
	}
}

func TestDetail(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain", "plain"},
		{"  two\nlines. ", "two lines"},
		{"a: b: c", "a - b - c"},
		{"at /properties/x and /items", "at properties/x and items"},
		{"", "no message"},
		{strings.Repeat("x", 400), strings.Repeat("x", maxDetail) + "…"},
	}
	for _, tc := range cases {
		if got := detail(tc.in); got != tc.want {
			t.Errorf("detail(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
