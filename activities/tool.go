package activities

import (
	"context"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/keelrun/keel/contract"
	"github.com/keelrun/keel/metrics/record"
	"github.com/keelrun/keel/tools"
)

// RunTool runs one tool call, once. A tool failure is a result written for the model, never an
// activity error: Temporal must not retry a call that may already have changed something. The
// only errors are cancellation, so the workflow learns the call is really gone.
func (a *Activities) RunTool(ctx context.Context, req contract.ToolRequest) (contract.ToolResult, error) {
	a.Events.Publish(ctx, req.Sinks, contract.Event{
		Event: contract.EventToolCall, WorkflowID: req.SessionID, Turn: req.Turn,
		Tool: req.Call.Name, CallID: req.Call.ID, Arguments: req.Call.Arguments,
	})
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
