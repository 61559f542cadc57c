package workflows_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/tools/toolspec"
)

var (
	readCalc = `{"path":"calc.go"}`
	goTest   = `{"command":"go test ./..."}`
	usage    = contract.Usage{InputTokens: 10, OutputTokens: 5}
)

// TestSessionCompletes: the model asks for a tool in each of two turns, then answers. The summary
// counts every turn, tool call, model call and attempt, and the tokens of all three turns.
func TestSessionCompletes(t *testing.T) {
	w := newWorld(t,
		toolsReply(usage, call("c1", "read_file", readCalc)),
		reply{calls: []contract.ToolCall{call("c2", "run_command", goTest)}, usage: usage, attempt: 3},
		answerReply("fixed the off-by-one in Add", usage),
	)
	sum := w.run(input(contract.Limits{}))

	assert.Equal(t, contract.StatusCompleted, sum.Status)
	assert.Equal(t, "fixed the off-by-one in Add", sum.Answer)
	assert.Equal(t, 3, sum.Turns, "turns")
	assert.Equal(t, 2, sum.ToolCalls, "tool_calls")
	assert.Equal(t, 3, sum.GatewayCalls, "gateway_calls")
	assert.Equal(t, 5, sum.GatewayAttempts, "gateway_attempts: 1 + 3 + 1")
	assert.Equal(t, int64(45), sum.Tokens, "tokens")
	assert.Zero(t, sum.BlockedCalls)
	assert.Equal(t, "default-test-workflow-id", sum.WorkflowID)

	reqs := w.modelRequests()
	require.Len(t, reqs, 3)
	first, ok := findMessage(reqs[0].Append, func(m contract.Message) bool { return m.Role == contract.RoleUser })
	require.True(t, ok, "the first model call carries the task")
	assert.Equal(t, "make the tests pass", first.Content)
	offered, err := toolspec.Join(reqs[0].BuiltinTools, reqs[0].Tools)
	require.NoError(t, err)
	assert.Equal(t, toolspec.WithoutDelegate(toolspec.Builtin()), offered, "the model is offered the built-in tools but delegate (its input allows no delegation), by digest")
	assert.Empty(t, reqs[0].Tools, "the built-in tools travel by digest, not in the request")
	for i, r := range reqs {
		assert.Equal(t, i+1, r.Turn, "turn number of model call %d", i+1)
		if i > 0 {
			assert.Equal(t, fmt.Sprintf("head-%d", i), r.Head, "model call %d continues from the previous head", i+1)
		}
	}
	tools := w.toolRequests()
	require.Len(t, tools, 2)
	assert.Equal(t, "read_file", tools[0].Call.Name)
	assert.Equal(t, "run_command", tools[1].Call.Name)
	assert.Equal(t, "/srv/ws", tools[0].Workdir)

	fb, ok := findMessage(reqs[1].Append, func(m contract.Message) bool { return m.Role == contract.RoleTool })
	require.True(t, ok, "the second model call carries the first tool's result")
	assert.Equal(t, "c1", fb.ToolCallID)
	assert.Equal(t, "ok: read_file", fb.Content)
	assert.False(t, fb.IsError)
}

// TestToolErrorFedBack: a tool failure is a result, not an error; the next model call sees it as
// a tool message for the same call, marked as an error, and the session goes on.
func TestToolErrorFedBack(t *testing.T) {
	const failure = "write_file failed: the disk is full. The file calc.go is unchanged; retry as is."
	w := newWorld(t,
		toolsReply(usage, call("w1", "write_file", `{"path":"calc.go","content":"package calc"}`)),
		answerReply("gave up politely", usage),
	)
	w.tool = func(contract.ToolRequest) contract.ToolResult {
		return contract.ToolResult{Content: failure, IsError: true}
	}
	sum := w.run(input(contract.Limits{}))

	assert.Equal(t, contract.StatusCompleted, sum.Status)
	assert.Equal(t, 1, sum.ToolCalls)
	reqs := w.modelRequests()
	require.Len(t, reqs, 2)
	require.Len(t, reqs[1].Append, 1, "the second call appends exactly the feedback")
	fb := reqs[1].Append[0]
	assert.Equal(t, contract.RoleTool, fb.Role)
	assert.Equal(t, "w1", fb.ToolCallID)
	assert.Equal(t, "write_file", fb.Name)
	assert.Equal(t, failure, fb.Content)
	assert.True(t, fb.IsError)
}

