package e2e

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/contract"
)

// TestAttemptsShowKeelsClass: `starter attempts` names Keel's failure class of a retried model
// call (throttle for a rate limit), not the error type, in its CLASS column and in its jsonl
// records (-o jsonl).
func TestAttemptsShowKeelsClass(t *testing.T) {
	shared := env.StarterEnv(t)
	r := startLiveEnv(t, shared, "demo", "--inject", "rate_limit", "-o", "jsonl").finish()
	if r.Summary.Status != contract.StatusCompleted {
		t.Fatalf("the rate-limited demo ended %q\n%s", r.Summary.Status, r.Stderr)
	}
	wid := r.Summary.WorkflowID
	attempts := func(args ...string) string {
		cmd := exec.Command(starter, append([]string{"attempts", wid}, args...)...)
		cmd.Env = shared
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("starter attempts %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	text := attempts()
	if strings.Contains(text, contract.ModelErrorType) || !strings.Contains(text, contract.ClassThrottle) {
		t.Fatalf("the CLASS column does not show Keel's class:\n%s", text)
	}
	retried := 0
	for _, line := range nonEmptyLines(attempts("-o", "jsonl")) {
		var rec struct {
			Event      string `json:"event"`
			Time       string `json:"time"`
			WorkflowID string `json:"workflow_id"`
			Activity   string `json:"activity"`
			Attempts   int    `json:"attempts"`
			Class      string `json:"class"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("attempts -o jsonl printed %q: %v", line, err)
		}
		if rec.Event != "attempt" || rec.Time == "" || rec.WorkflowID != wid {
			t.Fatalf("an attempt record lacks its event, time or workflow ID: %s", line)
		}
		if strings.HasPrefix(rec.Activity, contract.CallModelActivity) && rec.Attempts > 1 {
			retried++
			if rec.Class != contract.ClassThrottle {
				t.Fatalf("a retried model call has class %q, want %q: %s", rec.Class, contract.ClassThrottle, line)
			}
		}
	}
	if retried == 0 {
		t.Fatal("no retried model call in the attempt records")
	}
}
