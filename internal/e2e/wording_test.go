package e2e

import (
	"regexp"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/contract"
)

// durationRE matches a duration as text output writes it (textfmt.Duration).
const durationRE = `(\d+ms|\d\.\ds|\d+s|\d+m \d\ds|\d+h \d\dm)`

// TestWordingAndNumbers: through the real starter and its worker, the escalation notice names the
// time left and the default action, the answer the deadline gives reads naturally, counts take
// their noun's number, jsonl carries the time spent in milliseconds (spent_ms), and a command
// result mentions changed files only when the command failed.
func TestWordingAndNumbers(t *testing.T) {
	t.Run("escalation text", func(t *testing.T) {
		t.Parallel()
		cmd, stdout, stderr := startStarter(t, []string{"KEEL_ESCALATION_DEADLINE=2s", "KEEL_ESCALATION_DEFAULT_ACTION=abort"}, "demo", "--inject", "bad_args", "--output", "text")
		if err := cmd.Wait(); cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 {
			t.Fatalf("the demo: %v, want exit 1 (aborted)\nstderr:\n%s", err, stderr)
		}
		out := stdout.String()
		for _, want := range []*regexp.Regexp{
			regexp.MustCompile(`Deadline in (\d+ms|\d\.\ds) \(then: abort\), at 20\d\d-`),
			regexp.MustCompile(`• answer: the deadline passed: abort`),
			regexp.MustCompile(`(?m)^aborted · \d+ turns? · \d+ tool calls? \(\d+ blocked\) · \d+ tokens? · `),
		} {
			if !want.MatchString(out) {
				t.Errorf("the text output lacks %s:\n%s", want, out)
			}
		}
		for _, bad := range []string{"via timer", "deadline answered", "(the default action is taken then)", " 1 turns", " 1 tool calls"} {
			if strings.Contains(out, bad) {
				t.Errorf("the text output says %q:\n%s", bad, out)
			}
		}
	})
	t.Run("jsonl milliseconds", func(t *testing.T) {
		t.Parallel()
		r := runStarter(t, []string{"KEEL_ESCALATION_DEADLINE=2s"}, "demo", "--inject", "bad_args", "--output", "jsonl")
		var esc string
		for _, l := range strings.Split(r.Stdout, "\n") {
			if strings.Contains(l, `"event":"escalation"`) {
				esc = l
				break
			}
		}
		if !regexp.MustCompile(`"spent_ms":\d+`).MatchString(esc) || strings.Contains(esc, `"spent":`) || !strings.Contains(esc, `"default_action":"abort"`) {
			t.Fatalf("the escalation line does not carry spent_ms and default_action (and no nanosecond spent):\n%s", esc)
		}
	})
	t.Run("command results", func(t *testing.T) {
		t.Parallel()
		r := runStarter(t, nil, "demo", "--output", "jsonl")
		var failed, passed int
		for _, e := range r.Events {
			if e.Event != contract.EventToolResult || e.Tool != "run_command" {
				continue
			}
			switch {
			case strings.Contains(e.Text, "exit status 0 (success)"):
				passed++
				if strings.Contains(e.Text, "changed") {
					t.Errorf("a command that succeeded speaks of changed files: %q", e.Text)
				}
			case strings.Contains(e.Text, "failed"):
				failed++
				if !strings.Contains(e.Text, "may have changed files") {
					t.Errorf("a command that failed does not say it may have changed files: %q", e.Text)
				}
			}
		}
		if failed == 0 || passed == 0 {
			t.Fatalf("the demo ran %d failing and %d passing commands; want both\n%s", failed, passed, r.Stdout)
		}
	})
}
