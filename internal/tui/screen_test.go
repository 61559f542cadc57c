package tui

import (
	"bytes"
	"testing"
)

// TestScreen: printed lines go above the live region, which is erased first and drawn again;
// in the middle of a row it goes under it; held output waits for the editor; a non-terminal
// gets the output unchanged and no region.
func TestScreen(t *testing.T) {
	var out bytes.Buffer
	s := &Screen{out: &out, tty: true, fd: -1}
	s.Draw([]string{"status", "tail"})
	take := func() string { r := out.String(); out.Reset(); return r }
	if got := take(); got != "status\r\ntail" {
		t.Fatalf("draw wrote %q", got)
	}
	s.Write([]byte("line one\nrow"))
	if got, want := take(), "\r\x1b[K\x1b[1A\x1b[Kline one\r\nrow"; got != want {
		t.Fatalf("write after draw: %q, want %q", got, want)
	}
	// In the middle of a row (a reply streaming) the region goes under it, and the cursor back to
	// where the row goes on; the next output clears from there down first.
	s.Draw([]string{"status"})
	if got, want := take(), "\n\x1b[1A\r\x1b[3C\x1b7\r\n\x1b[Kstatus\x1b8"; got != want {
		t.Fatalf("drew %q in the middle of a row, want %q", got, want)
	}
	s.Write([]byte(" ends\n"))
	s.Draw([]string{"status"})
	if got, want := take(), "\x1b[J ends\r\nstatus"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	editor := s.Hold()
	s.Write([]byte("held\n"))
	editor.Write([]byte("edit> x"))
	if got, want := take(), "\r\x1b[Kedit> x"; got != want {
		t.Fatalf("while held: %q, want %q", got, want)
	}
	s.Release()
	if got, want := take(), "held\r\n"; got != want {
		t.Fatalf("release: %q, want %q", got, want)
	}
	plain := NewScreen(&out)
	plain.Write([]byte("a\nb\n"))
	plain.Draw([]string{"status"})
	if got := take(); got != "a\nb\n" {
		t.Fatalf("a screen over a non-terminal wrote %q", got)
	}
}

// TestClipStyled: a region line is clipped by visible runes, escape sequences kept whole.
func TestClipStyled(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		want string
	}{
		{"abcdef", 3, "abc"},
		{"ab", 3, "ab"},
		{"\x1b[2m  │ abcdef", 5, "\x1b[2m  │ a\x1b[0m"},
		{"⠋ spin", 3, "⠋ s"},
	}
	for _, c := range cases {
		if got := clipStyled(c.in, c.n); got != c.want {
			t.Errorf("clipStyled(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}
