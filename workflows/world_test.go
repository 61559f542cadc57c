package workflows_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/tools/toolspec"
	"github.com/keelrun/keel/workflows"
)

// reply is one scripted answer of the model: tool calls, or a final text, or an error.
type reply struct {
	calls   []contract.ToolCall
	text    string
	usage   contract.Usage
	attempt int
	err     error
	// delay is how long the call takes on the workflow clock.
	delay time.Duration
}

// notice is one escalation notice as a channel received it, stamped with the workflow clock.
type notice struct {
	req contract.NotifyRequest
	at  time.Time
}

// world is everything outside the workflows, as they see it through their activities: a scripted
// model, tools that answer "ok" unless told otherwise, and notice channels. It records every
// request so tests can assert what the workflows asked for.
type world struct {
	t   *testing.T
	env *testsuite.TestWorkflowEnvironment

	mu        sync.Mutex
	script    []reply
	modelReqs []contract.ModelRequest
	toolReqs  []contract.ToolRequest
	notices   []notice
	// started and cancelled list activity types as the test environment started or cancelled them.
	started, cancelled []string
	// tool answers a tool call; nil answers every call with a plain success.
	tool func(contract.ToolRequest) contract.ToolResult
	// toolErr, when set and returning an error, ends the tool activity with it instead (a
	// timeout stands for a dead worker or a lost completion).
	toolErr func(contract.ToolRequest) error
	// ledger answers ReadToolLedger; nil answers that nothing was recorded.
	ledger func(contract.LedgerRequest) (contract.LedgerAnswer, error)
	// toolDelay is how long every tool call takes on the workflow clock.
	toolDelay time.Duration
	// compact answers the CompactTranscript activity; nil folds nothing. compactDelay is how long
	// it takes on the workflow clock.
	compact      func(context.Context, contract.CompactRequest) (contract.CompactResult, error)
	compactDelay time.Duration
	// model, when set, answers each model call from its request instead of the script (sessions
	// running side by side, whose calls come in no fixed order).
	model func(contract.ModelRequest) reply
	// modelDelay is how long each call answered by model takes on the workflow clock.
	modelDelay time.Duration
}

// newWorld builds a test environment with both workflows registered under their contract names and
// the three activities served by the world.
func newWorld(t *testing.T, script ...reply) *world {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	// Only warnings reach the test's output: the SDK's debug lines would bury a failure.
	suite.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))))
	env := suite.NewTestWorkflowEnvironment()
	env.SetTestTimeout(30 * time.Second)
	w := &world{t: t, env: env, script: script}

	env.RegisterWorkflowWithOptions(workflows.AgentSession, workflow.RegisterOptions{Name: contract.SessionWorkflow})
	env.RegisterWorkflowWithOptions(workflows.AgentTurn, workflow.RegisterOptions{Name: contract.TurnWorkflow})
	env.RegisterActivityWithOptions(w.callModel, activity.RegisterOptions{Name: contract.CallModelActivity})
	env.RegisterActivityWithOptions(w.runTool, activity.RegisterOptions{Name: contract.RunToolActivity})
	env.RegisterActivityWithOptions(w.notify, activity.RegisterOptions{Name: contract.NotifyActivity})
	env.RegisterActivityWithOptions(func(_ context.Context, req contract.LedgerRequest) (contract.LedgerAnswer, error) {
		if w.ledger == nil {
			return contract.LedgerAnswer{Verdict: contract.LedgerNotRun}, nil
		}
		return w.ledger(req)
	}, activity.RegisterOptions{Name: contract.ToolLedgerActivity})
	compact := func(ctx context.Context, req contract.CompactRequest) (contract.CompactResult, error) {
		if w.compact == nil {
			return contract.CompactResult{}, nil
		}
		return w.compact(ctx, req)
	}
	env.RegisterActivityWithOptions(compact, activity.RegisterOptions{Name: contract.CompactActivity})
	env.RegisterActivityWithOptions(func(context.Context) ([]contract.ToolSpec, error) { return toolspec.Builtin(), nil },
		activity.RegisterOptions{Name: contract.ListToolsActivity})
	env.RegisterActivityWithOptions(func(context.Context, contract.ReviewRequest) (contract.Changes, error) {
		return contract.Changes{}, nil
	},
		activity.RegisterOptions{Name: contract.ReviewChangesActivity})

	// The mocks delegate to the same functions; they exist so that a call can take time on the
	// workflow clock (which the test environment skips) instead of on the wall clock.
	env.OnActivity(contract.CallModelActivity, mock.Anything, mock.Anything).AfterFn(w.nextModelDelay).Return(w.callModel).Maybe()
	env.OnActivity(contract.CompactActivity, mock.Anything, mock.Anything).AfterFn(func() time.Duration { return w.compactDelay }).Return(compact).Maybe()
	env.OnActivity(contract.RunToolActivity, mock.Anything, mock.Anything).AfterFn(func() time.Duration { return w.toolDelay }).Return(w.runTool).Maybe()
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if info.ActivityType.Name == contract.ListToolsActivity || info.ActivityType.Name == contract.ReviewChangesActivity {
			return // once per session, before the first turn or at its end: not part of what the tests compare
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.started = append(w.started, info.ActivityType.Name)
	})
	env.SetOnActivityCanceledListener(func(info *activity.Info) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.cancelled = append(w.cancelled, info.ActivityType.Name)
	})
	return w
}

