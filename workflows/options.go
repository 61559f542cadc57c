// Package workflows holds Keel's two workflows: AgentSession (one per task) and AgentTurn (one per
// turn). Both are deterministic: they do no I/O, read no wall clock, iterate no maps, and log only
// through workflow.GetLogger. Everything that touches the world is an activity.
package workflows

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/tools/toolspec"
)

// Timeouts of the activities. The server pushes a cancellation to the worker running the activity
// (worker commands), so heartbeats only prove the worker is alive: a running model call or tool
// heartbeats every 15 s (activities.LivenessHeartbeat), and a worker that dies is noticed when
// contract.DefaultHeartbeatTimeout passes without one, or the session's HeartbeatTimeout,
// which leaves two beats to spare on a busy machine. On a server without worker commands the
// worker heartbeats every 200 ms instead, for the cancellation's sake; the timeout stays the same. Changing a timeout changes no command, so running sessions replay.
const (
	modelCallTimeout = 10 * time.Minute
	notifyTimeout    = 30 * time.Second
)

// modelRetryBackstop bounds the attempts of one model call. The activity decides every retry itself
// (class caps, jittered wait as NextRetryDelay); this only guards against a bug there.
const modelRetryBackstop = 8

// heartbeatTimeout is the session's heartbeat timeout, or the default.
func heartbeatTimeout(d time.Duration) time.Duration {
	if d <= 0 {
		return contract.DefaultHeartbeatTimeout
	}
	return d
}

func modelCallOptions(turn int, hb time.Duration) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: modelCallTimeout,
		HeartbeatTimeout:    heartbeatTimeout(hb),
		WaitForCancellation: true,
		Summary:             fmt.Sprintf("model call, turn %d", turn),
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    contract.DefaultRetryBase,
			BackoffCoefficient: 2,
			MaximumInterval:    contract.DefaultRetryCap,
			MaximumAttempts:    modelRetryBackstop,
		},
	}
}

// toolOptions gives a tool activity exactly one attempt: a write may already have happened.
func toolOptions(call contract.ToolCall, policy contract.ToolPolicy, hb time.Duration) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: toolTimeout(policy),
		HeartbeatTimeout:    heartbeatTimeout(hb),
		WaitForCancellation: true,
		Summary:             toolSummary(call),
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	}
}

// readOptions give a read run as a local activity one attempt too: a read that failed is
// answered at once, and the model decides whether to send it again.
func readOptions(call contract.ToolCall, policy contract.ToolPolicy) workflow.LocalActivityOptions {
	return workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: toolTimeout(policy),
		Summary:                toolSummary(call),
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 1},
	}
}

// toolTimeout bounds one tool call: the session's command timeout, or the default, and 30 s for
// what the activity does around the tool.
func toolTimeout(policy contract.ToolPolicy) time.Duration {
	timeout := policy.CommandTimeout.Std()
	if timeout <= 0 {
		timeout = contract.DefaultCommandTimeout
	}
	return timeout + 30*time.Second
}

// ledgerOptions read the ledger of side effects: a read, so retried a few times, and bounded so
// a store that does not answer ends in "outcome unknown" instead of a hung turn.
func ledgerOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		Summary:             "ledger",
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 5},
	}
}

// reviewOptions give the change list a minute: it reads two manifests and runs git twice.
func reviewOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		Summary:             "review changes",
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 2},
	}
}

// pushOptions retry a push that failed (the network, the server) a few times; a retry builds
// the same commit, so a push that did land and is retried changes nothing.
func pushOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		HeartbeatTimeout:    time.Minute,
		Summary:             "push the session's branch",
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 3},
	}
}

func listToolsOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		Summary:             "list tools",
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 5},
	}
}

func notifyOptions(channel string) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout: notifyTimeout,
		Summary:             "escalation notice via " + channel,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second, MaximumAttempts: 5,
		},
	}
}

// toolSummary is what a person reads in the Web UI for a tool activity: "write_file calc.go", the
// tool's name and the first of its summary arguments (toolspec.SummaryArgs) that has a value.
func toolSummary(call contract.ToolCall) string {
	var args map[string]any
	if json.Unmarshal([]byte(call.Arguments), &args) != nil {
		return call.Name
	}
	for _, key := range toolspec.SummaryArgs(call.Name) {
		if v, ok := args[key].(string); ok && v != "" {
			return clip(call.Name+" "+v, 120)
		}
	}
	return call.Name
}

func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}
