package fakegw

import (
	"encoding/json"
	"strings"

	"github.com/keelrun/keel/internal/devkit/demo"
)

// reply is what the scripted model says in one response: a sentence streamed in several deltas,
// then its tool calls (none for a final answer).
type reply struct {
	Text    string
	Calls   []call
	Refusal string
}

// final reports whether the reply ends the task.
func (r reply) final() bool { return len(r.Calls) == 0 }

// step is one step of the demo script.
type step struct {
	Text string
	Call call
}

// demoScript is the default script: look, read, test, fix, test again. The final answer follows.
var demoScript = []step{
	{"Let me look at the files in the workspace first.", toolCall("list_dir", "path", ".")},
	{"I will read calc.go to see the code.", toolCall("read_file", "path", demo.SourceFile)},
	{"Now I will run the tests to see what fails.", toolCall("run_command", "command", demo.TestCommand)},
	{"Add subtracts instead of adding, so I will fix it.", toolCall("write_file", "path", demo.SourceFile, "content", demo.FixedSource)},
	{"Let me run the tests again to check the fix.", toolCall("run_command", "command", demo.TestCommand)},
}

// Final answers of the demo script.
const (
	answerFixed  = "Fixed: Add in calc.go subtracted its arguments; it now returns a + b and go test ./... passes."
	answerFailed = "I changed Add in calc.go to return a + b, but the tests still fail; see the last test output."
	answerLoop   = "I have read calc.go several times and keep getting the same content, so I will stop here: Add returns a - b where it should return a + b."
)

// toolCall builds a call whose argument text is a JSON object with the keys in the given order,
// so the same call always has the same text.
func toolCall(name string, kv ...string) call {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(kv[i])
		v, _ := json.Marshal(kv[i+1])
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return call{Name: name, Args: b.String()}
}

// exchange is one tool call of the transcript with its result, if one came back.
type exchange struct {
	Call   call
	Result *message
	// Pos is the index of the assistant message that made the call.
	Pos int
}

// exchanges pairs every tool call in the transcript with its tool message, after the calls a
// compaction summary in the request counts as done.
func exchanges(t transcript) []exchange {
	results := map[string]*message{}
	for i := range t.Messages {
		if m := &t.Messages[i]; m.Role == "tool" {
			results[m.CallID] = m
		}
	}
	out := summarisedExchanges(t)
	for i, m := range t.Messages {
		for _, c := range m.Calls {
			out = append(out, exchange{Call: c, Result: results[c.ID], Pos: i})
		}
	}
	return out
}

// after keeps the exchanges made after message index pos.
func after(ex []exchange, pos int) []exchange {
	var out []exchange
	for _, e := range ex {
		if e.Pos > pos {
			out = append(out, e)
		}
	}
	return out
}

// decide is the scripted model: it picks the next reply from the request alone, so a retried,
// resumed or forked conversation gets the same answer.
func decide(mode string, t transcript) reply {
	ex := exchanges(t)
	if r, ok := retryLast(t, ex); ok {
		return r
	}
	switch mode {
	case ModeLoop:
		return loopReply(t)
	case ModeLongCommand:
		return firstCommand(ex, "sleep 15")
	case ModeChattyCommand:
		return firstCommand(ex, ChattyCommand)
	case ModeHang:
		return firstCommand(ex, "sleep 3600")
	case ModeBadArgs:
		return badArgsReply(t, ex)
	case ModeBreaker:
		return breakerReply(ex)
	case ModeEscape, ModeEscapeHold, ModeEscapeGit:
		return escapeReply(t, ex, mode)
	case ModeCommands:
		return commandsReply(t, ex)
	case ModeBench:
		return benchReply(t)
	case ModeHostileText:
		return hostileReply(ex)
	case ModeDelegate:
		return delegateReply(ex, "", DelegateCount, "")
	case ModeDelegateFail:
		return delegateReply(ex, ModeRefusal, 1, "")
	case ModeDelegateLong:
		return delegateReply(ex, ModeLongCommand, 2, "")
	case ModeDelegateEscalate:
		return delegateReply(ex, ModeBadArgs, 2, "")
	case ModeDelegateGreedy:
		return delegateReply(ex, "", 1, GreedyAsk)
	}
	if IsEscapeClass(mode) {
		return escapeReply(t, ex, mode)
	}
	return scripted(ex)
}

// retryLast re-sends the call of the last tool result when that result asks to retry as is, with
// exactly the same argument text.
func retryLast(t transcript, ex []exchange) (reply, bool) {
	for i := len(t.Messages) - 1; i >= 0; i-- {
		m := t.Messages[i]
		if m.Role != "tool" {
			continue
		}
		if !saysRetryAsIs(m.Text) {
			return reply{}, false
		}
		for _, e := range ex {
			if e.Call.ID == m.CallID {
				return reply{Text: "Nothing changed, so I will send the same call again.", Calls: []call{{Name: e.Call.Name, Args: e.Call.Args}}}, true
			}
		}
		return reply{}, false
	}
	return reply{}, false
}

// saysRetryAsIs recognises tool feedback that asks for the same call again, such as "the file is
// unchanged; retry as is" after a failed write or "nothing changed; retry as is" after a read
// that was interrupted.
func saysRetryAsIs(text string) bool {
	l := strings.ToLower(text)
	return strings.Contains(l, "retry as is") || strings.Contains(l, "retry it as is")
}

// scripted follows the demo script: a call counts as done once its result came back, unless that
// result asked for the same call again.
func scripted(ex []exchange) reply {
	next := 0
	for _, e := range ex {
		if next < len(demoScript) && sameStep(e.Call, demoScript[next].Call) && e.Result != nil && !saysRetryAsIs(e.Result.Text) {
			next++
		}
	}
	if next < len(demoScript) {
		s := demoScript[next]
		return reply{Text: s.Text, Calls: []call{s.Call}}
	}
	return reply{Text: finalAnswer(ex)}
}

// finalAnswer reports success unless the last test run printed a failure.
func finalAnswer(ex []exchange) string {
	for i := len(ex) - 1; i >= 0; i-- {
		e := ex[i]
		if e.Call.Name == "run_command" && e.Result != nil {
			if strings.Contains(e.Result.Text, "FAIL") {
				return answerFailed
			}
			return answerFixed
		}
	}
	return answerFixed
}

// sameStep compares a call with a script step by tool name and its main argument, so a client
// that re-encodes argument objects still matches.
func sameStep(c, s call) bool {
	return c.Name == s.Name && mainArg(c.Args) != "" && mainArg(c.Args) == mainArg(s.Args)
}

// mainArg is the argument that tells calls of one tool apart: the command or the path.
func mainArg(args string) string {
	var v struct {
		Path    *string `json:"path"`
		Command *string `json:"command"`
	}
	if json.Unmarshal([]byte(args), &v) != nil {
		return ""
	}
	switch {
	case v.Command != nil:
		return "command:" + *v.Command
	case v.Path != nil:
		return "path:" + *v.Path
	}
	return ""
}
