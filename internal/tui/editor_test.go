package tui

import (
	"io"
	"testing"
	"time"
)

// TestLineEditorHomeEnd: Home and End move to the ends of the line in every encoding terminals
// send them in.
func TestLineEditorHomeEnd(t *testing.T) {
	cases := []struct{ name, home, end string }{
		{"xterm", "\x1b[H", "\x1b[F"},
		{"tmux and screen", "\x1b[1~", "\x1b[4~"},
		{"rxvt", "\x1b[7~", "\x1b[8~"},
		{"application mode", "\x1bOH", "\x1bOF"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := NewLineEditor(io.Discard, 80, "> ")
			for _, b := range []string{"bc", c.home, "a", c.end, "d", "\r"} {
				e.Feed([]byte(b))
			}
			select {
			case r := <-e.Done():
				if r.Err != nil || r.Line != "abcd" {
					t.Fatalf("line %q (%v), want abcd", r.Line, r.Err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("no line")
			}
		})
	}
}