// activities returns the activity types started and cancelled so far, in order.
func (w *world) activities() (started, cancelled []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.started...), append([]string(nil), w.cancelled...)
}

func (w *world) nextModelDelay() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.model != nil {
		return w.modelDelay
	}
	if n := len(w.modelReqs); n < len(w.script) {
		return w.script[n].delay
	}
	return 0
}

func (w *world) callModel(_ context.Context, req contract.ModelRequest) (contract.ModelResponse, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.modelReqs = append(w.modelReqs, req)
	n := len(w.modelReqs)
	if w.model != nil {
		return modelResponse(n, w.model(req))
	}
	if n > len(w.script) {
		w.t.Errorf("model call %d is beyond the script of %d replies", n, len(w.script))
		return contract.ModelResponse{}, temporal.NewNonRetryableApplicationError("script exhausted", "TestScript", nil)
	}
	return modelResponse(n, w.script[n-1])
}

// modelResponse is the n-th model call's response scripted by r.
func modelResponse(n int, r reply) (contract.ModelResponse, error) {
	if r.err != nil {
		return contract.ModelResponse{}, r.err
	}
	attempt := r.attempt
	if attempt == 0 {
		attempt = 1
	}
	return contract.ModelResponse{
		Head:    fmt.Sprintf("head-%d", n),
		Message: contract.Message{Role: contract.RoleAssistant, Content: r.text, ToolCalls: r.calls},
		Usage:   r.usage,
		Attempt: attempt,
	}, nil
}

func (w *world) runTool(_ context.Context, req contract.ToolRequest) (contract.ToolResult, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.toolReqs = append(w.toolReqs, req)
	if w.toolErr != nil {
		if err := w.toolErr(req); err != nil {
			return contract.ToolResult{}, err
		}
	}
	if w.tool != nil {
		return w.tool(req), nil
	}
	return contract.ToolResult{Content: "ok: " + req.Call.Name}, nil
}

func (w *world) notify(_ context.Context, req contract.NotifyRequest) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.notices = append(w.notices, notice{req: req, at: w.env.Now()})
	return nil
}

// modelRequests returns a copy of the model requests so far.
func (w *world) modelRequests() []contract.ModelRequest {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]contract.ModelRequest(nil), w.modelReqs...)
}

// toolRequests returns a copy of the tool requests so far.
func (w *world) toolRequests() []contract.ToolRequest {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]contract.ToolRequest(nil), w.toolReqs...)
}

// sentNotices returns a copy of the notices so far.
func (w *world) sentNotices() []notice {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]notice(nil), w.notices...)
}

