package e2e

import (
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/testenv"
)

// TestToolFaultMatrix: each tool fault of the demo, end to end on a real server.
func TestToolFaultMatrix(t *testing.T) {
	cases := []struct {
		inject string
		env    []string
		check  func(t *testing.T, r testenv.Run)
	}{
		{"tool_error", nil, func(t *testing.T, r testenv.Run) {
			writes := callsOf(r, "write_file")
			if len(writes) != 2 || writes[0].Arguments != writes[1].Arguments {
				t.Fatalf("want the failed write re-sent as is once, got %d writes", len(writes))
			}
			res := resultsOf(r, "write_file")
			if !res[0].IsError || !strings.Contains(res[0].Text, "unchanged") || !strings.Contains(res[0].Text, "retry as is") || res[1].IsError {
				t.Fatalf("write results: %+v", res)
			}
		}},
		{"loop", nil, func(t *testing.T, r testenv.Run) {
			if r.Summary.BlockedCalls != 1 || len(callsOf(r, "read_file")) != 2 || r.Summary.Answer == "" {
				t.Fatalf("want the third identical call blocked and a conclusion: %+v", r.Summary)
			}
		}},
		{"hang", []string{"KEEL_TOOLS_COMMAND_TIMEOUT=2s"}, func(t *testing.T, r testenv.Run) {
			res := resultsOf(r, "run_command")
			if len(res) == 0 || !res[0].IsError || !strings.Contains(res[0].Text, "stopped") {
				t.Fatalf("the hanging command's result: %+v", res)
			}
			if ws := r.Workspace(); len(processesIn(ws, "sleep", "3600")) != 0 {
				t.Fatal("the hanging command's process outlived its timeout")
			}
		}},
		{"breaker", nil, func(t *testing.T, r testenv.Run) {
			blockedAt := -1
			for i, e := range r.Events {
				if e.Event == contract.EventBlocked && e.Tool == "flaky_lookup" && strings.Contains(e.Text, "Use read_file instead") {
					blockedAt = i
				}
			}
			if blockedAt < 0 || r.Summary.BlockedCalls != 1 {
				t.Fatalf("the breaker never answered for the server: %+v", r.Summary)
			}
			var after int
			for _, e := range r.Events {
				if e.Event == contract.EventToolCall && e.Tool == "flaky_lookup" && e.Turn > r.Events[blockedAt].Turn {
					after++
				}
			}
			if n := len(callsOf(r, "flaky_lookup")); n != 5 || after != 0 {
				t.Fatalf("%d calls reached the flaky server (%d after the breaker opened); want 5 and 0", n, after)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.inject, func(t *testing.T) {
			t.Parallel()
			r := runStarter(t, c.env, "demo", "--inject", c.inject, "--output", "jsonl")
			if r.Code != 0 || r.Summary.Status != contract.StatusCompleted {
				t.Fatalf("exit %d, summary %+v\n%s", r.Code, r.Summary, r.Stderr)
			}
			c.check(t, r)
		})
	}
}

func callsOf(r testenv.Run, tool string) []contract.Event {
	var out []contract.Event
	for _, e := range r.Events {
		if e.Event == contract.EventToolCall && e.Tool == tool {
			out = append(out, e)
		}
	}
	return out
}

func resultsOf(r testenv.Run, tool string) []contract.Event {
	var out []contract.Event
	for _, e := range r.Events {
		if e.Event == contract.EventToolResult && e.Tool == tool {
			out = append(out, e)
		}
	}
	return out
}
