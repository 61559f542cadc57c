package fakegw

import (
	"testing"
	"time"
)

// TestBenchReply: a ModeBench model calls the script's tool once a turn, never with the same
// argument text twice in a row, answers after the script's turns, and streams only when asked.
func TestBenchReply(t *testing.T) {
	cases := []struct {
		name     string
		script   BenchScript
		answered int
		tool     string
		slow     int
	}{
		{"list_dir", BenchScript{Turns: 3}, 0, "list_dir", 0},
		{"list_dir, second turn", BenchScript{Turns: 3}, 1, "list_dir", 0},
		{"command", BenchScript{Turns: 2, Command: "sleep 2"}, 1, "run_command", 0},
		{"answer", BenchScript{Turns: 2}, 2, "", 0},
		{"streamed", BenchScript{Turns: 1, Stream: 3 * time.Second}, 0, "list_dir", 30},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := transcript{Messages: []message{{Role: "user", Text: BenchTask("task 1", c.script)}}}
			var prev string
			for i := range c.answered {
				r := benchReply(tr)
				if len(r.Calls) != 1 {
					t.Fatalf("turn %d: %d calls, want 1", i+1, len(r.Calls))
				}
				if r.Calls[0].Args == prev {
					t.Fatalf("turn %d repeats the argument text %s", i+1, prev)
				}
				prev = r.Calls[0].Args
				r.Calls[0].ID = "c"
				tr.Messages = append(tr.Messages, message{Role: "assistant", Calls: r.Calls}, message{Role: "tool", CallID: "c", Text: "ok"})
			}
			r := benchReply(tr)
			switch {
			case c.tool == "" && (len(r.Calls) != 0 || r.Text != BenchAnswer):
				t.Fatalf("got %+v, want the answer", r)
			case c.tool != "" && (len(r.Calls) != 1 || r.Calls[0].Name != c.tool || r.Calls[0].Args == prev):
				t.Fatalf("got %+v, want one %s call with new argument text", r, c.tool)
			}
			if got := len(benchSlow(tr)); got != c.slow {
				t.Fatalf("%d slow deltas, want %d", got, c.slow)
			}
			if tr.mode() != ModeBench {
				t.Fatalf("the task's mode is %q", tr.mode())
			}
		})
	}
}