// run executes a session to its end and returns its summary.
func (w *world) run(in contract.SessionInput) contract.Summary {
	w.t.Helper()
	w.env.ExecuteWorkflow(contract.SessionWorkflow, in)
	require.True(w.t, w.env.IsWorkflowCompleted(), "the session did not complete")
	if err := w.env.GetWorkflowError(); err != nil {
		sum, ok := contract.EndedSummary(err)
		require.True(w.t, ok, "the session ended with an error that carries no summary: %v", err)
		requireTypedEnd(w.t, sum.Status, err)
		return sum
	}
	var sum contract.Summary
	require.NoError(w.t, w.env.GetWorkflowResult(&sum))
	require.Equal(w.t, contract.StatusCompleted, sum.Status, "only a completed session ends without an error")
	return sum
}

// requireTypedEnd checks that a session that did not complete ended as Temporal should show it:
// cancelled as a cancellation, everything else as a non-retryable error whose type names it.
func requireTypedEnd(t *testing.T, status string, err error) {
	t.Helper()
	want := map[string]string{
		contract.StatusAborted: contract.EndAborted,
		contract.StatusFailed:  contract.EndFailed,
		contract.StatusLimit:   contract.EndLimit,
	}
	if status == contract.StatusCancelled {
		var canceled *temporal.CanceledError
		require.ErrorAs(t, err, &canceled, "a cancelled session must end Canceled")
		return
	}
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app, "a %s session must end Failed with an application error", status)
	require.Equal(t, want[status], app.Type())
	require.True(t, app.NonRetryable(), "the end error must not be retried")
}

// at runs f when the workflow clock reaches d after the start.
func (w *world) at(d time.Duration, f func()) {
	w.env.RegisterDelayedCallback(f, d)
}

// status runs the status query.
func (w *world) status() contract.SessionStatus {
	w.t.Helper()
	v, err := w.env.QueryWorkflow(contract.QueryStatus)
	require.NoError(w.t, err)
	var st contract.SessionStatus
	require.NoError(w.t, v.Get(&st))
	return st
}

// transcript runs the transcript query.
func (w *world) transcript() contract.Transcript {
	w.t.Helper()
	v, err := w.env.QueryWorkflow(contract.QueryTranscript)
	require.NoError(w.t, err)
	var tr contract.Transcript
	require.NoError(w.t, v.Get(&tr))
	return tr
}

// updateOutcome is what the sender of one answer update learned.
type updateOutcome struct {
	accepted  bool
	rejected  error
	result    contract.AnswerResult
	completed bool
	failed    error
}

// answer sends the answer update and records its outcome.
func (w *world) answer(id string, a contract.Answer) *updateOutcome {
	out := &updateOutcome{}
	w.env.UpdateWorkflow(contract.UpdateAnswerEscalation, id, &testsuite.TestUpdateCallback{
		OnAccept: func() { out.accepted = true },
		OnReject: func(err error) { out.rejected = err },
		OnComplete: func(v any, err error) {
			out.completed = true
			out.failed = err
			if r, ok := v.(contract.AnswerResult); ok {
				out.result = r
			}
		},
	}, a)
	return out
}

// input is a session input with the given limits and nothing else configured.
func input(limits contract.Limits) contract.SessionInput {
	in := contract.SessionInput{Task: "make the tests pass", Limits: limits}
	in.Workdir = "/srv/ws"
	return in
}

// call builds one tool call.
func call(id, name, args string) contract.ToolCall {
	return contract.ToolCall{ID: id, Name: name, Arguments: args}
}

// toolsReply is a model reply that asks for the given calls.
func toolsReply(usage contract.Usage, calls ...contract.ToolCall) reply {
	return reply{calls: calls, usage: usage}
}

// answerReply is a final model reply.
func answerReply(text string, usage contract.Usage) reply {
	return reply{text: text, usage: usage}
}

// findMessage returns the first message in msgs for which match holds.
func findMessage(msgs []contract.Message, match func(contract.Message) bool) (contract.Message, bool) {
	for _, m := range msgs {
		if match(m) {
			return m, true
		}
	}
	return contract.Message{}, false
}