// TestModelFailureSurfaced: a model call that failed for good ends the session as failed with the
// gateway's class and reason, and the attempts the gateway spent are counted.
func TestModelFailureSurfaced(t *testing.T) {
	cases := []struct {
		name     string
		failure  contract.Failure
		channels []string
		// notices is how many escalation notices the surfaced failure sends.
		notices int
	}{
		{"refusal", contract.Failure{Class: contract.ClassRefusal, Reason: "the model declined the task", Attempts: 1}, []string{"slack"}, 0},
		{"throttle exhausted", contract.Failure{Class: contract.ClassThrottle, Reason: "rate limited 6 times", Attempts: 6}, nil, 0},
		{"budget", contract.Failure{Class: contract.ClassBudget, Reason: "the credit is exhausted", Attempts: 1}, []string{"slack", "webhook"}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := temporal.NewApplicationErrorWithOptions(c.failure.Reason, contract.ModelErrorType,
				temporal.ApplicationErrorOptions{NonRetryable: true, Details: []any{c.failure}})
			w := newWorld(t, reply{err: err})
			in := input(contract.Limits{})
			in.Escalation.Channels = c.channels
			sum := w.run(in)

			assert.Equal(t, contract.StatusFailed, sum.Status)
			assert.Equal(t, c.failure.Class, sum.Class)
			assert.Equal(t, c.failure.Reason, sum.Reason)
			assert.Equal(t, c.failure.Attempts, sum.GatewayAttempts, "gateway_attempts is the gateway's count")
			assert.Equal(t, 1, sum.GatewayCalls)
			assert.Equal(t, 1, sum.Turns)
			assert.Len(t, w.modelRequests(), 1, "a non-retryable failure is not retried")
			notices := w.sentNotices()
			require.Len(t, notices, c.notices)
			for i, n := range notices {
				assert.Equal(t, c.channels[i], n.req.Channel)
				assert.Equal(t, contract.ReasonBudget, n.req.Escalation.Reason)
			}
		})
	}
}

// TestUnparsableReplyRetriedStrictByTheTurn: a reply that did not parse is called again by the
// turn, after the activity's wait, with the strict flag and the attempts so far in the request, so
// the retry keeps them on any worker; a second unparsable reply is surfaced.
func TestUnparsableReplyRetriedStrictByTheTurn(t *testing.T) {
	schema := func(f contract.Failure) error {
		return temporal.NewApplicationErrorWithOptions(f.Reason, contract.ModelErrorType,
			temporal.ApplicationErrorOptions{NonRetryable: true, Details: []any{f}})
	}
	first := contract.Failure{Class: contract.ClassSchema, Reason: "the reply did not parse", Attempts: 1, StrictRetryMS: 1500}
	cases := []struct {
		name     string
		second   reply
		status   string
		attempts int
	}{
		{"then answers", reply{text: "done", attempt: 2}, contract.StatusCompleted, 2},
		{"then fails again", reply{err: schema(contract.Failure{Class: contract.ClassSchema, Reason: "gave up after 2 attempts", Attempts: 2})}, contract.StatusFailed, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, reply{err: schema(first)}, c.second)
			start := w.env.Now()
			var retriedAt time.Time
			w.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
				if info.ActivityType.Name == contract.CallModelActivity {
					retriedAt = w.env.Now()
				}
			})
			sum := w.run(input(contract.Limits{}))
			assert.Equal(t, c.status, sum.Status)
			assert.Equal(t, c.attempts, sum.GatewayAttempts)
			assert.Equal(t, 1, sum.GatewayCalls)
			reqs := w.modelRequests()
			require.Len(t, reqs, 2)
			assert.False(t, reqs[0].Strict)
			assert.True(t, reqs[1].Strict)
			assert.Equal(t, 1, reqs[1].PriorAttempts)
			assert.GreaterOrEqual(t, retriedAt.Sub(start), 1500*time.Millisecond, "the turn waits before it calls again")
		})
	}
}

// TestUnclassifiedModelErrorFailsClosed: an error without a Failure detail is surfaced as unknown.
func TestUnclassifiedModelErrorFailsClosed(t *testing.T) {
	w := newWorld(t, reply{err: temporal.NewNonRetryableApplicationError("boom", "Mystery", nil)})
	sum := w.run(input(contract.Limits{}))
	assert.Equal(t, contract.StatusFailed, sum.Status)
	assert.Equal(t, contract.ClassUnknown, sum.Class)
	assert.Contains(t, sum.Reason, "boom")
	assert.Equal(t, 1, sum.GatewayAttempts)
}

// TestSearchAttributesAndDetails: the session keeps its search attributes and current details up
// to date, and neither trips the test environment.
func TestSearchAttributesAndDetails(t *testing.T) {
	w := newWorld(t, toolsReply(usage, call("c1", "read_file", readCalc)), answerReply("done", usage))
	// Each upsert carries what changed; the server keeps the union, latest value per key.
	seen := map[string]any{}
	upserts := 0
	w.env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		for k, v := range args.Get(0).(temporal.SearchAttributes).GetUntypedValues() {
			seen[k.GetName()] = v
		}
		upserts++
	}).Return(nil)
	sum := w.run(input(contract.Limits{}))
	require.Equal(t, contract.StatusCompleted, sum.Status)

	require.NotZero(t, upserts)
	assert.Equal(t, contract.StatusCompleted, seen[contract.StatusKey.GetName()])
	assert.Equal(t, int64(2), seen[contract.TurnsKey.GetName()])
	assert.Equal(t, int64(30), seen[contract.TokensKey.GetName()])
	assert.Equal(t, false, seen[contract.PendingEscalationKey.GetName()])

	v, err := w.env.QueryWorkflow("__temporal_workflow_metadata")
	require.NoError(t, err)
	var md sdk.WorkflowMetadata
	require.NoError(t, v.Get(&md))
	assert.True(t, strings.HasPrefix(md.GetCurrentDetails(), "**completed after 2 turns**"), "current details: %q", md.GetCurrentDetails())
}
