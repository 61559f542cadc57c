package fakegw

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/keelrun/keel/contract"
	"github.com/keelrun/keel/demo"
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

// exchanges pairs every tool call in the transcript with its tool message.
func exchanges(t transcript) []exchange {
	results := map[string]*message{}
	for i := range t.Messages {
		if m := &t.Messages[i]; m.Role == "tool" {
			results[m.CallID] = m
		}
	}
	var out []exchange
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
	case ModeHang:
		return firstCommand(ex, "sleep 3600")
	case ModeBadArgs:
		return badArgsReply(t, ex)
	case ModeBreaker:
		return breakerReply(ex)
	}
	return scripted(ex)
}

// retryLast re-sends the call of the last tool result when that result says nothing changed and
// to retry as is, with exactly the same argument text.
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

// saysRetryAsIs recognises the tool feedback "the file is unchanged ... retry as is".
func saysRetryAsIs(text string) bool {
	l := strings.ToLower(text)
	return strings.Contains(l, "unchanged") && strings.Contains(l, "retry") && strings.Contains(l, "as is")
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

// loopReply keeps reading the same file until told it is repeating itself.
func loopReply(t transcript) reply {
	for _, m := range t.Messages {
		l := strings.ToLower(m.Text)
		if m.Role == "tool" && (strings.Contains(l, "three times") || strings.Contains(l, "change approach")) {
			return reply{Text: answerLoop}
		}
	}
	return reply{Text: "Let me read calc.go once more.", Calls: []call{demoScript[1].Call}}
}

// firstCommand runs command before anything else, then follows the script.
func firstCommand(ex []exchange, command string) reply {
	first := toolCall("run_command", "command", command)
	for _, e := range ex {
		if sameStep(e.Call, first) && e.Result != nil {
			return scripted(after(ex, e.Pos))
		}
	}
	return reply{Text: "First I will run a command that takes a while.", Calls: []call{first}}
}

// badArgTools are the calls bad_args mode cycles through, one tool after another.
var badArgTools = []call{
	demoScript[0].Call,
	demoScript[1].Call,
	toolCall("search", "pattern", "func Add", "path", "."),
	demoScript[2].Call,
	toolCall("edit_file", "path", demo.SourceFile, "old", demo.BuggyLine, "new", demo.FixedLine),
	demoScript[3].Call,
}

// badArgsReply sends truncated arguments, a different tool each time, until a person has spoken.
func badArgsReply(t transcript, ex []exchange) reply {
	if pos := personMessage(t); pos >= 0 {
		return scripted(after(ex, pos))
	}
	c := badArgTools[len(ex)%len(badArgTools)]
	c.Args = c.Args[:len(c.Args)/2]
	return reply{Text: fmt.Sprintf("I will try %s.", c.Name), Calls: []call{c}}
}

// personMessage is the index of the last user message carrying a person's instruction, or -1.
func personMessage(t transcript) int {
	for i := len(t.Messages) - 1; i >= 0; i-- {
		m := t.Messages[i]
		if m.Role == "user" && (strings.HasPrefix(m.Text, contract.PersonPrefix) || strings.Contains(m.Text, "\n"+contract.PersonPrefix)) {
			return i
		}
	}
	return -1
}

// maxFlakyCalls bounds breaker mode in case the breaker never opens.
const maxFlakyCalls = 12

// fallbackTools are the tools an "unavailable" result may offer instead, with the call to make.
var fallbackTools = []call{demoScript[1].Call, badArgTools[2], demoScript[0].Call}

// breakerReply calls the flaky tool until it is reported unavailable, then its fallback, then
// follows the script.
func breakerReply(ex []exchange) reply {
	flaky := 0
	for i, e := range ex {
		if e.Call.Name == FlakyTool {
			flaky++
		}
		if e.Call.Name != FlakyTool || e.Result == nil {
			continue
		}
		fb, ok := offeredFallback(e.Result.Text)
		if !ok {
			continue
		}
		for _, later := range ex[i+1:] {
			if later.Call.Name == fb.Name && later.Result != nil {
				return scripted(after(ex, later.Pos))
			}
		}
		return reply{Text: fmt.Sprintf("%s is unavailable, so I will use %s instead.", FlakyTool, fb.Name), Calls: []call{fb}}
	}
	if flaky >= maxFlakyCalls {
		return scripted(ex)
	}
	q := fmt.Sprintf("definition of Add in calc.go, try %d", flaky+1)
	return reply{Text: "Let me look that up.", Calls: []call{toolCall(FlakyTool, "query", q)}}
}

// offeredFallback finds the fallback tool named by an "unavailable" result.
func offeredFallback(text string) (call, bool) {
	if !strings.Contains(strings.ToLower(text), "unavailable") {
		return call{}, false
	}
	for _, c := range fallbackTools {
		if strings.Contains(text, c.Name) {
			return c, true
		}
	}
	return call{}, false
}
