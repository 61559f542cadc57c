package activities

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"go.temporal.io/sdk/activity"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/gateway"
)

// maxFoldedChars bounds the text of one folded message in the summarising request: a long tool
// output is worth a line of summary, not its whole text again.
const maxFoldedChars = 6000

// maxSummaryBytes bounds the summary a model writes, so a runaway reply cannot fill the context
// it was meant to free.
const maxSummaryBytes = 16 << 10

// CompactTranscript folds the oldest turns of a session's transcript into a summary written by the
// session's model, through the same routes, fallbacks and failure handling as CallModel. The full
// transcript is left as it is; the result names the view later model calls see instead. When
// there is too little to fold it returns no compaction and makes no model call.
func (a *Activities) CompactTranscript(ctx context.Context, req contract.CompactRequest) (contract.CompactResult, error) {
	attempt := int(activity.GetInfo(ctx).Attempt)
	full, err := a.Store.Load(ctx, req.Head)
	if err != nil {
		return contract.CompactResult{}, fmt.Errorf("loading the transcript to compact: %w", err)
	}
	f, err := a.planFold(ctx, full, req)
	if err != nil || f == nil {
		return contract.CompactResult{}, err
	}
	msgs := []contract.Message{
		{Role: contract.RoleSystem, Content: contract.CompactInstruction},
		{Role: contract.RoleUser, Content: f.render()},
	}
	// Nothing of this call is shown to the user, so a stream cut short is retried like any other
	// transport failure; Strict sends a reply that does not parse down the plain retry path.
	mreq := contract.ModelRequest{SessionID: req.SessionID, Turn: req.Turn, ModelSettings: req.ModelSettings, Strict: true}
	chain, err := a.Models.chainFor(mreq)
	if err != nil {
		return contract.CompactResult{}, surfaced(contract.Failure{Class: contract.ClassEndpoint, Reason: err.Error(), Attempts: attempt})
	}
	resp, i, err := a.callChain(ctx, chain, modelCall{req: mreq, attempt: attempt, send: gateway.Request{Model: req.Model, Messages: msgs}})
	if err != nil {
		return contract.CompactResult{}, err
	}

	text := clipBytes(strings.TrimSpace(resp.Message.Content), maxSummaryBytes)
	if text == "" {
		return contract.CompactResult{}, surfaced(contract.Failure{Class: contract.ClassSchema, Reason: "the model wrote an empty summary", Attempts: attempt})
	}
	summary := contract.Message{Role: contract.RoleUser, Note: "compaction", Content: contract.CompactionPrefix + "\n\n" + text}
	head, err := a.Store.Append(ctx, "", append(f.preamble[:len(f.preamble):len(f.preamble)], summary))
	if err != nil {
		return contract.CompactResult{}, fmt.Errorf("storing the compaction summary: %w", err)
	}
	return contract.CompactResult{
		Compaction: &contract.Compaction{Head: head, Cut: f.cut},
		Replies:    countReplies(full[:f.cut]),
		Usage:      resp.Usage, Attempt: attempt,
		Model: chain.Route(i).Label(req.Model), Fallback: i > 0,
		SavedTokens: savedTokens(resp.Usage.InputTokens, msgs, f.folded, summary),
	}, nil
}

// fold is what one compaction summarises: the transcript's start that stays (the system prompt
// and the task), the messages the view drops (an earlier summary first, if any) and where the
// kept part of the full transcript begins.
type fold struct {
	preamble []contract.Message
	folded   []contract.Message
	cut      int
}

// planFold picks what to fold: everything between the preamble (or the last compaction's cut) and
// the KeepReplies-th newest model reply. A cut always falls just before a model reply, so a tool
// call is never parted from its result. Nil when fewer than MinReplies replies would be folded.
func (a *Activities) planFold(ctx context.Context, full []contract.Message, req contract.CompactRequest) (*fold, error) {
	replies := replyIndexes(full)
	keep := max(req.KeepReplies, 1)
	if len(replies) <= keep {
		return nil, nil
	}
	f := &fold{preamble: full[:replies[0]], cut: replies[len(replies)-keep]}
	start := replies[0]
	if c := req.Compaction; c != nil {
		if c.Cut < start || c.Cut > len(full) {
			return nil, fmt.Errorf("the compaction's cut %d does not fit a transcript of %d messages", c.Cut, len(full))
		}
		view, err := a.Store.Load(ctx, c.Head)
		if err != nil || len(view) == 0 {
			return nil, fmt.Errorf("loading the last compaction's summary: %w", err)
		}
		start = c.Cut
		f.folded = append(f.folded, view[len(view)-1])
	}
	if countReplies(full[start:max(start, f.cut)]) < max(req.MinReplies, 1) {
		return nil, nil
	}
	f.folded = append(f.folded, full[start:f.cut]...)
	return f, nil
}

