package e2e

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/session"
)

// starterOut runs a starter command to the end and returns its exit status and output.
func starterOut(t *testing.T, environ []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(starter, args...)
	cmd.Env = environ
	out, err := cmd.CombinedOutput()
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("starter %v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

// listed reads `starter list -o jsonl` and returns the rows by workflow ID, failing on a row that
// is not a session or a session listed twice.
func listed(t *testing.T, environ []string, args ...string) map[string]session.Row {
	t.Helper()
	code, out := starterOut(t, environ, append([]string{"list", "-o", "jsonl"}, args...)...)
	if code != 0 {
		t.Fatalf("starter list: exit %d\n%s", code, out)
	}
	rows := map[string]session.Row{}
	for _, l := range nonEmptyLines(out) {
		var r session.Row
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("a listing line that is not a row: %q", l)
		}
		if strings.Contains(r.WorkflowID, "/turn-") {
			t.Fatalf("a turn child in the listing: %+v", r)
		}
		if _, dup := rows[r.WorkflowID]; dup {
			t.Fatalf("session %s listed twice", r.WorkflowID)
		}
		rows[r.WorkflowID] = r
	}
	return rows
}

// TestListAndEscalations: `starter escalations` lists a call waiting for approval with the command
// that decides it; `starter list` shows sessions only, each once however often it continued as
// new, with its status, task, turns, tokens, start and whom it waits on, and filters by status.
func TestListAndEscalations(t *testing.T) {
	environ := env.StarterEnv(t, "KEEL_TEMPORAL_TURNS_PER_RUN=2")
	done := startLiveEnv(t, environ, "demo", "-o", "jsonl").finish()
	if done.Code != 0 || done.Summary.Turns < 4 {
		t.Fatalf("the demo: exit %d, summary %+v\n%s", done.Code, done.Summary, done.Stderr)
	}

	waiting := startLiveEnv(t, append(environ, "KEEL_TOOLS_APPROVAL=writes"), "demo", "--inject", "long_command", "-o", "jsonl")
	wid := waiting.workflowID()
	call := waiting.waitEvent(60*time.Second, "approval", func(e contract.Event) bool { return e.Event == contract.EventApproval })

	code, out := starterOut(t, environ, "escalations")
	if code != 0 || !strings.Contains(out, "Session "+wid+" waits for approval of a run_command call") ||
		!strings.Contains(out, "starter approve "+wid+" "+call.CallID+" --digest ") {
		t.Fatalf("escalations: exit %d, want the waiting approval and its command:\n%s", code, out)
	}

	rows := listed(t, environ, "--limit", "500")
	w, ok := rows[wid]
	if !ok || w.Status != contract.StatusWaiting || !strings.Contains(w.Waiting, "approval of run_command") || !strings.HasPrefix(w.Task, "The tests of the Go package") || w.Started.IsZero() {
		t.Fatalf("the waiting session is listed as %+v (listed: %v)", w, ok)
	}
	d, ok := rows[done.Summary.WorkflowID]
	if !ok || d.Status != contract.StatusCompleted || d.Turns != int64(done.Summary.Turns) || d.Tokens != done.Summary.Usage.Total() || d.Task == "" {
		t.Fatalf("the finished session is listed as %+v (listed: %v), its summary says %d turns, %d tokens", d, ok, done.Summary.Turns, done.Summary.Usage.Total())
	}
	if only := listed(t, environ, "--status", "waiting", "--limit", "500"); len(only) == 0 || only[done.Summary.WorkflowID].WorkflowID != "" {
		t.Fatalf("--status waiting listed %v", only)
	}
	code, out = starterOut(t, environ, "list")
	if code != 0 || !strings.Contains(out, "WAITING ON") || !strings.Contains(out, wid) {
		t.Fatalf("list: exit %d\n%s", code, out)
	}
	if code, out := starterOut(t, environ, "list", "--status", "sleeping"); code != 2 || !strings.Contains(out, "running, waiting, waiting_reset, completed") {
		t.Fatalf("list --status sleeping: exit %d, want 2 naming the statuses\n%s", code, out)
	}

	if code, out := starterOut(t, environ, "cancel", wid); code != 0 {
		t.Fatalf("cancel: exit %d\n%s", code, out)
	}
	if r := waiting.finish(); r.Summary.Status != contract.StatusCancelled {
		t.Fatalf("the waiting session ended %+v", r.Summary)
	}
	if c := listed(t, environ, "--status", "cancelled", "--limit", "500")[wid]; c.Status != contract.StatusCancelled || c.Waiting != "" {
		t.Fatalf("--status cancelled lists the session as %+v", c)
	}
}
