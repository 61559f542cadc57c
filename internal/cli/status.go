package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/textfmt"
)

// statusWidth is the width the status line always fits in: an 80-column terminal, the narrowest
// it is made for, less the last column, which the screen never writes (a character there would
// wrap the row). What runs is shortened first, so the session's time, tokens and "esc to
// interrupt" stay whole.
const statusWidth = 79

// tailLines is how many lines of a running command's output the status region shows.
const tailLines = 4

// spinner frames, one per redraw.
var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// progress is what the status region shows while the session runs: what is running and for how
// long, the session's time and tokens, and the last lines of a running command's output. The
// follower feeds it every event; it only reads them.
type progress struct {
	start  time.Time
	tokens int64
	// streamed counts the characters of the reply streaming now, for an estimate of its tokens
	// until the session's next status has the real count.
	streamed int
	// what is running now, since when, and the tool call it belongs to.
	what   string
	since  time.Time
	callID string
	tail   outputTail
	// waiting replaces what while the session waits for a person.
	waiting string
	// retryAt is when a model call's next attempt starts, while the call waits to retry.
	retryAt time.Time
	frame   int
	// keys says what the keys do, at the end of the line.
	keys string
}

// Key hints at the end of the status line: the starter's own session, or a watched one.
const (
	keysInterrupt = "esc to interrupt"
	keysWatch     = "esc detaches · x cancels"
)

func newProgress(now time.Time) *progress {
	return &progress{start: now, since: now, what: "starting", keys: keysInterrupt}
}

// observe updates the view from one live event.
func (p *progress) observe(e contract.Event, now time.Time) {
	switch e.Event {
	case contract.EventModelCall:
		p.set(now, modelCall(e.Attempt), "")
	case contract.EventRetry:
		p.set(now, modelCall(e.Attempt), "")
		p.retryAt = now.Add(time.Duration(e.WaitMS) * time.Millisecond)
	case contract.EventDelta:
		p.streamed += len(e.Text)
		if !strings.HasPrefix(p.what, "model call") {
			p.set(now, "model reply", "")
		}
	case contract.EventToolCall:
		p.set(now, toolLabel(e.Tool, e.Arguments), e.CallID)
	case contract.EventOutput:
		if e.CallID == p.callID {
			p.tail.add(e.Text)
		}
	case contract.EventToolResult:
		if e.CallID == p.callID {
			p.set(now, "working", "")
		}
	}
}

func (p *progress) set(now time.Time, what, callID string) {
	p.what, p.since, p.callID = what, now, callID
	p.tail, p.retryAt = outputTail{}, time.Time{}
}

// lines renders the region: the status line, then the tail of the running command's output.
func (p *progress) lines(now time.Time) []string {
	p.frame = (p.frame + 1) % len(spinner)
	what, how := p.what, " "+textfmt.Duration(now.Sub(p.since))
	if left := p.retryAt.Sub(now); left > 0 {
		// Waiting to retry: the time left, not the time waited.
		how = " in " + textfmt.Duration(left)
	}
	if p.waiting != "" {
		what, how = p.waiting, ""
	}
	rest := how + fmt.Sprintf(" · session %s · %s · %s", textfmt.Duration(now.Sub(p.start)), p.tokenText(), p.keys)
	if room := statusWidth - 2 - utf8.RuneCountInString(rest); utf8.RuneCountInString(what) > room {
		what = clipRunes(what, room)
	}
	status := spinner[p.frame] + " " + what + rest
	out := []string{status}
	for _, l := range p.tail.lines() {
		out = append(out, "\x1b[2m  │ "+l)
	}
	return out
}

// charsPerToken is the rough size of a token in English text and code, for the estimate of a
// streaming reply's tokens.
const charsPerToken = 4

// counted sets the session's token count from its status, which includes every finished reply.
func (p *progress) counted(tokens int64) {
	p.tokens, p.streamed = tokens, 0
}

// tokenText is the session's tokens: the counted ones, plus an estimate of the reply streaming
// now, marked with "~" until the count arrives.
func (p *progress) tokenText() string {
	if p.streamed == 0 {
		return fmt.Sprintf("%d tokens", p.tokens)
	}
	return fmt.Sprintf("~%d tokens", p.tokens+int64((p.streamed+charsPerToken-1)/charsPerToken))
}

func modelCall(attempt int) string {
	if attempt > 1 {
		return fmt.Sprintf("model call, attempt %d", attempt)
	}
	return "model call"
}

// toolLabel names a tool call by its tool and its main argument: the command, path or pattern.
func toolLabel(tool, args string) string {
	var a map[string]any
	if json.Unmarshal([]byte(args), &a) == nil {
		for _, k := range []string{"command", "path", "pattern", "query"} {
			if v, ok := a[k].(string); ok && v != "" {
				return tool + " " + clip(sanitize(v), 40)
			}
		}
	}
	return tool
}

// seconds writes a duration in the follower's lines the one way text output does (textfmt).
func seconds(d time.Duration) string { return textfmt.Duration(d) }

// clipRunes shortens s to at most n characters, ending it with "…" when it was cut.
func clipRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n < 1 {
		return ""
	}
	return string(r[:n-1]) + "…"
}

// outputTail keeps the last lines of a command's output, the unfinished last line included.
type outputTail struct {
	done    []string
	partial string
}

func (t *outputTail) add(text string) {
	parts := strings.Split(t.partial+text, "\n")
	t.partial = parts[len(parts)-1]
	for _, l := range parts[:len(parts)-1] {
		// A carriage return redraws a line (progress bars): keep what was drawn last.
		if i := strings.LastIndexByte(l, '\r'); i >= 0 {
			l = l[i+1:]
		}
		t.done = append(t.done, tailLine(l))
	}
	if n := len(t.done); n > tailLines {
		t.done = append([]string(nil), t.done[n-tailLines:]...)
	}
	if len(t.partial) > 4096 {
		t.partial = t.partial[len(t.partial)-4096:]
	}
}

// tailLine is one line of a command's output as the status region shows it: harmless, and a tab
// is a space, since the region is clipped to the terminal's width by counting characters.
func tailLine(l string) string { return strings.ReplaceAll(sanitize(l), "\t", " ") }

func (t *outputTail) lines() []string {
	out := append([]string(nil), t.done...)
	p := t.partial
	if i := strings.LastIndexByte(p, '\r'); i >= 0 {
		p = p[i+1:]
	}
	if p = tailLine(p); strings.TrimSpace(p) != "" {
		out = append(out, p)
	}
	if len(out) > tailLines {
		out = out[len(out)-tailLines:]
	}
	return out
}

// sanitize makes text from the model, a command or a work directory safe to print
// (textfmt.Harmless): escape sequences, control characters and bidi overrides show as visible
// escapes, so nothing it prints can move the cursor, change colours or retitle the terminal.
// Newlines and tabs are kept.
func sanitize(s string) string { return textfmt.Harmless(s) }
