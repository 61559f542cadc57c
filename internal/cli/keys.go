package cli

import (
	"context"
	"errors"
	"io"
	"os"

	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/term"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/tui"
)

// terminal is the standard input Run was given when it is a terminal, else nil. A process has one
// terminal and one reader of it (stdinChunks), so this is the process's, not a command's.
var terminal atomic.Pointer[os.File]

// useTerminal keeps stdin as the terminal keys are read from when it is one.
func useTerminal(stdin io.Reader) {
	if f, ok := stdin.(*os.File); ok && tui.IsTerminal(f) {
		terminal.Store(f)
		return
	}
	terminal.Store(nil)
}

// stdinIsTerminal reports whether the starter talks to a person at a terminal.
func stdinIsTerminal() bool { return terminal.Load() != nil }

// interactive reports whether a session shown by p may read keys: a person types at standard
// input and reads text on a terminal. With the output going to a pipe (starter demo | tee log) the
// terminal stays in line mode, since raw mode would also change how the pipe's reader prints there.
func interactive(p printer) bool {
	tp, ok := p.(*textPrinter)
	if !ok || !stdinIsTerminal() {
		return false
	}
	tp.mu.Lock()
	defer tp.mu.Unlock()
	f, ok := tp.w.(*os.File)
	return ok && tui.IsTerminal(f)
}

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
		in := terminal.Load()
		if in == nil {
			close(stdinCh)
			return
		}
		go func() {
			buf := make([]byte, 256)
			for {
				n, err := in.Read(buf)
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
	in := terminal.Load()
	if in == nil {
		return nil, func() {}
	}
	fd := int(in.Fd())
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

// keys handles one read from the terminal: while the line editor is open the whole read goes to
// it (tui.EditInput), else each key is a tui.Key. A key that cancels or leaves is remembered for
// swallowSecondKey.
func (f *follower) keys(ctx context.Context, b []byte) {
	before := f.m.State
	if before == tui.Editing || before == tui.Reasoning {
		f.step(ctx, tui.EditInput{Bytes: b})
	} else {
		for _, k := range tui.SplitKeys(b) {
			f.step(ctx, k)
		}
	}
	if f.m.State != before && (f.m.State == tui.Cancelling || f.m.State == tui.Detached) && f.detaching == "" {
		f.cancelKeyAt = time.Now()
	}
}

// step runs one transition of the terminal's state machine and carries out its effects.
func (f *follower) step(ctx context.Context, ev tui.Event) {
	m, effects := tui.Step(f.m, ev)
	f.m = m
	for _, fx := range effects {
		switch fx := fx.(type) {
		case tui.Info:
			f.p.info(fx.Text)
		case tui.SendAnswer:
			f.sendAnswer(ctx, fx.Answer)
		case tui.SendApproval:
			d := fx.Decision
			d.By = currentUser()
			f.sendApproval(ctx, d)
		case tui.SendCancel:
			f.cancel(ctx, fx.Reason, fx.Second)
		case tui.OpenEditor:
			f.editor = tui.NewLineEditor(f.screen.Hold(), f.screen.Width(), orDefault(fx.Prompt, tui.EditPrompt))
		case tui.CloseEditor:
			f.endEdit(fx.LineEnded)
		case tui.FeedEditor:
			if f.editor != nil {
				f.editor.Feed(fx.Bytes)
			}
		case tui.Leave:
			f.leaving = fx.What
		case tui.Detach:
			f.detaching = fx.What
		}
	}
}

// edited hands the line editor's result to the state machine; a pasted line counts as typed.
func (f *follower) edited(ctx context.Context, r tui.EditResult) {
	f.step(ctx, tui.EditDone{Line: r.Line, OK: r.Err == nil || errors.Is(r.Err, term.ErrPasteIndicator)})
}

// endEdit closes the line editor and prints what waited behind it; lineEnded says the person
// pressed Enter, which ended the row.
func (f *follower) endEdit(lineEnded bool) {
	if f.editor != nil {
		f.editor.Close(lineEnded)
		f.editor = nil
	}
	f.screen.Release()
}

// editDone is the channel the line editor's result arrives on; nil when nobody is editing.
func (f *follower) editDone() <-chan tui.EditResult {
	if f.editor == nil {
		return nil
	}
	return f.editor.Done()
}

// sendAnswer answers the escalation the terminal asked about and tells the state machine whether
// the session took it.
func (f *follower) sendAnswer(ctx context.Context, a contract.Answer) {
	a.By, a.Via = currentUser(), "terminal"
	uctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := answerSession(uctx, f.c, f.workflowID, a)
	if err != nil {
		f.p.info("answer refused: " + err.Error())
		return
	}
	f.p.info(res.Message)
	f.step(ctx, tui.Answered{Accepted: res.Accepted})
}

func currentUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "terminal"
}
