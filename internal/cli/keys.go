package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/keelrun/keel/internal/contract"
)

// keypress is one key from the terminal: a cancel key (Esc or Ctrl+C) or a plain character.
type keypress struct {
	cancel bool
	// esc marks the cancel key that is Esc: inside a question (an edit, the abort confirmation)
	// Esc steps back out of the question, while Ctrl+C still cancels the session.
	esc bool
	ch  byte
}

// splitKeys turns one read from a terminal in raw mode into keys; fast typing can put several in
// one read. Esc alone and Ctrl+C cancel. An Alt combination or an arrow key also starts with Esc
// but has more bytes right after it, so it is skipped whole and does not cancel; neither does a
// lone "c".
func splitKeys(b []byte) []keypress {
	var keys []keypress
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == 0x03:
			keys = append(keys, keypress{cancel: true})
		case c == 0x1b && i == len(b)-1:
			keys = append(keys, keypress{cancel: true, esc: true})
		case c == 0x1b && b[i+1] == '[':
			// A control sequence: ESC [ parameters, then one final byte in 0x40..0x7e.
			for i += 2; i < len(b) && (b[i] < 0x40 || b[i] > 0x7e); i++ {
			}
		case c == 0x1b:
			i++ // Alt+key
		default:
			keys = append(keys, keypress{ch: c})
		}
	}
	return keys
}

// isTerminal reports whether f is a terminal a person types at: /dev/null and other character
// devices are not.
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// stdinIsTerminal reports whether the starter talks to a person at a terminal.
func stdinIsTerminal() bool { return isTerminal(os.Stdin) }

var (
	stdinOnce sync.Once
	stdinCh   chan []byte
)

// stdinChunks starts, once per process, the only reader of standard input and returns its reads.
// Hot keys and the line editor both take their bytes from here, so no keystroke is split between
// two readers.
func stdinChunks() <-chan []byte {
	stdinOnce.Do(func() {
		stdinCh = make(chan []byte, 16)
		go func() {
			buf := make([]byte, 256)
			for {
				n, err := os.Stdin.Read(buf)
				if n > 0 {
					stdinCh <- append([]byte(nil), buf[:n]...)
				}
				if err != nil {
					close(stdinCh)
					return
				}
			}
		}()
	})
	return stdinCh
}

// readKeys puts the terminal into raw mode and returns the reads of standard input. restore drops
// what was typed and not acted on (discardInput) and puts the terminal back into line mode; it is
// safe to call more than once and is deferred on every path.
func (f *follower) readKeys() (<-chan []byte, func()) {
	if !f.interactive {
		return nil, func() {}
	}
	fd := int(os.Stdin.Fd())
	old, err := term.MakeRaw(fd)
	if err != nil {
		f.p.info("the terminal could not be put into raw mode, so keys are not read: " + err.Error())
		return nil, func() {}
	}
	var once sync.Once
	return stdinChunks(), func() { once.Do(func() { discardInput(fd); _ = term.Restore(fd, old) }) }
}

// discardInput drops the input the starter has not acted on, before the terminal goes back to the
// shell: the reads already taken from the terminal, then what the terminal still holds
// (flushInput). An Esc left there would become the start of the shell's next line.
func discardInput(fd int) {
	for drained := false; !drained; {
		select {
		case _, ok := <-stdinChunks():
			drained = !ok
		default:
			drained = true
		}
	}
	flushInput(fd)
}

// dialog is the question the terminal is asking, which decides what keys mean.
type dialog int

const (
	// noDialog: keys are hot keys.
	noDialog dialog = iota
	// editDialog: keys go to the line editor until Enter.
	editDialog
	// abortDialog: y aborts the session, anything else keeps it.
	abortDialog
)

// keys handles one read from the terminal.
func (f *follower) keys(ctx context.Context, b []byte) {
	if f.dialog == editDialog {
		f.editKeys(ctx, b)
		return
	}
	for _, k := range splitKeys(b) {
		f.key(ctx, k)
	}
}

// key handles one keypress: cancel keys cancel; y and n decide a waiting approval; r, e and a
// answer a pending escalation, a after a confirmation.
func (f *follower) key(ctx context.Context, k keypress) {
	if f.dialog == abortDialog {
		f.confirmAbort(ctx, k)
		return
	}
	if k.cancel {
		f.cancelKey(ctx)
		return
	}
	ch := strings.ToLower(string(k.ch))
	if f.approval != nil && (ch == "y" || ch == "n") {
		a := f.approval
		f.approval = nil
		f.sendApproval(ctx, contract.ApprovalDecision{CallID: a.CallID, Digest: a.Digest, Approve: ch == "y", By: currentUser()})
		return
	}
	if f.prompted == "" {
		return
	}
	switch ch {
	case "r":
		f.sendAnswer(ctx, contract.Answer{Action: contract.ActionRetry})
	case "a":
		f.dialog = abortDialog
		f.p.info("abort the session? It ends now, as aborted. [y]es / [n]o")
	case "e":
		f.startEdit()
	}
}

