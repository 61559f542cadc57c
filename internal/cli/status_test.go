package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
)

func TestSanitize(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"plain", "go test ./...", "go test ./..."},
		{"colour", "\x1b[31mFAIL\x1b[0m calc", "FAIL calc"},
		{"title", "\x1b]0;pwned\x07ok", "ok"},
		{"title ended by ST", "\x1b]2;x\x1b\\ok", "ok"},
		{"cursor moves", "a\x1b[2Jb\x1b[10;10Hc", "abc"},
		{"tab and bell", "a\tb\x07", "a b"},
		{"newlines kept", "a\nb\n", "a\nb\n"},
		{"backspace and DEL", "a\bb\x7f", "ab"},
		{"invalid UTF-8", "a\xffb", "a?b"},
		{"lone Esc at the end", "a\x1b", "a"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := sanitize(c.in); got != c.want {
				t.Fatalf("sanitize(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

func TestOutputTail(t *testing.T) {
	cases := []struct {
		name   string
		chunks []string
		want   []string
	}{
		{"nothing", nil, nil},
		{"one partial line", []string{"step 1"}, []string{"step 1"}},
		{"lines split across chunks", []string{"step 1\nst", "ep 2\n"}, []string{"step 1", "step 2"}},
		{"only the last four", []string{"1\n2\n3\n4\n5\n6\n"}, []string{"3", "4", "5", "6"}},
		{"partial counts among the four", []string{"1\n2\n3\n4\n5"}, []string{"2", "3", "4", "5"}},
		{"progress bar keeps its last drawing", []string{"10%\r50%\r90%\n"}, []string{"90%"}},
		{"escapes dropped", []string{"\x1b[32mok\x1b[0m\n"}, []string{"ok"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var tail outputTail
			for _, ch := range c.chunks {
				tail.add(ch)
			}
			got := tail.lines()
			if strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Fatalf("lines = %q, want %q", got, c.want)
			}
		})
	}
}

func TestProgressLines(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := newProgress(t0)
	p.tokens = 4612
	steps := []struct {
		event contract.Event
		at    time.Duration
		want  string
	}{
		{contract.Event{Event: contract.EventModelCall, Attempt: 1}, 0, "model call 2.0s · session 2.0s · 4612 tokens · esc to interrupt"},
		{contract.Event{Event: contract.EventRetry, Attempt: 2, WaitMS: 3000}, 5 * time.Second, "model call, attempt 2 in 1.0s · session 7.0s"},
		{contract.Event{Event: contract.EventModelCall, Attempt: 2}, 8 * time.Second, "model call, attempt 2 2.0s · session 10s"},
		{contract.Event{Event: contract.EventToolCall, Tool: "run_command", CallID: "c1", Arguments: `{"command":"go test ./..."}`}, 10 * time.Second, "run_command go test ./... 2.0s · session 12s"},
		{contract.Event{Event: contract.EventOutput, CallID: "other", Text: "not ours\n"}, 11 * time.Second, "run_command go test ./... 3.0s"},
		{contract.Event{Event: contract.EventToolResult, CallID: "c1"}, 70 * time.Second, "working 2.0s · session 1m 12s"},
	}
	for _, s := range steps {
		p.observe(s.event, t0.Add(s.at))
		lines := p.lines(t0.Add(s.at + 2*time.Second))
		if !strings.Contains(lines[0], s.want) {
			t.Errorf("after %s: status %q, want it to contain %q", s.event.Event, lines[0], s.want)
		}
		if len(lines) != 1 {
			t.Errorf("after %s: %d lines, want only the status line: %q", s.event.Event, len(lines), lines)
		}
	}
	p.observe(contract.Event{Event: contract.EventToolCall, Tool: "run_command", CallID: "c2", Arguments: `{"command":"make"}`}, t0)
	p.observe(contract.Event{Event: contract.EventOutput, CallID: "c2", Text: "cc -o x x.c\n"}, t0)
	if lines := p.lines(t0); len(lines) != 2 || !strings.Contains(lines[1], "cc -o x x.c") {
		t.Errorf("the running command's output is not under the status line: %q", lines)
	}
	p.observe(contract.Event{Event: contract.EventToolCall, Tool: "run_command", CallID: "c3", Arguments: `{"command":"go test -run TestEverythingThatIsLong ./internal/..."}`}, t0)
	p.tokens = 1234567
	// An 80-column screen writes 79 (the last column would wrap): the line ends whole in them.
	if l := []rune(p.lines(t0.Add(75 * time.Minute))[0]); len(l) > 79 || !strings.HasSuffix(string(l), "· session 1h 15m · 1234567 tokens · esc to interrupt") {
		t.Errorf("the status line of %d characters does not end whole within %d: %q", len(l), statusWidth, string(l))
	}
	p.tokens = 4612
	p.waiting = "waiting for escalation esc-1"
	if l := p.lines(t0)[0]; !strings.Contains(l, "waiting for escalation esc-1 · session") {
		t.Errorf("waiting status %q", l)
	}
}

func TestTextPrinterMessagesOnTheirOwnLines(t *testing.T) {
	var out bytes.Buffer
	p := &textPrinter{w: &out}
	for _, e := range []contract.Event{
		{Event: contract.EventModelCall, Turn: 1, Attempt: 1},
		{Event: contract.EventDelta, Turn: 1, Text: "I will try "},
		{Event: contract.EventDelta, Turn: 1, Text: "search."},
		{Event: contract.EventDelta, Turn: 2, Text: "I will try run_command."},
		{Event: contract.EventModelCall, Turn: 3, Attempt: 1},
		{Event: contract.EventOutput, Turn: 3, Text: "not printed"},
		{Event: contract.EventDelta, Turn: 3, Text: "Done \x1b[2J."},
		{Event: contract.EventAnswer, Text: "ann answered edit", Escalation: &contract.Escalation{Answer: &contract.Answer{Action: contract.ActionEdit, Text: "read calc.go"}}},
	} {
		p.event(e)
	}
	want := "I will try search.\nI will try run_command.\nDone .\n• answer: ann answered edit: read calc.go\n"
	if out.String() != want {
		t.Fatalf("printed %q, want %q", out.String(), want)
	}
}
