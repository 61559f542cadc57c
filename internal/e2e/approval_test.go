package e2e

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
)

// TestApprovalFromAnotherProcess: with approval required for writes, each write waits for a person;
// a stale or mismatched approval is refused with a reason, and approvals sent by another process
// let the session complete.
func TestApprovalFromAnotherProcess(t *testing.T) {
	shared := env.StarterEnv(t, "KEEL_TOOLS_APPROVAL=writes")
	l := startLiveEnv(t, shared, "demo", "--output", "jsonl")
	wid := l.workflowID()
	approve := func(args ...string) (string, error) {
		cmd := exec.Command(starter, append([]string{"approve", wid}, args...)...)
		cmd.Env = shared
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	approved := 0
	for seen := 0; ; {
		a, ok := l.nextApproval(60*time.Second, seen)
		if !ok {
			break
		}
		seen = a.Seq
		if approved == 0 {
			if out, err := approve("call_not_waiting", "--digest", contract.Digest(a.Arguments)); err == nil || !strings.Contains(out, "stale approval") {
				t.Fatalf("a stale approval was not refused: %v\n%s", err, out)
			}
			if out, err := approve(a.CallID, "--digest", contract.Digest(a.Arguments+" ")); err == nil || !strings.Contains(out, "mismatched approval") {
				t.Fatalf("a mismatched approval was not refused: %v\n%s", err, out)
			}
		}
		if out, err := approve(a.CallID, "--digest", contract.Digest(a.Arguments)); err != nil || !strings.Contains(out, "approved") {
			t.Fatalf("approving %s: %v\n%s", a.Tool, err, out)
		}
		approved++
		if out, err := approve(a.CallID, "--digest", contract.Digest(a.Arguments)); err == nil {
			t.Fatalf("a replayed approval was accepted:\n%s", out)
		}
	}
	r := l.finish()
	if r.Code != 0 || r.Summary.Status != contract.StatusCompleted || approved < 3 {
		t.Fatalf("exit %d, %+v after %d approvals\n%s", r.Code, r.Summary, approved, r.Stderr)
	}
}
