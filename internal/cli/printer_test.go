package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/contract"
)

// TestToolResultMark: a command that failed (exit status, signal) or a call that erred is marked ✗
// and shows its last output lines, where the failure is; a command that succeeded is marked ✓.
func TestToolResultMark(t *testing.T) {
	out := "\n\nOutput:\n=== RUN   TestAdd\n    calc_test.go:9: Add(2, 3) = -1, want 5\n--- FAIL: TestAdd (0.00s)\nFAIL\nFAIL\texample.com/calc\t0.002s\nFAIL"
	cases := []struct {
		name      string
		e         contract.Event
		want      []string
		notWanted []string
	}{
		{"failed command", contract.Event{Event: contract.EventToolResult, Tool: "run_command",
			Text: "The command finished with exit status 1, which means it failed; it may have changed files before it failed. Read the output, fix the cause, and run it again." + out},
			[]string{"✗ The command finished with exit status 1", "(2 earlier lines)", "--- FAIL: TestAdd", "FAIL\texample.com/calc"}, []string{"✓", "=== RUN"}},
		{"signalled command", contract.Event{Event: contract.EventToolResult, Tool: "run_command", Text: "The command was ended by the signal killed before it finished; it may have changed files." + out},
			[]string{"✗ The command was ended"}, []string{"✓"}},
		{"succeeded", contract.Event{Event: contract.EventToolResult, Tool: "run_command", Text: "The command finished with exit status 0 (success).\n\nOutput:\nok"},
			[]string{"✓ The command finished with exit status 0"}, []string{"✗"}},
		{"an error", contract.Event{Event: contract.EventToolResult, Tool: "read_file", Text: "no such file: a.go", IsError: true},
			[]string{"✗ no such file: a.go"}, []string{"✓"}},
		{"output that says failed is not the verdict", contract.Event{Event: contract.EventToolResult, Tool: "read_file", Text: "x\nThe command finished with exit status 1"},
			[]string{"✓ x"}, []string{"✗"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			(&textPrinter{w: &b}).event(c.e)
			for _, w := range c.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("missing %q in:\n%s", w, b.String())
				}
			}
			for _, w := range c.notWanted {
				if strings.Contains(b.String(), w) {
					t.Errorf("unwanted %q in:\n%s", w, b.String())
				}
			}
		})
	}
}

// TestSummaryShowsTheCost: with prices configured the summary says what the session cost; without,
// it says nothing of money.
func TestSummaryShowsTheCost(t *testing.T) {
	sum := contract.Summary{Status: contract.StatusCompleted, Tokens: 3_000_000, Usage: contract.Usage{InputTokens: 2_000_000, OutputTokens: 1_000_000}}
	var out bytes.Buffer
	p := &textPrinter{w: &out, prices: config.Prices{Input: 3, Output: 15}}
	p.summary(sum)
	if !strings.Contains(out.String(), "cost 21.00 at gateway.price") {
		t.Fatalf("the summary with prices:\n%s", out.String())
	}
	out.Reset()
	(&textPrinter{w: &out}).summary(sum)
	if strings.Contains(out.String(), "cost") {
		t.Fatalf("a summary without prices shows a cost:\n%s", out.String())
	}
}
