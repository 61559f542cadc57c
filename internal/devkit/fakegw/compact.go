package fakegw

import (
	"strings"

	"github.com/keelrun/keel/internal/contract"
)

// Compaction, as the scripted model takes part in it. Keel asks for a summary with
// contract.CompactInstruction as the system prompt and the folded conversation as text lines
// ("[call NAME] ARGS", "[result NAME] ...", "[error NAME] ..."). The fake answers with a
// deterministic summary: one "done: NAME ARGS" line per call whose result came back (and those of
// an earlier summary in the folded text). A later request that carries the summary
// (contract.CompactionPrefix) counts those calls as done, so the script goes on where it was.

// donePrefix starts a summary line naming a call that was made and answered.
const donePrefix = "done: "

// summaryHeader opens every summary the fake writes.
const summaryHeader = "The assistant has been working on the task; these tool calls were made and answered:"

// isCompactRequest reports whether the request asks for a compaction summary.
func (t transcript) isCompactRequest() bool {
	return strings.Contains(t.System, contract.CompactInstruction)
}

// summaries are the compaction summaries the request carries.
func (t transcript) summaries() []string {
	var out []string
	for _, m := range t.Messages {
		if m.Role != "user" {
			continue
		}
		if _, rest, ok := strings.Cut(m.Text, contract.CompactionPrefix); ok {
			out = append(out, rest)
		}
	}
	return out
}

// summaryReply writes the summary of a compaction request.
func summaryReply(t transcript) reply {
	var done, pending []string
	for _, m := range t.Messages {
		if m.Role != "user" {
			continue
		}
		for line := range strings.Lines(m.Text) {
			line = strings.TrimRight(line, "\n")
			switch {
			case strings.HasPrefix(line, donePrefix):
				done = append(done, line)
			case strings.HasPrefix(line, "[call "):
				name, args, _ := strings.Cut(strings.TrimPrefix(line, "[call "), "] ")
				pending = append(pending, name+" "+args)
			case strings.HasPrefix(line, "[result ") || strings.HasPrefix(line, "[error "):
				tag, text, _ := strings.Cut(line, "] ")
				name := tag[strings.Index(tag, " ")+1:]
				for i, p := range pending {
					if strings.HasPrefix(p, name+" ") {
						if !saysRetryAsIs(text) {
							done = append(done, donePrefix+p)
						}
						pending = append(pending[:i], pending[i+1:]...)
						break
					}
				}
			}
		}
	}
	return reply{Text: summaryHeader + "\n" + strings.Join(done, "\n")}
}

// summarisedExchanges are the calls the request's summaries count as done, oldest first.
func summarisedExchanges(t transcript) []exchange {
	var out []exchange
	for _, s := range t.summaries() {
		for line := range strings.Lines(s) {
			rest, ok := strings.CutPrefix(strings.TrimSpace(line), donePrefix)
			if !ok {
				continue
			}
			name, args, _ := strings.Cut(rest, " ")
			out = append(out, exchange{Call: call{Name: name, Args: args}, Result: &message{Role: "tool", Text: "done"}, Pos: -1})
		}
	}
	return out
}

// seenCalls lists the tool calls a request's transcript holds, as "NAME ARGS", in order.
func (t transcript) seenCalls() []string {
	var out []string
	for _, m := range t.Messages {
		for _, c := range m.Calls {
			out = append(out, c.Name+" "+c.Args)
		}
	}
	return out
}
