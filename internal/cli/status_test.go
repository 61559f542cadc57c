package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/keelrun/keel/internal/contract"
)

// TestSanitize: what the printer shows of text a model, a command or a work directory wrote is
// textfmt.Harmless's visible escapes, never the controls themselves.
func TestSanitize(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"plain", "go test ./...", "go test ./..."},
		{"colour", "\x1b[31mFAIL\x1b[0m calc", `\x1b[31mFAIL\x1b[0m calc`},
		{"title", "\x1b]0;pwned\x07ok", `\x1b]0;pwned\x07ok`},
		{"cursor moves", "a\x1b[2Jb\x1b[10;10Hc", `a\x1b[2Jb\x1b[10;10Hc`},
		{"tab, newline and bell", "a\tb\n\x07", "a\tb\n\\x07"},
		{"C1 and bidi", "\u009b2J\u202eexe", `\u009b2J\u202eexe`},
		{"invalid UTF-8", "a\xffb", `a\xffb`},
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
		{"escapes shown", []string{"\x1b[32mok\x1b[0m\n"}, []string{`\x1b[32mok\x1b[0m`}},
		{"tabs are spaces", []string{"a\tb\n"}, []string{"a b"}},
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
	want := "│ I will try search.\n│ I will try run_command.\n│ Done \\x1b[2J.\n• answer: ann answered edit: read calc.go\n"
	if out.String() != want {
		t.Fatalf("printed %q, want %q", out.String(), want)
	}
}

// TestModelCannotPassForKeel: every line of the model's replies starts with the gutter, however
// its deltas split, and text from the model or a command in Keel's own lines (results, notices,
// escalations, info) goes on indented lines, so no line the model wrote starts like Keel's.
func TestModelCannotPassForKeel(t *testing.T) {
	var out bytes.Buffer
	p := &textPrinter{w: &out}
	forged := "keel: fork verified\n  ✓ tests pass (approved by alice)\n→ run_command {}\n"
	for _, e := range []contract.Event{
		{Event: contract.EventDelta, Turn: 1, Text: "Done.\nkeel"},
		{Event: contract.EventDelta, Turn: 1, Text: ": all clear\n\n"},
		{Event: contract.EventDelta, Turn: 1, Text: "  ✓ tests pass\r\n"},
		{Event: contract.EventToolResult, Text: "ok\n" + forged},
		{Event: contract.EventMessage, Class: contract.RoleAssistant, Text: "hi\n" + forged, Arguments: "list_dir {}"},
		{Event: contract.EventNotice, Text: "note\n" + forged},
		{Event: contract.EventEscalation, Escalation: &contract.Escalation{ID: "esc-1", Summary: "s\n" + forged, LastError: forged}},
	} {
		p.event(e)
	}
	p.info("skipped a.txt\n" + forged)
	p.summary(contract.Summary{Status: contract.StatusCompleted, Reason: "why\n" + forged})
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(strings.TrimPrefix(l, modelGutter), "keel: fork") || strings.HasPrefix(strings.TrimPrefix(l, modelGutter), "keel: all") {
			if strings.HasPrefix(l, modelGutter) {
				continue
			}
			t.Errorf("a line of the model's passes for Keel's: %q", l)
		}
		if strings.HasPrefix(l, "  ✓ tests pass") || strings.HasPrefix(l, "→ run_command {}") {
			t.Errorf("a line of the model's passes for Keel's: %q", l)
		}
	}
	for _, want := range []string{"│ Done.\n│ keel: all clear\n│ \n│   ✓ tests pass\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printed %q, want it to hold %q", out.String(), want)
		}
	}
}

// columnsWriter is a terminal of a given width, as the printer sees a tui.Screen.
type columnsWriter struct {
	bytes.Buffer
	cols int
}

func (c *columnsWriter) Columns() int { return c.cols }

// TestReplyBreaksBeforeTheTerminalWraps: padding a reply to the terminal's width cannot put the
// model's text at the start of a row without the gutter.
func TestReplyBreaksBeforeTheTerminalWraps(t *testing.T) {
	out := &columnsWriter{cols: 20}
	p := &textPrinter{w: out}
	p.event(contract.Event{Event: contract.EventDelta, Turn: 1, Text: strings.Repeat("=", 17)})
	p.event(contract.Event{Event: contract.EventDelta, Turn: 1, Text: "keel: fork verified\néé\tx"})
	want := "│ " + strings.Repeat("=", 17) + "\n│ keel: fork verifi\n│ ed\n│ éé\tx"
	if out.String() != want {
		t.Fatalf("printed %q, want %q", out.String(), want)
	}
	for _, row := range strings.Split(out.String(), "\n") {
		if n := utf8.RuneCountInString(row); n > 19 {
			t.Errorf("row %q has %d characters, more than the terminal's 20 columns less one", row, n)
		}
	}
}
