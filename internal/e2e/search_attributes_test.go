package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/app"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/devserver"
	"github.com/keelrun/keel/internal/devkit/testenv"
)

// TestSearchAttributeRegisteredWhileRunning is a state file an older Keel made, without one of
// today's attributes, on a dev server that maps a new attribute only when its namespace registry
// refreshes: after EnsureSearchAttributes registers it, a session start that sets it (what
// `starter run` does next) is accepted at once, every time.
func TestSearchAttributeRegisteredWhileRunning(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := devserver.Start(ctx, devserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Stop() }()
	c := srv.Client()
	for i, key := range []string{contract.TaskKey.GetName(), contract.StatusKey.GetName()} {
		if _, err := c.OperatorService().RemoveSearchAttributes(ctx, &operatorservice.RemoveSearchAttributesRequest{
			Namespace: "default", SearchAttributes: []string{key}}); err != nil {
			t.Fatalf("removing %s: %v", key, err)
		}
		// The removal, too, reaches the server's mapping when its registry refreshes.
		query := &workflowservice.CountWorkflowExecutionsRequest{Namespace: "default", Query: key + " IS NULL"}
		if !testenv.WaitFor(30*time.Second, func() bool { _, err := c.CountWorkflow(ctx, query); return err != nil }) {
			t.Fatalf("the server still maps %s after removing it", key)
		}
		if err := app.EnsureSearchAttributes(ctx, c, "default"); err != nil {
			t.Fatalf("registering %s again: %v", key, err)
		}
		in := contract.SessionInput{Task: "a task"}
		_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID:                    fmt.Sprintf("search-attribute-%d", i),
			TaskQueue:             "no-worker",
			TypedSearchAttributes: contract.StartSearchAttributes(in, contract.TaskKey.ValueSet(contract.ListedTask(in.Task))),
		}, contract.SessionWorkflow, in)
		if err != nil {
			t.Fatalf("a start setting %s straight after it was registered again: %v", key, err)
		}
	}
}
