package metrics_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/keelrun/keel/internal/devkit/devserver"
	"github.com/keelrun/keel/internal/devkit/testenv"
	"github.com/keelrun/keel/internal/metrics/record"
)

const (
	probeWorkflow = "KeelMetricsProbe"
	probeActivity = "KeelMetricsProbeActivity"
)

// probe records a Keel metric from workflow code, then runs an activity that records another.
func probe(ctx workflow.Context) (string, error) {
	record.LimitTripped(workflow.GetMetricsHandler(ctx), "turns")
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var out string
	err := workflow.ExecuteActivity(ctx, probeActivity).Get(ctx, &out)
	return out, err
}

func probeTool(ctx context.Context) (string, error) {
	record.ToolCall(activity.GetMetricsHandler(ctx), "echo", record.ToolOK)
	return "done", nil
}

func TestMetricsFromWorkerOnDevServer(t *testing.T) {
	testenv.Needs(t, "a Temporal dev server")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	srv, err := devserver.Start(ctx, devserver.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Stop() })

	// Without a sticky cache every workflow task replays the workflow from its history, so the
	// count of 1 below also shows that workflow metrics are not recorded again on replay.
	worker.SetStickyWorkflowCacheSize(0)
	m, addr := serve(t)
	c, err := client.Dial(client.Options{
		HostPort:       srv.Address(),
		MetricsHandler: m.Handler(),
		Logger:         log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
	})
	require.NoError(t, err)
	t.Cleanup(c.Close)

	queue := "metrics-" + t.Name()
	w := worker.New(c, queue, worker.Options{})
	w.RegisterWorkflowWithOptions(probe, workflow.RegisterOptions{Name: probeWorkflow})
	w.RegisterActivityWithOptions(probeTool, activity.RegisterOptions{Name: probeActivity})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: queue}, probeWorkflow)
	require.NoError(t, err)
	var out string
	require.NoError(t, run.Get(ctx, &out))
	require.Equal(t, "done", out)

	// The SDK adds client_name, namespace, task_queue, worker_type, workflow_type and activity_type
	// to everything recorded through it, "none" where a tag does not apply. Labels come sorted.
	want := []string{
		`keel_limits_tripped_total{activity_type="none",client_name="temporal_go",limit="turns",namespace="default",task_queue="` + queue + `",worker_type="none",workflow_type="` + probeWorkflow + `"} 1`,
		`keel_tool_calls_total{activity_type="` + probeActivity + `",client_name="temporal_go",namespace="default",outcome="ok",task_queue="` + queue + `",tool="echo",worker_type="none",workflow_type="` + probeWorkflow + `"} 1`,
		`temporal_workflow_completed_total{activity_type="none",client_name="temporal_go",namespace="default",task_queue="` + queue + `",worker_type="none",workflow_type="` + probeWorkflow + `"} 1`,
	}
	body, missing := waitForLines(t, addr, want, 5*time.Second)
	require.Empty(t, missing, "missing lines; the scrape's keel and workflow lines:\n%s", grepLines(body, "keel_", "temporal_workflow"))
}

// waitForLines scrapes addr until every line of want is there or the deadline passes; it returns
// the last scrape and the lines it lacked.
func waitForLines(t *testing.T, addr string, want []string, within time.Duration) (string, []string) {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		body := scrape(t, addr)
		var missing []string
		for _, l := range want {
			if !hasLine(body, l) {
				missing = append(missing, l)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			return body, missing
		}
		<-tick.C
	}
}

// grepLines keeps the lines of body that contain any of subs.
func grepLines(body string, subs ...string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		for _, s := range subs {
			if strings.Contains(l, s) && !strings.HasPrefix(l, "#") {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}
