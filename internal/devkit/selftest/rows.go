package selftest

import (
	"fmt"
	"strings"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegw"
)

// Rows is the whole fault matrix: gateway faults, tool faults, limits and cancellation. The
// gateway rows are fakegw.Matrix, each on one of its providers in turn; internal/e2e runs each
// one on every provider.
func Rows() []Row {
	rows := gatewayRows()
	rows = append(rows, []Row{
		{
			Name: "gateway primary_down", Args: []string{"--inject", "primary_down"}, Status: contract.StatusCompleted,
			Check: func(_ []contract.Event, s contract.Summary) error {
				if s.FallbackCalls < 1 {
					return fmt.Errorf("fallback_calls %d, want at least 1", s.FallbackCalls)
				}
				return nil
			},
		},
		{
			// A reset two hours out, past the session's one-hour limit: escalated at once, naming the
			// reset, and aborted at the escalation's deadline.
			Name: "gateway usage_limit", Args: []string{"--inject", "usage_limit", "--max-duration", "1h"}, Env: []string{"KEEL_ESCALATION_DEADLINE=2s"},
			Status: contract.StatusAborted, Code: 1, Check: sawText(contract.EventEscalation, "resets at"),
		},
		{
			Name: "goal check", Args: []string{"--until", fakegw.GoalCheck(1)}, Status: contract.StatusCompleted,
			Check: func(events []contract.Event, s contract.Summary) error {
				if s.Checks != 2 {
					return fmt.Errorf("%d checks run, want 2 (a failure fed back, then a pass)", s.Checks)
				}
				return sawText(contract.EventCheck, "failed")(events, s)
			},
		},
		tool("tool_error", contract.StatusCompleted, 0, nil, sawText(contract.EventToolResult, "unchanged")),
		tool("loop", contract.StatusCompleted, 0, nil, func(_ []contract.Event, s contract.Summary) error {
			if s.BlockedCalls != 1 {
				return fmt.Errorf("%d blocked calls, want 1", s.BlockedCalls)
			}
			return nil
		}),
		tool("hang", contract.StatusCompleted, 0, []string{"KEEL_TOOLS_COMMAND_TIMEOUT=2s"}, sawText(contract.EventToolResult, "stopped")),
		tool("breaker", contract.StatusCompleted, 0, nil, sawText(contract.EventBlocked, "unavailable")),
		tool("bad_args", contract.StatusAborted, 1, []string{"KEEL_ESCALATION_DEADLINE=2s"}, sawText(contract.EventEscalation, "invalid arguments")),
		{Name: "github /keel edit", GitHub: true, Status: contract.StatusCompleted},
		{Name: "limit max-turns", Args: []string{"--max-turns", "2"}, Status: contract.StatusLimit, Code: 3, Limit: contract.LimitTurns},
		{Name: "limit max-tokens", Args: []string{"--max-tokens", "500"}, Status: contract.StatusLimit, Code: 3, Limit: contract.LimitTokens},
		{Name: "limit max-duration", Args: []string{"--max-duration", "3s", "--inject", "long_command"}, Status: contract.StatusLimit, Code: 3, Limit: contract.LimitDuration},
		{
			Name: "cancel long_command", Args: []string{"--inject", "long_command"}, Status: contract.StatusCancelled, Code: 130,
			CancelOn: func(e contract.Event) bool {
				return e.Event == contract.EventToolCall && strings.Contains(e.Arguments, "sleep 15")
			},
		},
		{
			Name: "steer say", Args: []string{"--inject", "long_command"}, Status: contract.StatusCompleted,
			SayOn: func(e contract.Event) bool {
				return e.Event == contract.EventToolCall && strings.Contains(e.Arguments, "sleep 15")
			},
			Say: steerText, Check: sawText(contract.EventSay, steerText),
		},
		{
			Name: "cancel slow_stream", Args: []string{"--inject", "slow_stream"}, Status: contract.StatusCancelled, Code: 130,
			CancelOn: func(e contract.Event) bool { return e.Event == contract.EventDelta && e.Seq >= 3 },
			Check: func(_ []contract.Event, s contract.Summary) error {
				if s.Answer == "" {
					return fmt.Errorf("the partial text was not kept")
				}
				return nil
			},
		},
	}...)
	rows = append(rows, delegateRows()...)
	return append(rows, sandboxRows()...)
}

// gatewayRows are the rows of fakegw.Matrix, the providers taken in turn, so every provider row
// meets some of the faults in every selftest.
func gatewayRows() []Row {
	rows := make([]Row, len(fakegw.Matrix))
	for i, f := range fakegw.Matrix {
		providers := f.Providers()
		rows[i] = gateway(f.Mode, providers[i%len(providers)], f.Status, f.Attempts)
	}
	return rows
}

// delegateRows are the sub-agent rows: a sub-agent that fails is feedback its parent carries on
// from, and sub-agents that together cross their parent's token limit stop the whole tree, the
// summary naming the sub-agent whose charge crossed it.
func delegateRows() []Row {
	return []Row{
		{
			Name: "delegate child_fails", Args: []string{"--inject", fakegw.ModeDelegateFail}, Status: contract.StatusCompleted,
			Check: sawText(contract.EventToolResult, "failed"),
		},
		{
			Name: "delegate over_budget", Args: []string{"--inject", fakegw.ModeDelegate, "--max-tokens", "5000"},
			Status: contract.StatusLimit, Code: 3, Limit: contract.LimitTokens,
			Check: func(_ []contract.Event, s contract.Summary) error {
				if !strings.Contains(s.Reason, "/sub-") {
					return fmt.Errorf("the summary %q names no sub-agent", s.Reason)
				}
				return nil
			},
		},
	}
}

// steerText is the message the steering row sends while a command runs.
const steerText = "keep the fix to one line"

func gateway(inject, wire, status string, attempts int) Row {
	code := 0
	if status != contract.StatusCompleted {
		code = 1
	}
	return Row{
		Name: "gateway " + inject, Args: []string{"--inject", inject}, Env: []string{"KEEL_GATEWAY_PROVIDER=" + wire},
		Status: status, Code: code, Attempts: attempts,
	}
}

func tool(inject, status string, code int, env []string, check func([]contract.Event, contract.Summary) error) Row {
	return Row{Name: "tools " + inject, Args: []string{"--inject", inject}, Env: env, Status: status, Code: code, Check: check}
}

// sawText checks that an event of kind carried text.
func sawText(kind, text string) func([]contract.Event, contract.Summary) error {
	return func(events []contract.Event, _ contract.Summary) error {
		for _, e := range events {
			if e.Event == kind && (strings.Contains(e.Text, text) || (e.Escalation != nil && strings.Contains(e.Escalation.Summary, text))) {
				return nil
			}
		}
		return fmt.Errorf("no %s event mentioning %q", kind, text)
	}
}
