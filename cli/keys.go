package cli

import (
	"context"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/keelrun/keel/contract"
)

// keyCancel is what a read from the terminal means.
type keyKind int

const (
	keyOther keyKind = iota
	keyCancel
)

// classifyKeys decides what one read from a terminal in non-canonical mode means. Esc alone and
// Ctrl+C cancel. An Alt combination or an arrow key also starts with Esc, but arrives in the same
// read with more bytes after it, so it does not cancel; neither does a lone "c".
func classifyKeys(b []byte) keyKind {
	switch {
	case len(b) == 1 && b[0] == 0x1b:
		return keyCancel
	case len(b) == 1 && b[0] == 0x03:
		return keyCancel
	default:
		return keyOther
	}
}

// readKeys puts the terminal into non-canonical mode without echo or signal keys (output is left
// alone, so printing stays normal) and delivers each read. restore puts the terminal back; it is
// safe to call more than once and is deferred on every path.
func (f *follower) readKeys() (<-chan []byte, func()) {
	if !f.interactive {
		return nil, func() {}
	}
	fd := int(os.Stdin.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, func() {}
	}
	raw := *old
	raw.Lflag &^= unix.ICANON | unix.ECHO | unix.ISIG
	raw.Cc[unix.VMIN] = 1
	raw.Cc[unix.VTIME] = 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &raw); err != nil {
		return nil, func() {}
	}
	ch := make(chan []byte, 8)
	go func() {
		buf := make([]byte, 64)
		for {
			n, err := os.Stdin.Read(buf)
			if err != nil {
				close(ch)
				return
			}
			ch <- append([]byte(nil), buf[:n]...)
		}
	}()
	return ch, func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, old) }
}

// key handles one keypress: cancel keys cancel; r, e and a answer a pending escalation.
func (f *follower) key(ctx context.Context, b []byte) {
	if classifyKeys(b) == keyCancel {
		f.cancel(ctx, "cancelled at the terminal")
		return
	}
	if len(b) == 1 && f.approval != nil && strings.ContainsAny(string(b), "yYnN") {
		a := f.approval
		f.approval = nil
		f.sendApproval(ctx, contract.ApprovalDecision{CallID: a.CallID, Digest: a.Digest, Approve: strings.ContainsAny(string(b), "yY"), By: currentUser()})
		return
	}
	if f.prompted == "" || len(b) != 1 {
		return
	}
	var a contract.Answer
	switch strings.ToLower(string(b)) {
	case "r":
		a.Action = contract.ActionRetry
	case "a":
		a.Action = contract.ActionAbort
	case "e":
		a.Action = contract.ActionEdit
		f.p.info("edit (corrected arguments or an instruction for the model), then Enter:")
		a.Text = f.readLine()
	default:
		return
	}
	a.EscalationID, a.By, a.Via = f.prompted, currentUser(), "terminal"
	f.sendAnswer(ctx, a)
}

// readLine reads one line in non-canonical mode, echoing it.
func (f *follower) readLine() string {
	var sb strings.Builder
	buf := make([]byte, 1)
	for {
		if n, err := os.Stdin.Read(buf); err != nil || n == 0 || buf[0] == '\r' || buf[0] == '\n' {
			os.Stdout.WriteString("\n")
			return sb.String()
		}
		if buf[0] == 0x7f && sb.Len() > 0 {
			s := sb.String()
			sb.Reset()
			sb.WriteString(s[:len(s)-1])
			os.Stdout.WriteString("\b \b")
			continue
		}
		sb.WriteByte(buf[0])
		os.Stdout.Write(buf)
	}
}

func (f *follower) sendAnswer(ctx context.Context, a contract.Answer) {
	uctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := answerSession(uctx, f.c, f.workflowID, a)
	if err != nil {
		f.p.info("answer refused: " + err.Error())
		return
	}
	f.p.info(res.Message)
}

func currentUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "terminal"
}
