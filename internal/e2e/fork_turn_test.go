package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/demo"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/tools/snapshot"
)

// TestForkStartsFromTheTurnsFiles: `fork --turn 2` of a session that fixed calc.go at turn 4
// starts from the work directory as it was after turn 2, so the fork's `go test` at turn 3 fails
// again, as the original's did; the original's directory keeps its fix. A session whose
// snapshots are gone is refused with one line, and nothing starts.
func TestForkStartsFromTheTurnsFiles(t *testing.T) {
	gw := fakegw.New(fakegw.Options{})
	if err := gw.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	environ := env.StarterEnv(t, "KEEL_GATEWAY_FAKE=true", "KEEL_GATEWAY_BASE_URL="+gw.BaseURL()+"/v1")
	workerBin, err := env.Build("./worker")
	if err != nil {
		t.Fatal(err)
	}
	w := &workerProc{bin: workerBin, env: environ, t: t}
	w.start()
	defer w.kill()
	ws := t.TempDir()
	if err := demo.CopyWorkspace(ws); err != nil {
		t.Fatal(err)
	}

	orig := runIn(t, environ, "run", "--workdir", ws, "--output", "jsonl", "fix the failing test")
	if orig.Code != 0 || orig.Summary.Status != contract.StatusCompleted {
		t.Fatalf("the session: exit %d, summary %+v\n%s", orig.Code, orig.Summary, orig.Stderr)
	}
	if got := testResults(orig.Events); strings.Join(got, ",") != "3:failed,5:passed" {
		t.Fatalf("the original's go test results by turn: %v, want 3:failed,5:passed", got)
	}
	fixed := readFile(t, filepath.Join(ws, "calc.go"))

	fork := runIn(t, environ, "fork", orig.Summary.WorkflowID, "--turn", "2", "--output", "jsonl")
	if fork.Code != 0 || fork.Summary.Status != contract.StatusCompleted {
		t.Fatalf("the fork: exit %d, summary %+v\n%s", fork.Code, fork.Summary, fork.Stderr)
	}
	if got := testResults(fork.Events); len(got) == 0 || got[0] != "3:failed" {
		t.Fatalf("the fork's go test results by turn: %v; want the first at turn 3 to fail, on the files as they were after turn 2", got)
	}
	if readFile(t, filepath.Join(ws, "calc.go")) != fixed {
		t.Fatal("the fork changed the original's calc.go")
	}

	// Without the snapshots (an older session, another worker's state), fork refuses.
	if err := os.RemoveAll(filepath.Join(snapshot.Dir(envValue(environ, "KEEL_DEV_STATE_DIR")), orig.Summary.WorkflowID)); err != nil {
		t.Fatal(err)
	}
	refused := runIn(t, environ, "fork", orig.Summary.WorkflowID, "--turn", "2", "--output", "jsonl")
	lines := nonEmptyLines(refused.Stderr)
	if refused.Code != 2 || len(lines) != 1 || !strings.Contains(lines[0], "no snapshot of its work directory") {
		t.Fatalf("fork without snapshots: exit %d, stderr %q; want exit 2 and one line saying there is no snapshot", refused.Code, refused.Stderr)
	}
	if len(refused.Events) > 0 {
		t.Fatalf("fork without snapshots started something: %+v", refused.Events)
	}
}

// testResults are the session's go test results as "turn:passed" or "turn:failed", in order.
func testResults(evs []contract.Event) []string {
	var out []string
	for _, e := range evs {
		if e.Event == contract.EventToolResult && e.Tool == "run_command" {
			verdict := "passed"
			if strings.Contains(e.Text, "FAIL") || e.IsError {
				verdict = "failed"
			}
			out = append(out, strconv.Itoa(e.Turn)+":"+verdict)
		}
	}
	return out
}
