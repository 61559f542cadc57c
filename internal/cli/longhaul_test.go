package cli

import (
	"testing"

	"github.com/keelrun/keel/internal/contract"
)

// TestLongHaulLine: the summary says what a long session spent on checks, waits and models, and
// nothing for a session that had none.
func TestLongHaulLine(t *testing.T) {
	for _, tc := range []struct {
		s    contract.Summary
		want string
	}{
		{contract.Summary{}, ""},
		{contract.Summary{ModelTokens: map[string]int64{"openai/a": 10}}, ""},
		{contract.Summary{Checks: 3}, "3 checks run"},
		{contract.Summary{Waits: 1, WaitedMS: 7_980_000}, "1 wait for usage limits (2h 13m)"},
		{contract.Summary{Checks: 1, ModelTokens: map[string]int64{"openai/b": 5, "openai/a": 1}}, "1 check run · tokens per model: openai/a 1 token, openai/b 5 tokens"},
	} {
		if got := longHaulLine(tc.s); got != tc.want {
			t.Errorf("longHaulLine(%+v) = %q, want %q", tc.s, got, tc.want)
		}
	}
	if goalOf("  ") != nil || goalOf("go test ./...").Check != "go test ./..." {
		t.Error("goalOf: a blank --until is no goal; any other is the check")
	}
}
