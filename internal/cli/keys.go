package cli

import (
	"context"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/keelrun/keel/internal/contract"
)

// keypress is one key from the terminal: a cancel key or a plain character.
type keypress struct {
	cancel bool
	ch     byte
}

// splitKeys turns one read from a terminal in non-canonical mode into keys; fast typing can put
// several in one read. Esc alone and Ctrl+C cancel. An Alt combination or an arrow key also starts
// with Esc but has more bytes right after it, so it is skipped whole and does not cancel; neither
// does a lone "c".
func splitKeys(b []byte) []keypress {
	var keys []keypress
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == 0x03:
			keys = append(keys, keypress{cancel: true})
		case c == 0x1b && i == len(b)-1:
			keys = append(keys, keypress{cancel: true})
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

// keys handles one read from the terminal.
func (f *follower) keys(ctx context.Context, b []byte) {
	for _, k := range splitKeys(b) {
		f.key(ctx, k)
	}
}

// key handles one keypress: cancel keys cancel; y and n decide a waiting approval; r, e and a
// answer a pending escalation.
func (f *follower) key(ctx context.Context, k keypress) {
	if k.cancel {
		f.cancel(ctx, "cancelled at the terminal")
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
	var a contract.Answer
	switch ch {
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