// cancelKey handles Esc or Ctrl+C: the first cancels the session, a second one leaves without
// waiting for it to end.
func (f *follower) cancelKey(ctx context.Context) {
	f.cancelKeyAt = time.Now()
	if f.cancelled {
		f.leaving = true
		return
	}
	f.cancel(ctx, "cancelled at the terminal", "a second Esc or Ctrl+C")
}

// confirmAbort handles the key pressed at "abort the session?": y aborts, Ctrl+C cancels, and
// anything else (n, Esc) keeps the session waiting for an answer.
func (f *follower) confirmAbort(ctx context.Context, k keypress) {
	f.dialog = noDialog
	switch {
	case k.cancel && !k.esc:
		f.cancelKey(ctx)
	case !k.cancel && (k.ch == 'y' || k.ch == 'Y'):
		f.sendAnswer(ctx, contract.Answer{Action: contract.ActionAbort})
	default:
		f.p.info("not aborted")
		f.askEscalation()
	}
}

// startEdit opens the line editor for an edit answer; other output waits until it is sent.
func (f *follower) startEdit() {
	f.dialog = editDialog
	f.p.info("edit: corrected arguments or an instruction for the model; Enter sends it, Esc goes back")
	f.editor = newLineEditor(f.screen.hold(), f.screen.width(), "edit> ")
}

// editKeys passes keys to the line editor. Esc alone leaves the edit without sending anything;
// Ctrl+C leaves it and cancels the session.
func (f *follower) editKeys(ctx context.Context, b []byte) {
	switch {
	case len(b) == 1 && b[0] == 0x1b:
		f.endEdit(false)
		f.p.info("edit dropped; nothing was sent")
		f.askEscalation()
	case strings.IndexByte(string(b), 0x03) >= 0:
		f.endEdit(false)
		f.cancelKey(ctx)
	default:
		f.editor.feed(b)
	}
}

// edited handles the line the editor returned.
func (f *follower) edited(ctx context.Context, r editResult) {
	ok := r.err == nil || errors.Is(r.err, term.ErrPasteIndicator)
	f.endEdit(ok)
	text := strings.TrimSpace(r.line)
	if !ok {
		f.p.info("edit dropped; nothing was sent")
		f.askEscalation()
		return
	}
	if text == "" {
		f.p.info("the edit is empty; nothing was sent")
		f.askEscalation()
		return
	}
	f.sendAnswer(ctx, contract.Answer{Action: contract.ActionEdit, Text: text})
}

// endEdit closes the line editor and prints what waited behind it; lineEnded says the person
// pressed Enter, which ended the row.
func (f *follower) endEdit(lineEnded bool) {
	if f.editor != nil {
		f.editor.close(lineEnded)
		f.editor = nil
	}
	f.dialog = noDialog
	f.screen.release()
}

// editDone is the channel the line editor's result arrives on; nil when nobody is editing.
func (f *follower) editDone() <-chan editResult {
	if f.editor == nil {
		return nil
	}
	return f.editor.done
}

// askEscalation asks again how to answer the pending escalation.
func (f *follower) askEscalation() {
	if f.prompted != "" {
		f.p.info("[R]etry, [E]dit, [A]bort?")
	}
}

// closeDialog ends any question about an escalation that is no longer pending.
func (f *follower) closeDialog() {
	if f.dialog == editDialog {
		f.endEdit(false)
	}
	f.dialog = noDialog
}

// editResult is what the line editor read: the line, or why there is none.
type editResult struct {
	line string
	err  error
}

// lineEditor reads one line with golang.org/x/term's editor (echo, cursor keys, backspace,
// Enter), fed by the follower with the bytes of the single standard input reader.
type lineEditor struct {
	in   chan []byte
	done chan editResult
	out  io.Writer
}

func newLineEditor(out io.Writer, width int, prompt string) *lineEditor {
	e := &lineEditor{in: make(chan []byte, 64), done: make(chan editResult, 1), out: out}
	t := term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{&chanReader{ch: e.in}, out}, prompt)
	_ = t.SetSize(width, 24)
	go func() {
		line, err := t.ReadLine()
		e.done <- editResult{line, err}
	}()
	return e
}

// feed hands the editor typed bytes; if it is far behind, they are dropped rather than blocking.
func (e *lineEditor) feed(b []byte) {
	select {
	case e.in <- b:
	default:
	}
}

// close ends the editor: its ReadLine returns io.EOF if it has not returned yet. A line the person
// did not end with Enter is ended here, so what follows starts on a row of its own.
func (e *lineEditor) close(lineEnded bool) {
	close(e.in)
	if !lineEnded {
		_, _ = io.WriteString(e.out, "\r\n")
	}
}

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

// sendAnswer answers the escalation the terminal asked about.
func (f *follower) sendAnswer(ctx context.Context, a contract.Answer) {
	a.EscalationID, a.By, a.Via = f.prompted, currentUser(), "terminal"
	uctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := answerSession(uctx, f.c, f.workflowID, a)
	if err != nil {
		f.p.info("answer refused: " + err.Error())
		return
	}
	f.p.info(res.Message)
	if res.Accepted {
		f.prompted = ""
	}
}

func currentUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "terminal"
}
