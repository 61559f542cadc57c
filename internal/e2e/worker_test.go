package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegw"
)

// TestWorkerDiesMidTool kills the worker process while a command runs. The command's process dies
// with the worker, the call is not run again by Temporal, the model is told the outcome is unknown
// and what to check, and the session completes on a new worker. The new worker's Prometheus
// endpoint shows Keel's metrics and the SDK's, and the session's search attributes filter it in
// a visibility query (what the Web UI and `temporal workflow list --query` run).
func TestWorkerDiesMidTool(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	metricsAddr := freeAddr(t)
	effects := filepath.Join(t.TempDir(), "effects.jsonl")
	sw := startScripted(t, scriptedOptions{worker: "./internal/devkit/recworker", args: []string{"-effect-log", effects},
		env: []string{"KEEL_METRICS_ADDRESS=" + metricsAddr}})
	w, ws, environ := sw.worker, sw.ws, sw.env
	run := sw.start(ctx, fakegw.ModeLongCommand, contract.Limits{MaxTurns: 20})
	if !waitFor(60*time.Second, func() bool { return len(processesIn(ws, "sleep", "15")) == 1 }) {
		t.Fatal("the long command never started")
	}
	killedAt := time.Now()
	w.kill()
	if !waitFor(2*time.Second, func() bool { return len(processesIn(ws, "sleep", "15")) == 0 }) {
		t.Fatal("the command outlived its worker")
	}
	w.start()

	var sum contract.Summary
	if err := run.Get(ctx, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Status != contract.StatusCompleted {
		t.Fatalf("summary %+v", sum)
	}
	tr := transcriptOf(ctx, t, run.GetID())
	unknown := 0
	for _, m := range tr {
		if m.Role == contract.RoleTool && strings.Contains(m.Content, "outcome is unknown") && strings.Contains(m.Content, "before running it again") {
			unknown++
		}
	}
	if unknown != 1 {
		t.Fatalf("the model was told %d times that the outcome is unknown, want 1", unknown)
	}
	noticed := heartbeatTimeoutAt(ctx, t, contract.TurnWorkflowID(run.GetID(), 1))
	t.Logf("the server noticed the dead worker %.1fs after the kill (the bound is the session's %s heartbeat timeout)", noticed.Sub(killedAt).Seconds(), testHeartbeatTimeout)
	// The stream shows what the model was told about the interrupted call, as its tool_result.
	watched := startLiveEnv(t, environ, "watch", run.GetID(), "-o", "jsonl").finish()
	shown := 0
	for _, e := range watched.Events {
		if e.Event == contract.EventToolResult && e.IsError && strings.Contains(e.Text, "outcome is unknown") {
			shown++
		}
	}
	if shown != 1 {
		t.Fatalf("starter watch showed the outcome-unknown tool_result %d times, want 1:\n%s", shown, watched.Stdout)
	}
	requireStamped(t, watched)
	if dups, total := duplicateExecutions(t, effects); len(dups) != 0 || !strings.Contains(readFile(t, effects), `"workflow":"`+contract.TurnWorkflowID(run.GetID(), 1)+`"`) || total < 2 {
		t.Fatalf("tool executions: %d logged, duplicates %v; the interrupted call must run exactly once", total, dups)
	}

	page := scrape(t, "http://"+metricsAddr+"/metrics")
	for _, want := range []string{"keel_model_attempts_total", `keel_tool_calls_total{`, `outcome="ok"`, "temporal_workflow_completed_total", "keel_tokens_total"} {
		if !strings.Contains(page, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// The visibility store trails the session by a moment: ask until it lists the session.
	completed := fmt.Sprintf(`KeelStatus="completed" AND WorkflowId="%s"`, run.GetID())
	if !waitFor(30*time.Second, func() bool { return len(listWorkflows(t, completed)) == 1 }) {
		t.Errorf("the visibility query %s does not list the session: %v", completed, listWorkflows(t, completed))
	}
	if listed := listWorkflows(t, fmt.Sprintf(`KeelStatus="running" AND WorkflowId="%s"`, run.GetID())); len(listed) != 0 {
		t.Errorf("a completed session is listed as running: %v", listed)
	}
}

// testHeartbeatTimeout is the heartbeat timeout of the sessions whose worker a test kills: the
// time the server takes to notice is the time the test waits, and 45 s (the default) in several
// tests would take minutes. Workers beat three times per timeout, so 9 s keeps two beats to spare.
const testHeartbeatTimeout = 9 * time.Second

// heartbeatTimeoutAt is when the turn's tool activity timed out for want of a heartbeat; the test
// fails if it ended any other way, since only the liveness heartbeat can notice a dead worker.
func heartbeatTimeoutAt(ctx context.Context, t *testing.T, turnID string) time.Time {
	t.Helper()
	it := env.Client().GetWorkflowHistory(ctx, turnID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetActivityTaskTimedOutEventAttributes(); a != nil {
			if got := a.GetFailure().GetTimeoutFailureInfo().GetTimeoutType(); got != enumspb.TIMEOUT_TYPE_HEARTBEAT {
				t.Fatalf("the interrupted tool call timed out by %v, want the heartbeat timeout", got)
			}
			return ev.GetEventTime().AsTime()
		}
	}
	t.Fatal("the interrupted tool call never timed out")
	return time.Time{}
}

// transcriptOf loads a finished session's transcript through `starter watch`'s path: the query
// and the store under the test's state folder are not shared here, so read it from the history.
func transcriptOf(ctx context.Context, t *testing.T, wid string) []contract.Message {
	t.Helper()
	var msgs []contract.Message
	for turn := 1; ; turn++ {
		var res contract.TurnResult
		err := env.Client().GetWorkflow(ctx, contract.TurnWorkflowID(wid, turn), "").Get(ctx, &res)
		if err != nil {
			return msgs
		}
		msgs = append(msgs, res.Pending...)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	var page string
	if !waitFor(10*time.Second, func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		page = string(b)
		return resp.StatusCode == http.StatusOK
	}) {
		t.Fatalf("could not scrape %s", url)
	}
	return page
}

// listWorkflows lists the IDs of the workflows a visibility query matches, as the Web UI's search
// and `temporal workflow list --query` do.
func listWorkflows(t *testing.T, query string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := env.Client().ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query})
	if err != nil {
		t.Fatalf("listing workflows with %s: %v", query, err)
	}
	var ids []string
	for _, e := range resp.GetExecutions() {
		ids = append(ids, e.GetExecution().GetWorkflowId())
	}
	return ids
}
