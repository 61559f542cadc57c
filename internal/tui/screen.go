package tui

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/term"
)

// Screen is the starter's output while it follows a session at a terminal. The input side is in
// raw mode, which also turns off the terminal's own newline translation, so screen writes "\r\n"
// for every "\n". At the bottom it keeps a live region (the status line and the tail of a running
// command's output) that is erased before any other output and drawn again on the next tick, so
// printed lines scroll above it and the region itself never lands in the scrollback.
//
// A Screen built for something other than a terminal passes writes through unchanged and draws
// nothing.
type Screen struct {
	mu  sync.Mutex
	out io.Writer
	fd  int
	// tty says out is a terminal in raw mode: translate newlines and draw the region.
	tty bool
	// region is how many lines the live region occupies now; 0 when it is not drawn.
	region int
	// midRow says the last output did not end its line (a reply still streaming); the region is
	// then drawn below that row (below), and col is where on the row the output goes on.
	midRow bool
	below  bool
	col    int
	// held collects output while the person types an edit; nil otherwise.
	held *bytes.Buffer
}

// NewScreen wraps w; only an *os.File that is a terminal gets the live region.
func NewScreen(w io.Writer) *Screen {
	s := &Screen{out: w}
	if f, ok := w.(*os.File); ok && IsTerminal(f) {
		s.tty, s.fd = true, int(f.Fd())
	}
	return s
}

// Write prints p above the live region.
func (s *Screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held != nil {
		s.held.Write(p)
		return len(p), nil
	}
	s.print(p)
	return len(p), nil
}

// print writes p after erasing the region; s.mu is held.
func (s *Screen) print(p []byte) {
	if len(p) == 0 {
		return
	}
	if !s.tty {
		_, _ = s.out.Write(p)
		return
	}
	s.erase()
	_, _ = s.out.Write(bytes.ReplaceAll(p, []byte("\n"), []byte("\r\n")))
	s.midRow = p[len(p)-1] != '\n'
	if i := bytes.LastIndexByte(p, '\n'); i >= 0 {
		s.col, p = 0, p[i+1:]
	}
	s.col += utf8.RuneCount(p)
}

// erase removes the live region, leaving the cursor where the next output belongs; s.mu is held.
func (s *Screen) erase() {
	if s.region == 0 {
		return
	}
	if s.below {
		// The cursor is where the streaming row goes on: clear from there to the end of the screen.
		_, _ = io.WriteString(s.out, "\x1b[J")
		s.region, s.below = 0, false
		return
	}
	var b strings.Builder
	b.WriteString("\r\x1b[K")
	for i := 1; i < s.region; i++ {
		b.WriteString("\x1b[1A\x1b[K")
	}
	_, _ = io.WriteString(s.out, b.String())
	s.region = 0
}

// Draw replaces the live region with lines, each clipped to the terminal's width.
func (s *Screen) Draw(lines []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.tty || s.held != nil {
		return
	}
	s.erase()
	if len(lines) == 0 {
		return
	}
	w := s.widthLocked()
	if s.midRow {
		s.drawBelow(lines, w)
		return
	}
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString(clipStyled(l, w-1))
	}
	_, _ = io.WriteString(s.out, b.String())
	s.region = len(lines)
}

// drawBelow draws the region under a row that is still being written (a streaming reply) and puts
// the cursor back where that row goes on, so the spinner and "esc to interrupt" stay in view
// while text streams. Line feeds first make the room (scrolling at the bottom of the screen);
// s.mu is held.
func (s *Screen) drawBelow(lines []string, w int) {
	n := len(lines)
	var b strings.Builder
	b.WriteString(strings.Repeat("\n", n))
	fmt.Fprintf(&b, "\x1b[%dA\r", n)
	if c := s.col % w; c > 0 {
		fmt.Fprintf(&b, "\x1b[%dC", c)
	}
	b.WriteString("\x1b7")
	for _, l := range lines {
		b.WriteString("\r\n\x1b[K" + clipStyled(l, w-1))
	}
	b.WriteString("\x1b8")
	_, _ = io.WriteString(s.out, b.String())
	s.region, s.below = n, true
}

// Clear removes the live region for good (the session ended).
func (s *Screen) Clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tty {
		s.erase()
	}
}

// Hold stops printing (output is kept until release) and returns a writer straight to the
// terminal, for the line editor, which writes its own "\r\n" and cursor movements.
func (s *Screen) Hold() io.Writer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tty {
		s.erase()
	}
	if s.held == nil {
		s.held = &bytes.Buffer{}
	}
	return writerFunc(func(p []byte) (int, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.out.Write(p)
	})
}

// Release prints what was held and resumes printing.
func (s *Screen) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == nil {
		return
	}
	p := s.held.Bytes()
	s.held = nil
	s.print(p)
}

// Columns is the terminal's width in columns, or 0 when the screen is not a terminal: a printer
// that must know where the terminal wraps a row asks this.
func (s *Screen) Columns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.tty {
		return 0
	}
	return s.widthLocked()
}

// Width is the terminal's width in columns; 80 when it cannot be read.
func (s *Screen) Width() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.widthLocked()
}

func (s *Screen) widthLocked() int {
	if s.tty {
		if w, _, err := term.GetSize(s.fd); err == nil && w > 10 {
			return w
		}
	}
	return 80
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// clipStyled clips a line to n visible runes, not counting escape sequences, and resets any
// style at the end.
func clipStyled(s string, n int) string {
	var b strings.Builder
	visible, styled := 0, false
	for i := 0; i < len(s); {
		if s[i] == 0x1b {
			j := i + 1
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e || s[j] == '[') {
				j++
			}
			if j < len(s) {
				j++
			}
			b.WriteString(s[i:j])
			styled = true
			i = j
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if visible == n {
			break
		}
		b.WriteRune(r)
		visible++
		i += size
	}
	if styled {
		b.WriteString("\x1b[0m")
	}
	return b.String()
}

// IsTerminal reports whether f is a terminal a person types at: /dev/null and other character
// devices are not.
func IsTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
