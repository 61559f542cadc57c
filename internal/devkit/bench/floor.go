package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Names of the floor workflows and activity, registered next to Keel's on the same worker.
const (
	FloorParentWorkflow = "BenchFloorParent"
	FloorChildWorkflow  = "BenchFloorChild"
	NoopActivity        = "BenchNoop"
)

// FloorParent is Temporal's floor for a Keel session: it runs turns child workflows in sequence,
// each with two no-op activities, the same shape as a turn with one model call and one tool call
// but with nothing else.
func FloorParent(ctx workflow.Context, turns int) (int, error) {
	for i := 1; i <= turns; i++ {
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			WorkflowID: fmt.Sprintf("%s/turn-%d", workflow.GetInfo(ctx).WorkflowExecution.ID, i),
		})
		if err := workflow.ExecuteChildWorkflow(cctx, FloorChildWorkflow).Get(ctx, nil); err != nil {
			return i - 1, fmt.Errorf("running floor turn %d: %w", i, err)
		}
	}
	return turns, nil
}

// FloorChild runs two no-op activities in sequence.
func FloorChild(ctx workflow.Context) error {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	for range 2 {
		if err := workflow.ExecuteActivity(actx, NoopActivity).Get(actx, nil); err != nil {
			return fmt.Errorf("running the no-op activity: %w", err)
		}
	}
	return nil
}

// Noop does nothing, so its cost is all orchestration. When stamps is non-nil it records, like
// the scripted model, when each floor turn's first activity ran, keyed by the parent's ID.
func Noop(stamps *Stamps) func(context.Context) error {
	return func(ctx context.Context) error {
		if stamps != nil {
			id := activity.GetInfo(ctx).WorkflowExecution.ID
			if i := strings.LastIndex(id, "/turn-"); i >= 0 {
				if turn, err := strconv.Atoi(id[i+len("/turn-"):]); err == nil {
					stamps.Record(id[:i], turn, time.Now())
				}
			}
		}
		return nil
	}
}

// RegisterFloor registers the floor workflows and activity.
func RegisterFloor(w worker.Registry, stamps *Stamps) {
	w.RegisterWorkflowWithOptions(FloorParent, workflow.RegisterOptions{Name: FloorParentWorkflow})
	w.RegisterWorkflowWithOptions(FloorChild, workflow.RegisterOptions{Name: FloorChildWorkflow})
	w.RegisterActivityWithOptions(Noop(stamps), activity.RegisterOptions{Name: NoopActivity})
}
