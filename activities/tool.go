package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/metrics/record"
	"github.com/keelrun/keel/internal/tools"
)

// RunTool runs one tool call, once. A tool failure is a result written for the model, never an
// activity error: Temporal must not retry a call that may already have changed something. The
// only errors are cancellation, so the workflow learns the call is really gone.
func (a *Activities) RunTool(ctx context.Context, req contract.ToolRequest) (contract.ToolResult, error) {
	a.Events.Publish(ctx, req.Sinks, contract.Event{
		Event: contract.EventToolCall, WorkflowID: req.SessionID, Turn: req.Turn,
		Tool: req.Call.Name, CallID: req.Call.ID, Arguments: req.Call.Arguments,
	})
	if err := a.logEffect(ctx, req); err != nil {
		return contract.ToolResult{}, err
	}
	stop := keepBeating(ctx, func() any { return req.Call.ID })
	var res contract.ToolResult
	if req.Server != "" && a.MCP != nil {
		res = a.MCP.Call(ctx, req.Server, req.Call.Name, req.Call.Arguments)
	} else {
		box := &tools.Box{Root: req.Workdir, Policy: req.Policy, OutputCap: a.OutputCap}
		res = box.Run(ctx, req.Call, tools.RunOptions{SessionID: req.SessionID, Inject: req.Inject})
	}
	stop()
	outcome := record.ToolOK
	if res.IsError {
		outcome = record.ToolError
	}
	if ctx.Err() != nil {
		record.ToolCall(activity.GetMetricsHandler(ctx), req.Call.Name, record.ToolCancelled)
		activity.GetLogger(ctx).Info("tool call cancelled", "tool", req.Call.Name)
		return res, temporal.NewCanceledError("the tool call was cancelled")
	}
	record.ToolCall(activity.GetMetricsHandler(ctx), req.Call.Name, outcome)
	a.Events.Publish(ctx, req.Sinks, contract.Event{
		Event: contract.EventToolResult, WorkflowID: req.SessionID, Turn: req.Turn,
		Tool: req.Call.Name, CallID: req.Call.ID, Text: res.Content, IsError: res.IsError,
	})
	return res, nil
}

// effect is one line of the side-effect log.
type effect struct {
	Workflow string `json:"workflow"`
	Activity string `json:"activity"`
	Attempt  int32  `json:"attempt"`
	Session  string `json:"session"`
	CallID   string `json:"call_id"`
	Tool     string `json:"tool"`
	Time     string `json:"time"`
}

// logEffect appends the execution about to happen to the side-effect log. One O_APPEND write
// per line keeps lines whole across workers on one machine.
func (a *Activities) logEffect(ctx context.Context, req contract.ToolRequest) error {
	if a.EffectLog == "" {
		return nil
	}
	info := activity.GetInfo(ctx)
	b, err := json.Marshal(effect{
		Workflow: info.WorkflowExecution.ID, Activity: info.ActivityID, Attempt: info.Attempt,
		Session: req.SessionID, CallID: req.Call.ID, Tool: req.Call.Name, Time: time.Now().UTC().Format(time.RFC3339Nano),
	})
	if err != nil {
		return err
	}
	f, err := os.OpenFile(a.EffectLog, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("opening the side-effect log: %w", err)
	}
	defer f.Close()
	if _, err := f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("writing the side-effect log: %w", err)
	}
	return nil
}
