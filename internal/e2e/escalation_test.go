package e2e

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
)

// TestBadArgsEscalation: with every tool argument truncated, no tool runs, each rejection names the
// fix, and after three repairs the session asks a person. A second process answers through
// `starter answer`; a deadline with nobody answering takes the default action.
func TestBadArgsEscalation(t *testing.T) {
	cases := []struct {
		name   string
		env    []string
		answer []string // action and flags; nil lets the deadline pass
		status string
		code   int
	}{
		{"abort", nil, []string{"abort"}, contract.StatusAborted, 1},
		{"edit", nil, []string{"edit", "--text", `use {"path":"calc.go"} and send complete JSON arguments`}, contract.StatusCompleted, 0},
		{"deadline", []string{"KEEL_ESCALATION_DEADLINE=2s"}, nil, contract.StatusAborted, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			l := startLive(t, c.env, "demo", "--inject", "bad_args", "--output", "jsonl")
			wid := l.workflowID()
			e := l.waitEvent(60*time.Second, "escalation", func(e contract.Event) bool {
				return e.Event == contract.EventEscalation && e.Escalation != nil
			})
			if e.Escalation.Reason != contract.ReasonRepairCap || len(e.Escalation.Calls) != 1 || e.Escalation.LastError == "" {
				t.Fatalf("escalation record %+v", e.Escalation)
			}
			if c.answer != nil {
				args := append([]string{"answer", wid, e.Escalation.ID}, c.answer...)
				cmd := exec.Command(starter, args...)
				cmd.Env = env.StarterEnv(t)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("starter answer: %v\n%s", err, out)
				}
				// A second answer is refused and names who answered first.
				cmd = exec.Command(starter, "answer", wid, e.Escalation.ID, "retry")
				cmd.Env = env.StarterEnv(t)
				out, err := cmd.CombinedOutput()
				if err == nil || !(strings.Contains(string(out), "already answered") || strings.Contains(string(out), "already ended")) {
					t.Fatalf("a second answer was not refused: %v\n%s", err, out)
				}
				if strings.Count(string(out), "\n") != 1 {
					t.Fatalf("the refusal should be one line: %q", out)
				}
			}
			r := l.finish()
			if r.Code != c.code || r.Summary.Status != c.status {
				t.Fatalf("exit %d, status %q (reason %q); want %d, %q", r.Code, r.Summary.Status, r.Summary.Reason, c.code, c.status)
			}
			requireTemporalEnd(t, r.Summary)
			requireStamped(t, r)
			if n := len(e.Escalation.Tried); n != contract.RepairCap+1 {
				t.Errorf("the escalation lists %d tried calls, want all %d rejected ones: %q", n, contract.RepairCap+1, e.Escalation.Tried)
			}
			blocked, ranBeforeAnswer := 0, 0
			for _, ev := range r.Events {
				switch {
				case ev.Event == contract.EventBlocked:
					blocked++
					if !strings.Contains(ev.Text, "send a complete JSON object") && !strings.Contains(ev.Text, "fix") {
						t.Errorf("a rejection does not name the fix: %q", ev.Text)
					}
				case ev.Event == contract.EventToolCall && ev.Turn <= e.Turn:
					ranBeforeAnswer++
				}
			}
			if blocked < 4 || ranBeforeAnswer != 0 {
				t.Fatalf("%d rejections, %d tool activities before the answer; want >= 4 and 0", blocked, ranBeforeAnswer)
			}
			if r.Summary.BlockedCalls != blocked {
				t.Fatalf("the summary counts %d blocked calls; the stream showed %d", r.Summary.BlockedCalls, blocked)
			}
		})
	}
}

// TestPolicyViolationEscalates: a command outside the allow list is refused with nothing run and
// escalated as a policy violation; nobody answers, so the deadline aborts the session.
func TestPolicyViolationEscalates(t *testing.T) {
	r := runStarter(t, []string{"KEEL_TOOLS_COMMANDS=ls", "KEEL_ESCALATION_DEADLINE=2s"}, "demo", "--output", "jsonl")
	if r.Code != 1 || r.Summary.Status != contract.StatusAborted {
		t.Fatalf("exit %d, summary %+v", r.Code, r.Summary)
	}
	var esc *contract.Escalation
	for _, e := range r.Events {
		if e.Event == contract.EventEscalation && e.Escalation != nil {
			esc = e.Escalation
		}
	}
	if esc == nil || esc.Reason != contract.ReasonPolicy || len(esc.Calls) != 1 || esc.Calls[0].Name != "run_command" {
		t.Fatalf("escalation %+v, want a policy violation for run_command", esc)
	}
	for _, e := range resultsOf(r, "run_command") {
		if !e.IsError || !strings.Contains(e.Text, "does not allow") {
			t.Fatalf("the command was not refused: %+v", e)
		}
	}
}
