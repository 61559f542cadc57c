package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/demo"
	"github.com/keelrun/keel/internal/devkit/testenv"
)

// TestWatchForkAttemptsJobs drives a running dev stack (`starter dev`) from other processes:
// watch re-attaches to a running session, fork starts a new one from its first turns, attempts
// reads the ledger, and two concurrent starts of the same job make one execution.
func TestWatchForkAttemptsJobs(t *testing.T) {
	shared := env.StarterEnv(t, "KEEL_TOOLS_COMMAND_TIMEOUT=4s")
	dev := startLiveEnv(t, shared, "dev")
	if !waitFor(60*time.Second, func() bool { return strings.Contains(dev.stdout.String(), "keel: model: ") }) {
		t.Fatalf("starter dev did not come up: %s", dev.stderr.String())
	}

	a := startLiveEnv(t, shared, "demo", "--inject", "hang", "--output", "jsonl")
	wid := a.workflowID()
	a.waitEvent(30*time.Second, "the hanging command", func(e contract.Event) bool {
		return e.Event == contract.EventToolCall && strings.Contains(e.Arguments, "sleep 3600")
	})

	w := startLiveEnv(t, shared, "watch", wid, "--output", "jsonl")
	watched := w.finish()
	if r := a.finish(); r.Summary.Status != contract.StatusCompleted {
		t.Fatalf("the watched session ended %q: %s", r.Summary.Status, r.Stderr)
	}
	if watched.Code != 0 || watched.Summary.WorkflowID != wid || watched.Summary.Status != contract.StatusCompleted {
		t.Fatalf("watch: exit %d, summary %+v\n%s", watched.Code, watched.Summary, watched.Stderr)
	}
	var replayed, live int
	var firstCall string
	for _, e := range watched.Events {
		switch e.Event {
		case contract.EventMessage:
			if live > 0 {
				t.Fatal("transcript messages after live events")
			}
			replayed++
		case contract.EventToolCall, contract.EventToolResult, contract.EventDelta:
			live++
			if e.Event == contract.EventToolResult && e.Turn <= 2 && firstCall == "" {
				firstCall = e.CallID
			}
		}
	}
	if replayed < 2 || live == 0 || firstCall == "" {
		t.Fatalf("watch showed %d transcript messages and %d live events (first call %q)", replayed, live, firstCall)
	}

	noTurn := exec.Command(starter, "fork", wid)
	noTurn.Env = shared
	if out, err := noTurn.CombinedOutput(); noTurn.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "--turn") {
		t.Fatalf("fork without --turn: %v, want exit 2 naming --turn\n%s", err, out)
	}
	fork := startLiveEnv(t, shared, "fork", wid, "--turn", "2", "--edit", firstCall+"=README.md calc.go calc_test.go go.mod", "--output", "jsonl")
	fr := fork.finish()
	if fr.Code != 0 || fr.Summary.Status != contract.StatusCompleted || fr.Summary.Turns <= 2 {
		t.Fatalf("fork: exit %d, summary %+v\n%s", fr.Code, fr.Summary, fr.Stderr)
	}
	original, forked := startedInputOf(t, wid).Workdir, startedInputOf(t, fr.Summary.WorkflowID).Workdir
	if forked == original {
		t.Fatalf("the fork ran in the original's work directory %s", original)
	}
	if _, err := os.Stat(filepath.Join(forked, "calc.go")); err != nil {
		t.Fatalf("the fork's work directory is not a copy of the original's: %v", err)
	}
	for _, e := range fr.Events {
		if e.Event == contract.EventToolCall && e.Turn <= 2 {
			t.Fatalf("the fork re-ran a tool from the copied turns: %+v", e)
		}
	}

	att := exec.Command(starter, "attempts", wid)
	att.Env = shared
	out, err := att.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "CallModel") || !strings.Contains(string(out), "RunTool (run_command sleep 3600)") {
		t.Fatalf("attempts: %v\n%s", err, out)
	}

	jobRuns(t, shared)
}

// jobRuns starts the same job from two starters at the same moment, then once more after it ended.
func jobRuns(t *testing.T, shared []string) {
	t.Helper()
	ws := t.TempDir()
	if err := demo.CopyWorkspace(ws); err != nil {
		t.Fatal(err)
	}
	repo := fmt.Sprintf("example.com/calc-%d", time.Now().UnixNano())
	args := []string{"run", "--repo", repo, "--commit", "abc123", "--path", ".", "--workdir", ws, "--output", "jsonl", "fix the failing test"}
	environ := append(append([]string(nil), shared...), "KEEL_GATEWAY_FAKE=true")
	var wg sync.WaitGroup
	results := make([]testenv.Run, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = startLiveEnv(t, environ, args...).finish()
		}()
	}
	wg.Wait()
	again := startLiveEnv(t, environ, args...).finish()
	if !strings.Contains(again.Stdout+again.Stderr, "already ran; its result follows") {
		t.Errorf("a start after the job ended does not say it already ran:\n%s%s", again.Stdout, again.Stderr)
	}
	for i, r := range append(results, again) {
		if r.Code != 0 || r.Summary.Status != contract.StatusCompleted {
			t.Fatalf("start %d: exit %d, summary %+v\n%s", i, r.Code, r.Summary, r.Stderr)
		}
		if r.Summary.WorkflowID != results[0].Summary.WorkflowID || r.Summary.RunID != results[0].Summary.RunID {
			t.Fatalf("start %d ran as %s/%s, not as the first start's %s/%s", i, r.Summary.WorkflowID, r.Summary.RunID, results[0].Summary.WorkflowID, results[0].Summary.RunID)
		}
	}
	resp, err := env.Client().ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
		Query: fmt.Sprintf("WorkflowId = '%s'", results[0].Summary.WorkflowID),
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(resp.GetExecutions()); n != 1 {
		t.Fatalf("%d executions of one job, want 1", n)
	}
}
