package cli

import (
	"bytes"
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/session"
)

// TestArgumentErrorsShowUsage: a command called with the wrong arguments or an unknown flag says
// what was wrong, then its usage line and an example, and exits 2; nothing reaches Temporal.
func TestArgumentErrorsShowUsage(t *testing.T) {
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"answer", "onlyone"}, []string{"accepts between 2 and 3 arg(s), received 1", "usage: starter answer WORKFLOW_ID [ESCALATION_ID] retry|edit|abort", "example:", "starter answer " + exampleID + " esc-", "edit --text"}},
		{[]string{"cancel"}, []string{"accepts 1 arg(s), received 0", "usage: starter cancel WORKFLOW_ID", "starter cancel " + exampleID}},
		{[]string{"say", "only-the-id"}, []string{"usage: starter say WORKFLOW_ID TEXT", "starter say " + exampleID}},
		{[]string{"fork"}, []string{"usage: starter fork WORKFLOW_ID --turn N", "--turn 3"}},
		{[]string{"run", "one", "two"}, []string{"usage: starter run", "starter run --workdir"}},
		{[]string{"list", "--nope"}, []string{"unknown flag: --nope", "usage: starter list", "starter list --status waiting"}},
		{[]string{"escalations", "extra"}, []string{"usage: starter escalations", "starter escalations --help says more"}},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := Main(context.Background(), c.args, &out, &errOut)
			if code != ExitUsage {
				t.Fatalf("exit %d, want %d\n%s", code, ExitUsage, errOut.String())
			}
			for _, w := range c.want {
				if !strings.Contains(errOut.String(), w) {
					t.Errorf("the error does not say %q:\n%s", w, errOut.String())
				}
			}
		})
	}
}

// TestDemoHelpDescribesModes: `demo --help` gives every inject mode a line of its own that says
// what it does, from the table where the modes are defined.
func TestDemoHelpDescribesModes(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := Main(context.Background(), []string{"demo", "--help"}, &out, &errOut); code != ExitOK {
		t.Fatalf("exit %d\n%s", code, errOut.String())
	}
	lines := strings.Split(out.String(), "\n")
	for _, m := range fakegw.ModeTable {
		found := false
		for _, l := range lines {
			f := strings.Fields(l)
			if len(f) > 1 && f[0] == m.Name && strings.HasSuffix(l, m.Does) {
				found = true
			}
		}
		if !found {
			t.Errorf("no help line for %s saying %q:\n%s", m.Name, m.Does, out.String())
		}
	}
	if len(fakegw.ModeTable) != len(fakegw.Modes) {
		t.Fatalf("%d described modes, %d modes", len(fakegw.ModeTable), len(fakegw.Modes))
	}
}

// TestSignalReason: a SIGTERM is reported as a signal, never as the terminal.
func TestSignalReason(t *testing.T) {
	for sig, want := range map[syscall.Signal]string{
		syscall.SIGTERM: "terminated by a signal (SIGTERM)",
		syscall.SIGINT:  "interrupted by a signal (SIGINT)",
	} {
		if got := signalReason(sig); got != want {
			t.Errorf("%v: %q, want %q", sig, got, want)
		}
	}
}

// TestSwallowSecondKey: after a cancel key, keys that arrive within secondKeyGrace are read and
// dropped before the starter gives the terminal back; with no cancel key nothing waits.
func TestSwallowSecondKey(t *testing.T) {
	keys := make(chan []byte, 1)
	f := &follower{}
	start := time.Now()
	f.swallowSecondKey(keys)
	if took := time.Since(start); took > 50*time.Millisecond {
		t.Fatalf("waited %s with no cancel key pressed", took)
	}

	f.cancelKeyAt = time.Now()
	go func() { keys <- []byte{0x1b} }()
	f.swallowSecondKey(keys)
	if took := time.Since(f.cancelKeyAt); took < secondKeyGrace {
		t.Fatalf("returned after %s, before the grace of %s", took, secondKeyGrace)
	}
	select {
	case k := <-keys:
		t.Fatalf("the second key %q was left for the shell", k)
	default:
	}
}

// TestListRows: the listing's table has one row per session with the task shortened, counts with
// thousands separators, today's starts as a clock time, and "-" for a session nobody is waited on.
func TestListRows(t *testing.T) {
	now := time.Date(2026, 3, 4, 15, 0, 0, 0, time.Local)
	rows := []session.Row{
		{WorkflowID: "keel-run-a", Status: "waiting", Task: strings.Repeat("fix the failing test ", 5), Turns: 3, Tokens: 12345,
			Started: now.Add(-time.Hour), Waiting: "approval of run_command (call c1)"},
		{WorkflowID: "keel-demo-b", Status: "completed", Task: "short", Turns: 6, Tokens: 964, Started: now.AddDate(0, 0, -2)},
	}
	var b bytes.Buffer
	printRows(&b, rows, now)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") {
		t.Fatalf("want a header and two rows:\n%s", b.String())
	}
	for _, want := range []string{"keel-run-a", "waiting", "fix the failing test fix the failing test fix...", "12,345", "14:00:00", "approval of run_command (call c1)"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("row 1 lacks %q: %s", want, lines[1])
		}
	}
	for _, want := range []string{"keel-demo-b", "completed", "964", "2026-03-02 15:00", " -"} {
		if !strings.Contains(lines[2], want) {
			t.Errorf("row 2 lacks %q: %s", want, lines[2])
		}
	}
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567"} {
		if got := groupDigits(n); got != want {
			t.Errorf("groupDigits(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestHelpGroups: --help lists the commands in groups, how to start a session first, then how to
// watch and answer one, and every command is in one.
func TestHelpGroups(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := Main(context.Background(), []string{"--help"}, &out, &errOut); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	help := out.String()
	start, steer, operate := strings.Index(help, "Start here:"), strings.Index(help, "Watch and answer:"), strings.Index(help, "Operate:")
	if start < 0 || steer < start || operate < steer || strings.Contains(help, "Additional Commands") {
		t.Fatalf("the groups are missing or out of order:\n%s", help)
	}
	if run := strings.Index(help, "\n  run "); run < start || run > steer {
		t.Fatalf("run is not under Start here:\n%s", help)
	}
	if watch := strings.Index(help, "\n  watch "); watch < steer || watch > operate {
		t.Fatalf("watch is not under Watch and answer:\n%s", help)
	}
}
