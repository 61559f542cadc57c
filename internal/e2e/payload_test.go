package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/app"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/demo"
	"github.com/keelrun/keel/internal/store"
)

// TestLargePayloadsStayOutOfHistory: a task of 300 KiB (think of a long pasted log) travels to the
// session, every turn and the model call, yet no payload in any history is over the threshold;
// the store holds it and the session still completes.
func TestLargePayloadsStayOutOfHistory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := env.Config(t, nil)
	c, err := app.Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	stop, err := app.StartWorker(ctx, c, cfg, startGateway(t)+"/v1")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	ws := t.TempDir()
	if err := demo.CopyWorkspace(ws); err != nil {
		t.Fatal(err)
	}
	task := "Fix the failing test. The log follows.\n" + strings.Repeat("a line of a long pasted log\n", 300<<10/28)
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: cfg.Temporal.TaskQueue}, contract.SessionWorkflow,
		scriptedInput(contract.SessionInput{Task: task, Settings: contract.Settings{ToolSettings: contract.ToolSettings{Workdir: ws}}, Limits: contract.Limits{MaxTurns: 20}}))
	if err != nil {
		t.Fatal(err)
	}
	var sum contract.Summary
	if err := run.Get(ctx, &sum); err != nil || sum.Status != contract.StatusCompleted {
		t.Fatalf("summary %+v, %v", sum, err)
	}
	ids := []string{run.GetID()}
	for n := 1; n <= sum.Turns; n++ {
		ids = append(ids, contract.TurnWorkflowID(run.GetID(), n))
	}
	largest := 0
	for _, id := range ids {
		it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			largest = max(largest, largestPayload(ev.String()))
		}
	}
	if largest > store.PayloadThreshold {
		t.Fatalf("a history event carries about %d bytes; payloads over %d must stay in the store", largest, store.PayloadThreshold)
	}
}

// largestPayload is a rough upper bound of the biggest payload an event holds: its text size.
func largestPayload(event string) int { return len(event) }
