package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/keelrun/keel/escalation"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/textfmt"
	"github.com/keelrun/keel/internal/tools"
)

// printer shows a session to the user, as text for people or as one JSON object per line.
type printer interface {
	event(e contract.Event)
	info(line string)
	summary(s contract.Summary)
}

// outputFlag adds --output (-o, as the temporal CLI has it) to a command that prints records.
func outputFlag(cmd *cobra.Command, output *string) {
	cmd.Flags().StringVarP(output, "output", "o", "text", "text or jsonl")
}

func newPrinter(output string, w io.Writer) (printer, error) {
	switch output {
	case "", "text":
		return &textPrinter{w: w}, nil
	case "jsonl":
		return &jsonPrinter{enc: json.NewEncoder(jsonlWriter{w})}, nil
	default:
		return nil, usageErr("--output %q is not one of text, jsonl", output)
	}
}

// textPrinter writes deltas as they arrive and one line per other event. Each model message
// starts on a line of its own.
type textPrinter struct {
	mu     sync.Mutex
	w      io.Writer
	midRow bool
	// col is how many columns, at most, the unfinished row of a reply takes (reply).
	col int
	// turn is the turn of the deltas being written.
	turn int
	// workdir is the session's work directory, for the diff under a write (callDiff).
	workdir string
	// diffed are the calls whose diff is on screen already (at their approval prompt).
	diffed map[string]bool
	// replay are the diffs of the calls of a replayed transcript, by call ID (replayDiffs).
	replay map[string]string
	// prices are what tokens cost (gateway.price.*), for the cost in the summary.
	prices config.Prices
}

// showPrices tells a text printer what tokens cost, so the summary shows the session's cost.
func showPrices(p printer, cfg config.Config) {
	if t, ok := p.(*textPrinter); ok {
		t.mu.Lock()
		t.prices = cfg.Gateway.Price
		t.mu.Unlock()
	}
}

// showWorkdir tells a text printer the session's work directory, so a write shows what it
// changes in the file there.
func showWorkdir(p printer, dir string) {
	if t, ok := p.(*textPrinter); ok {
		t.mu.Lock()
		t.workdir = dir
		t.mu.Unlock()
	}
}

// endRow ends a row that a reply left unfinished.
func (t *textPrinter) endRow() {
	if t.midRow {
		fmt.Fprintln(t.w)
		t.midRow = false
	}
}

func (t *textPrinter) line(s string) {
	t.endRow()
	fmt.Fprintln(t.w, s)
}

func (t *textPrinter) event(e contract.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch e.Event {
	case contract.EventDelta:
		if e.Turn != t.turn {
			t.endRow()
			t.turn = e.Turn
		}
		t.reply(sanitize(e.Text))
	case contract.EventModelCall:
		// A new reply starts: the status line says so, and its text starts on a new line.
		t.endRow()
		t.turn = e.Turn
	case contract.EventOutput:
		// A running command's output: the status region shows its tail; the result has it all.
	case contract.EventToolCall:
		t.line(fmt.Sprintf("→ %s %s", sanitize(e.Tool), sanitize(clip(e.Arguments, 160))))
		if t.diffed[e.CallID] {
			break
		}
		if d := callDiffFrom(t.workdir, e.Tool, e.Arguments, e.Before); d != "" {
			t.line(sanitize(d))
		}
	case contract.EventApproval:
		t.line(fmt.Sprintf("• %s: %s", e.Event, indent(sanitize(e.Text))))
		if _, replayed := t.replay[e.CallID]; replayed || e.CallID == "" {
			// An earlier turn's call: its result shows what it changed, against the files as
			// they were then.
			break
		}
		// The call has not run: what it would change, against the file as it is now.
		if d := callDiff(t.workdir, e.Tool, e.Arguments); d != "" {
			t.line(sanitize(d))
			if t.diffed == nil {
				t.diffed = map[string]bool{}
			}
			t.diffed[e.CallID] = true
		}
	case contract.EventToolResult:
		if e.IsError || tools.CommandFailed(e.Text) {
			t.line("  ✗ " + failedLines(sanitize(e.Text), 4))
			break
		}
		t.line(fmt.Sprintf("  ✓ %s", firstLines(sanitize(e.Text), 3)))
	case contract.EventMessage:
		switch {
		case e.Class == contract.RoleTool:
			t.line(fmt.Sprintf("  [%s result] %s", sanitize(e.Tool), firstLines(sanitize(e.Text), 3)))
			if d := t.replay[e.CallID]; d != "" && !e.IsError {
				t.line(sanitize(d))
			}
		case e.Arguments != "":
			t.line(fmt.Sprintf("[%s] %s → %s", e.Class, indent(sanitize(e.Text)), sanitize(clip(e.Arguments, 160))))
		default:
			t.line(fmt.Sprintf("[%s] %s", e.Class, firstLines(sanitize(e.Text), 6)))
		}
	case contract.EventSay:
		t.line(fmt.Sprintf("» %s: %s", sanitize(e.By), firstLines(sanitize(e.Text), 6)))
	case contract.EventCheck:
		mark := "✓"
		if e.IsError {
			mark = "✗"
		}
		t.line(fmt.Sprintf("%s %s", mark, firstLines(sanitize(e.Text), 6)))
	case contract.EventEscalation:
		if e.Escalation != nil {
			t.line("! " + indent(sanitize(strings.TrimSuffix(escalation.Text(*e.Escalation), "\n"))))
		}
	case contract.EventAnswer:
		text := e.Text
		if a := answerOf(e); a != nil && a.Action == contract.ActionEdit && a.Text != "" {
			text += ": " + clip(a.Text, 200)
		}
		t.line(fmt.Sprintf("• answer: %s", indent(sanitize(text))))
	default:
		t.line(fmt.Sprintf("• %s: %s", e.Event, indent(sanitize(e.Text))))
	}
}

