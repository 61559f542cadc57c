package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Names the benchmark starts and reads histories by.
const (
	// WorkflowName is the loop's workflow type; its input is the task, its result the answer.
	WorkflowName = "AgentWorkflow"
	// ChildTurnsWorkflowName is the same loop with each turn a child workflow
	// (TurnWorkflowName): what one child per turn costs, with nothing else added.
	ChildTurnsWorkflowName = "AgentWorkflowChildTurns"
	TurnWorkflowName       = "AgentWorkflowTurn"
	callModel              = "CallModel"
	runTool                = "RunTool"
)

// Message is one entry of the conversation the workflow keeps and hands to every model call, as
// the published loop does.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// ToolCall is one tool call of the model's.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// maxTurns bounds a conversation, so a model that never answers cannot run forever.
const maxTurns = 1000

// AgentWorkflow is the loop: call the model; if it asked for tools, run each and append its
// result; repeat until it answers. The activity options are the published loop's.
func AgentWorkflow(ctx workflow.Context, task string) (string, error) {
	msgs := []Message{{Role: "user", Content: task}}
	for range maxTurns {
		added, err := AgentWorkflowTurn(ctx, msgs)
		if err != nil {
			return "", err
		}
		if msgs = append(msgs, added...); len(added) == 1 {
			return added[0].Content, nil
		}
	}
	return "", fmt.Errorf("no answer after %d turns", maxTurns)
}

// AgentWorkflowChildTurns is AgentWorkflow with each turn run as a child workflow
// (AgentWorkflowTurn), the shape of a Keel session, so the benchmark can tell what the child
// costs from what Keel adds to it.
func AgentWorkflowChildTurns(ctx workflow.Context, task string) (string, error) {
	msgs := []Message{{Role: "user", Content: task}}
	for turn := 1; turn <= maxTurns; turn++ {
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			WorkflowID: fmt.Sprintf("%s/turn-%d", workflow.GetInfo(ctx).WorkflowExecution.ID, turn),
		})
		var added []Message
		if err := workflow.ExecuteChildWorkflow(cctx, TurnWorkflowName, msgs).Get(ctx, &added); err != nil {
			return "", fmt.Errorf("running turn %d: %w", turn, err)
		}
		if msgs = append(msgs, added...); len(added) == 1 {
			return added[0].Content, nil
		}
	}
	return "", fmt.Errorf("no answer after %d turns", maxTurns)
}

// AgentWorkflowTurn is one turn of the loop: call the model and, if it asked for tools, run
// each. It returns the messages the turn adds: the model's reply, then one per tool call. The
// activity options are the published loop's.
func AgentWorkflowTurn(ctx workflow.Context, msgs []Message) ([]Message, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    30 * time.Second,
			MaximumAttempts:    3,
		},
	})
	var reply Message
	if err := workflow.ExecuteActivity(ctx, callModel, msgs).Get(ctx, &reply); err != nil {
		return nil, fmt.Errorf("calling the model: %w", err)
	}
	added := []Message{reply}
	for _, call := range reply.ToolCalls {
		var out string
		if err := workflow.ExecuteActivity(ctx, runTool, call).Get(ctx, &out); err != nil {
			out = "the tool failed: " + err.Error()
		}
		added = append(added, Message{Role: "tool", Content: out, ToolCallID: call.ID})
	}
	return added, nil
}

// Activities are the loop's model and tools.
type Activities struct {
	chat    openai.ChatCompletionService
	workdir string
}

func newActivities(gateway, workdir string) *Activities {
	return &Activities{
		chat: openai.NewChatCompletionService(option.WithBaseURL(gateway), option.WithAPIKey("goloop"),
			option.WithMaxRetries(0)),
		workdir: workdir,
	}
}

// register registers the workflow and the activities under the names above.
func register(w worker.Registry, a *Activities) {
	w.RegisterWorkflowWithOptions(AgentWorkflow, workflow.RegisterOptions{Name: WorkflowName})
	w.RegisterWorkflowWithOptions(AgentWorkflowChildTurns, workflow.RegisterOptions{Name: ChildTurnsWorkflowName})
	w.RegisterWorkflowWithOptions(AgentWorkflowTurn, workflow.RegisterOptions{Name: TurnWorkflowName})
	w.RegisterActivityWithOptions(a.CallModel, activity.RegisterOptions{Name: callModel})
	w.RegisterActivityWithOptions(a.RunTool, activity.RegisterOptions{Name: runTool})
}

// tools are the tools offered to the model.
var tools = []openai.ChatCompletionToolUnionParam{
	openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "list_dir", Parameters: shared.FunctionParameters{
		"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}}),
	openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "run_command", Parameters: shared.FunctionParameters{
		"type": "object", "properties": map[string]any{"command": map[string]any{"type": "string"}}}}),
}

// CallModel streams one chat completion from the gateway and returns the model's message.
func (a *Activities) CallModel(ctx context.Context, msgs []Message) (Message, error) {
	params := openai.ChatCompletionNewParams{Model: "goloop", Messages: make([]openai.ChatCompletionMessageParamUnion, 0, len(msgs)), Tools: tools}
	for _, m := range msgs {
		switch m.Role {
		case "user":
			params.Messages = append(params.Messages, openai.UserMessage(m.Content))
		case "tool":
			params.Messages = append(params.Messages, openai.ToolMessage(m.Content, m.ToolCallID))
		case "assistant":
			var am openai.ChatCompletionAssistantMessageParam
			if m.Content != "" {
				am.Content.OfString = openai.String(m.Content)
			}
			for _, c := range m.ToolCalls {
				am.ToolCalls = append(am.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: c.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: c.Arguments}}})
			}
			params.Messages = append(params.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &am})
		}
	}
	stream := a.chat.NewStreaming(ctx, params)
	defer func() { _ = stream.Close() }()
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		return Message{}, fmt.Errorf("streaming the model's reply: %w", err)
	}
	if len(acc.Choices) == 0 {
		return Message{}, fmt.Errorf("the model's reply has no choice")
	}
	m := acc.Choices[0].Message
	out := Message{Role: "assistant", Content: m.Content}
	for _, c := range m.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
	}
	return out, nil
}

// RunTool runs one tool call: list_dir lists the work directory; run_command runs only
// `sleep SECONDS`, as a bare sleep in this process.
func (a *Activities) RunTool(ctx context.Context, call ToolCall) (string, error) {
	var args struct{ Path, Command string }
	if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil {
		return "", fmt.Errorf("the arguments of %s are not JSON: %w", call.Name, err)
	}
	switch call.Name {
	case "list_dir":
		entries, err := os.ReadDir(a.workdir)
		if err != nil {
			return "", fmt.Errorf("listing %s: %w", a.workdir, err)
		}
		names := make([]string, len(entries))
		for i, e := range entries {
			names[i] = e.Name()
		}
		return strings.Join(names, "\n"), nil
	case "run_command":
		secs, ok := strings.CutPrefix(args.Command, "sleep ")
		d, err := strconv.ParseFloat(strings.TrimSpace(secs), 64)
		if !ok || err != nil {
			return "", fmt.Errorf("run_command runs only sleep SECONDS here, not %q", args.Command)
		}
		select {
		case <-time.After(time.Duration(d * float64(time.Second))):
			return "", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return "", fmt.Errorf("no tool %q", call.Name)
}