// render writes the summarising request's user message: the task for context, then the folded
// conversation as text, so no provider needs the tool definitions to read it.
func (f *fold) render() string {
	var b strings.Builder
	b.WriteString("The task of the session:\n\n")
	for _, m := range f.preamble {
		if m.Role == contract.RoleUser {
			b.WriteString(m.Content)
			b.WriteString("\n")
		}
	}
	b.WriteString("\nThe conversation to summarise, oldest first:\n\n")
	for _, m := range f.folded {
		writeFolded(&b, m)
	}
	return b.String()
}

// writeFolded writes one message as text lines: "[assistant] ...", "[call NAME] ARGS",
// "[result NAME] ..." (or "[error NAME]"), "[user] ...".
func writeFolded(b *strings.Builder, m contract.Message) {
	switch m.Role {
	case contract.RoleTool:
		tag := "result"
		if m.IsError {
			tag = "error"
		}
		fmt.Fprintf(b, "[%s %s] %s\n", tag, m.Name, clipBytes(m.Content, maxFoldedChars))
	default:
		if m.Content != "" {
			fmt.Fprintf(b, "[%s] %s\n", m.Role, clipBytes(m.Content, maxFoldedChars))
		}
		for _, c := range m.ToolCalls {
			fmt.Fprintf(b, "[call %s] %s\n", c.Name, clipBytes(c.Arguments, maxFoldedChars))
		}
	}
}

// view is what a model call sees of the transcript: all of it, or, once compacted, the preamble
// and summary at c.Head followed by the full transcript from c.Cut on.
func (a *Activities) view(ctx context.Context, full []contract.Message, c *contract.Compaction) ([]contract.Message, error) {
	if c == nil {
		return full, nil
	}
	if c.Cut < 0 || c.Cut > len(full) {
		return nil, fmt.Errorf("the compaction's cut %d does not fit a transcript of %d messages", c.Cut, len(full))
	}
	start, err := a.Store.Load(ctx, c.Head)
	if err != nil {
		return nil, fmt.Errorf("loading the compaction summary: %w", err)
	}
	return append(start, full[c.Cut:]...), nil
}

// replyIndexes lists where the model's replies are: assistant messages Keel did not write itself.
func replyIndexes(msgs []contract.Message) []int {
	var out []int
	for i, m := range msgs {
		if m.Role == contract.RoleAssistant && m.Note == "" {
			out = append(out, i)
		}
	}
	return out
}

func countReplies(msgs []contract.Message) int { return len(replyIndexes(msgs)) }

// savedTokens estimates the input tokens each later call is spared: the characters the view drops
// less those of the summary, at the tokens per character the provider reported for the
// summarising request (four characters a token when it reported nothing).
func savedTokens(inputTokens int64, request, folded []contract.Message, summary contract.Message) int64 {
	saved := int64(chars(folded) - chars([]contract.Message{summary}))
	if saved <= 0 {
		return 0
	}
	if n := chars(request); inputTokens > 0 && n > 0 {
		return saved * inputTokens / int64(n)
	}
	return saved / 4
}

// chars counts the characters of messages as a model reads them: text and tool call arguments.
func chars(msgs []contract.Message) int {
	n := 0
	for _, m := range msgs {
		n += utf8.RuneCountInString(m.Content)
		for _, c := range m.ToolCalls {
			n += utf8.RuneCountInString(c.Name) + utf8.RuneCountInString(c.Arguments)
		}
	}
	return n
}

// clipBytes keeps at most n bytes of s, cut at a rune boundary, saying when it cut.
func clipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + " […]"
}