// modelGutter starts every line of the model's replies at the terminal. None of Keel's own lines
// starts with it ("keel: ", "→ ", "  ✓ ", ...), and every other line that carries text from the
// model or a command is indented under a line of Keel's (indent, firstLines), so the model cannot
// print a line that passes for Keel's.
const modelGutter = "│ "

// reply writes text of the model's reply as it streams, each of its lines behind modelGutter.
// At a terminal the printer breaks a row itself before the terminal would wrap it, with the
// gutter again, so that no padding can put the model's text at the start of a row unmarked. It
// counts every character beyond ASCII as two columns and a tab as eight, never fewer than the
// terminal shows, so its break comes first.
func (t *textPrinter) reply(text string) {
	width := 0
	if c, ok := t.w.(interface{ Columns() int }); ok {
		width = c.Columns()
	}
	gutterCols := utf8.RuneCountInString(modelGutter)
	var b strings.Builder
	for _, r := range text {
		if !t.midRow {
			b.WriteString(modelGutter)
			t.midRow, t.col = true, gutterCols
		}
		if r == '\n' {
			b.WriteRune(r)
			t.midRow = false
			continue
		}
		w := 1
		switch {
		case r == '\t':
			w = 8
		case r >= 0x80:
			w = 2
		}
		if width > 0 && t.col+w > width-1 {
			b.WriteString("\n" + modelGutter)
			t.col = gutterCols
		}
		b.WriteRune(r)
		t.col += w
	}
	fmt.Fprint(t.w, b.String())
}

// indent puts the lines of s after its first under the line that starts it, four spaces in, as
// firstLines does.
func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n    ") }

// info prints a line of Keel's own. Its text may quote a model or a work directory (a file name,
// an error), so it is made harmless and its later lines are indented under it.
func (t *textPrinter) info(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.line("keel: " + indent(sanitize(s)))
}

func (t *textPrinter) summary(s contract.Summary) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.line(fmt.Sprintf("\n%s · %s · %s (%d blocked) · %s · model calls %d, attempts %d",
		s.Status, textfmt.Count(int64(s.Turns), "turn"), textfmt.Count(int64(s.ToolCalls), "tool call"), s.BlockedCalls,
		textfmt.Count(s.Tokens, "token"), s.GatewayCalls, s.GatewayAttempts))
	if cost, ok := t.prices.Cost(s.Usage.InputTokens, s.Usage.OutputTokens); ok {
		t.line(fmt.Sprintf("cost %s at gateway.price (%s in, %s out)", money(cost), textfmt.Count(s.Usage.InputTokens, "token"), textfmt.Count(s.Usage.OutputTokens, "token")))
	}
	if s.Compactions > 0 {
		t.line(fmt.Sprintf("compacted %s (%s of the tokens)", textfmt.Count(int64(s.Compactions), "time"), textfmt.Count(s.CompactionTokens, "token")))
	}
	if line := longHaulLine(s); line != "" {
		t.line(line)
	}
	if s.ReconciledCalls > 0 {
		t.line(fmt.Sprintf("%d tool calls never reported and were answered from the ledger (see starter attempts)", s.ReconciledCalls))
	}
	if s.Reason != "" {
		t.line("reason: " + indent(sanitize(s.Reason)))
	}
	for _, al := range s.Allowed {
		t.line("allowed for the session: " + sanitize(allowanceText(al)))
	}
	for _, l := range changeLines(s.Changes, s.ToolCalls > 0) {
		t.line(l)
	}
	if l := branchLine(s.Branch); l != "" {
		t.line(l)
	}
}

