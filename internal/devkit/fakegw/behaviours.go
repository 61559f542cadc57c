package fakegw

import (
	"fmt"
	"strings"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/demo"
)

// The model behaviours of the injection modes that change what the model does.

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

// delegateReply starts n sub-agents in one reply, each with a task whose mode line is childMode,
// and answers once every delegate call has its result.
func delegateReply(ex []exchange, childMode string, n int, ask string) reply {
	calls := make([]call, n)
	for i := range calls {
		calls[i] = toolCall("delegate", "task", WithMode(fmt.Sprintf("Sub-task %d of %d: make go test ./... pass in this directory.", i+1, n), childMode))
		if ask != "" {
			calls[i].Args = strings.TrimSuffix(calls[i].Args, "}") + "," + ask + "}"
		}
	}
	back := 0
	for _, e := range ex {
		if e.Call.Name == "delegate" && e.Result != nil {
			back++
		}
	}
	switch {
	case len(ex) == 0:
		return reply{Text: fmt.Sprintf("I will hand this to %d sub-agents.", n), Calls: calls}
	case back >= n:
		return reply{Text: fmt.Sprintf("All %d sub-agents reported back.", n)}
	}
	return scripted(ex)
}
