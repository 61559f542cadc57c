package tui

import (
	"bytes"
	"io"
	"strings"

	"golang.org/x/term"
)

// EditResult is what the line editor read: the line, or why there is none.
type EditResult struct {
	Line string
	Err  error
}

// LineEditor reads one line with golang.org/x/term's editor (echo, cursor keys, backspace,
// Enter), fed by the follower with the bytes of the single standard input reader.
// Its line arrives on Done.
type LineEditor struct {
	in   chan []byte
	done chan EditResult
	out  io.Writer
}

// NewLineEditor starts an editor writing to out (a Screen's Hold) at width columns after prompt.
func NewLineEditor(out io.Writer, width int, prompt string) *LineEditor {
	e := &LineEditor{in: make(chan []byte, 64), done: make(chan EditResult, 1), out: out}
	t := term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{&chanReader{ch: e.in}, out}, prompt)
	_ = t.SetSize(width, 24)
	go func() {
		line, err := t.ReadLine()
		e.done <- EditResult{line, err}
	}()
	return e
}

// homeEnd turns the other encodings of Home and End (tmux and screen send ESC [ 1 ~ and ESC [ 4 ~,
// rxvt ESC [ 7 ~ and ESC [ 8 ~, xterm in application mode ESC O H and ESC O F) into the ones the
// editor knows, ESC [ H and ESC [ F: otherwise Home did nothing.
var homeEnd = strings.NewReplacer("\x1b[1~", "\x1b[H", "\x1b[7~", "\x1b[H", "\x1bOH", "\x1b[H",
	"\x1b[4~", "\x1b[F", "\x1b[8~", "\x1b[F", "\x1bOF", "\x1b[F")

// Feed hands the editor typed bytes; if it is far behind, they are dropped rather than blocking.
func (e *LineEditor) Feed(b []byte) {
	if bytes.IndexByte(b, 0x1b) >= 0 {
		b = []byte(homeEnd.Replace(string(b)))
	}
	select {
	case e.in <- b:
	default:
	}
}

// Close ends the editor: its ReadLine returns io.EOF if it has not returned yet. A line the person
// did not end with Enter is ended here, so what follows starts on a row of its own.
func (e *LineEditor) Close(lineEnded bool) {
	close(e.in)
	if !lineEnded {
		_, _ = io.WriteString(e.out, "\r\n")
	}
}

// Done is the channel the editor's one result arrives on.
func (e *LineEditor) Done() <-chan EditResult { return e.done }

// chanReader reads the chunks sent on a channel; a closed channel is the end.
type chanReader struct {
	ch  <-chan []byte
	buf []byte
}

func (r *chanReader) Read(p []byte) (int, error) {
	if len(r.buf) == 0 {
		b, ok := <-r.ch
		if !ok {
			return 0, io.EOF
		}
		r.buf = b
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}