// money writes an amount with the digits that matter: two decimals from 1 up, four below.
func money(v float64) string {
	if v >= 1 {
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.4f", v)
}

// jsonPrinter writes one JSON object per event and closes with the summary. Every line carries
// the time and the session's workflow ID: events that come without them (the starter's own
// notices, replayed messages) are stamped here.
type jsonPrinter struct {
	mu         sync.Mutex
	enc        *json.Encoder
	workflowID string
}

// sessionNamer is a printer that stamps the session's ID on lines that lack it.
type sessionNamer interface{ nameSession(id string) }

// nameSession tells p which session its lines are about, once the ID is known.
func nameSession(p printer, id string) {
	if n, ok := p.(sessionNamer); ok {
		n.nameSession(id)
	}
}

func (j *jsonPrinter) nameSession(id string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.workflowID = id
}

func (j *jsonPrinter) event(e contract.Event) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	if e.WorkflowID == "" {
		e.WorkflowID = j.workflowID
	}
	_ = j.enc.Encode(e)
}

// jsonlWriter passes the encoder's lines on with what encoding/json leaves raw (DEL, C1 controls,
// bidi and other format characters) as JSON escapes (textfmt.JSONEscaped): the values decode to
// exactly what the model sent, and a terminal that shows the jsonl obeys none of it.
type jsonlWriter struct{ w io.Writer }

func (j jsonlWriter) Write(p []byte) (int, error) {
	if _, err := j.w.Write(textfmt.JSONEscaped(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (j *jsonPrinter) info(s string) {
	j.event(contract.Event{Event: contract.EventNotice, Text: s})
}

func (j *jsonPrinter) summary(s contract.Summary) {
	j.mu.Lock()
	defer j.mu.Unlock()
	s.Transcript, s.Events = nil, nil
	_ = j.enc.Encode(struct {
		Event string    `json:"event"`
		Time  time.Time `json:"time"`
		contract.Summary
	}{contract.EventSummary, time.Now().UTC(), s})
}

// answerOf is the answer an answer event reports, if it carries one.
func answerOf(e contract.Event) *contract.Answer {
	if e.Escalation == nil {
		return nil
	}
	return e.Escalation.Answer
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) <= n {
		return strings.Join(lines, "\n    ")
	}
	return strings.Join(lines[:n], "\n    ") + fmt.Sprintf("\n    … (%d more lines)", len(lines)-n)
}

// failedLines shows a failed call's result: its first line (what failed) and the last n lines of
// the rest, where a failing command prints why (the output's first lines are mostly the command
// starting up).
func failedLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	head, rest := lines[0], lines[1:]
	if i := slices.Index(rest, "Output:"); i >= 0 {
		rest = rest[i+1:]
	}
	for len(rest) > 0 && strings.TrimSpace(rest[0]) == "" {
		rest = rest[1:]
	}
	var b strings.Builder
	b.WriteString(head)
	if len(rest) > n {
		fmt.Fprintf(&b, "\n    … (%d earlier lines)", len(rest)-n)
		rest = rest[len(rest)-n:]
	}
	for _, l := range rest {
		b.WriteString("\n    " + l)
	}
	return b.String()
}

// longHaulLine says what a long session spent besides turns: its goal checks, its usage-limit
// waits and, when more than one model answered, the tokens per model; "" when there was none.
func longHaulLine(s contract.Summary) string {
	var parts []string
	if s.Checks > 0 {
		parts = append(parts, textfmt.Count(int64(s.Checks), "check")+" run")
	}
	if s.Waits > 0 {
		parts = append(parts, fmt.Sprintf("%s for usage limits (%s)", textfmt.Count(int64(s.Waits), "wait"), textfmt.Duration(time.Duration(s.WaitedMS)*time.Millisecond)))
	}
	if len(s.ModelTokens) > 1 {
		models := slices.Sorted(maps.Keys(s.ModelTokens))
		per := make([]string, len(models))
		for i, m := range models {
			per[i] = fmt.Sprintf("%s %s", sanitize(m), textfmt.Count(s.ModelTokens[m], "token"))
		}
		parts = append(parts, "tokens per model: "+strings.Join(per, ", "))
	}
	return strings.Join(parts, " · ")
}

// allowanceText says what a person allowed for the rest of a session, and who: the summary lists
// them, so whoever reads it knows why later calls ran without asking.
func allowanceText(al contract.Allowance) string {
	what := "every " + al.Tool + " call"
	if al.Command != "" {
		what = fmt.Sprintf("%s of exactly `%s`", al.Tool, clip(al.Command, 200))
	}
	if al.By != "" {
		what += " (by " + al.By + ")"
	}
	return what
}
