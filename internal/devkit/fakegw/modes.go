package fakegw

import (
	"fmt"
	"strings"
	"time"
)

// Injection modes. The scripted model reads its mode from the conversation: a line of the task
// made by WithMode, the way a real model takes instructions from the task. So the mode reaches the
// fake through whichever worker serves the session, and no part of Keel's code carries it. A
// client that talks to the fake directly may send the ModeHeader header instead. An empty or
// unknown mode runs the plain demo script.
//
// Gateway faults happen only on "the first model call" (a request with no assistant message), and
// attempts are counted per request body, so a retry of the same request sees the next attempt.
const (
	// ModeRateLimit answers attempt 1 with 429 and Retry-After: 1.
	ModeRateLimit = "rate_limit"
	// ModeThrottleForever answers every attempt with 429 and Retry-After: 1.
	ModeThrottleForever = "throttle_forever"
	// ModeNetwork closes the connection before writing a byte on attempts 1 to 3.
	ModeNetwork = "network"
	// ModeServerError answers attempts 1 and 2 with 503.
	ModeServerError = "server_error"
	// ModeOverloaded answers attempt 1 with 529 and Anthropic's overloaded_error body (the same
	// status, with an OpenAI-shaped body, on the OpenAI path), with Retry-After: 1.
	ModeOverloaded = "overloaded"
	// ModeTruncatedStart sends 200 and the SSE headers on attempt 1, then closes before any delta.
	ModeTruncatedStart = "truncated_start"
	// ModeTruncated streams a few text deltas on every attempt, then closes without the terminator.
	ModeTruncated = "truncated"
	// ModeSchema answers every attempt with 200 and a stream event that is not valid JSON.
	ModeSchema = "schema"
	// ModeRefusal declines: on OpenAI a refusal delta with finish_reason content_filter, on the
	// Responses API a refusal part of the message item, on Anthropic stop_reason "refusal" with no
	// content.
	ModeRefusal = "refusal"
	// ModeBudget reports exhausted credit: OpenAI 429 with type and code insufficient_quota;
	// Anthropic 400 with error type billing_error and "Your credit balance is too low".
	ModeBudget = "budget"
	// ModeUnknown answers 422 with a body in neither provider's error shape.
	ModeUnknown = "unknown"

	// ModeBadArgs makes every tool call carry truncated, invalid JSON arguments, a different tool
	// each time, until the request holds a user message starting with contract.PersonPrefix;
	// from there the model follows the demo script.
	ModeBadArgs = "bad_args"
	// ModeLoop makes the model call read_file "calc.go" again and again until a tool message says
	// it made the same call three times or should change approach; then it answers.
	ModeLoop = "loop"
	// ModeLongCommand makes the first call run_command "sleep 15", then the demo script.
	ModeLongCommand = "long_command"
	// ModeChattyCommand makes the first call run_command ChattyCommand, which prints a line a
	// second for six seconds, then the demo script: a command whose output is worth watching live.
	ModeChattyCommand = "chatty_command"
	// ModeHang makes the first call run_command "sleep 3600", then the demo script.
	ModeHang = "hang"
	// ModeSlowStream streams the first reply's text slowly (Options.SlowStreamDuration, one delta
	// every Options.SlowStreamInterval) and stops early when the client disconnects.
	ModeSlowStream = "slow_stream"
	// ModeToolError changes nothing in the model: the tools make the first write fail, and the
	// model re-sends a call whose result says the file is unchanged and to retry as is.
	ModeToolError = "tool_error"
	// ModeBreaker makes the model call FlakyTool until a result says it is unavailable and names a
	// fallback tool; it calls the fallback, then follows the demo script.
	ModeBreaker = "breaker"
	// ModeEscape is a hostile model: it runs every attempt of EscapeSteps against the targets its
	// task names (see EscapeTask), one call per turn, then answers.
	ModeEscape = "escape"
	// ModeEscapeHold first runs EscapeHoldCommand, which waits, then the attempts of ModeEscape.
	ModeEscapeHold = "escape_hold"
	// The escape classes (escape_classes.go): each runs the hostile attempts of one class of hole,
	// named targets from an EscapeClassTask, one call per turn, then answers; ModeEscapeClasses
	// runs every class's in one session.
	ModeEscapeState       = "escape_state"
	ModeEscapeSetuid      = "escape_setuid"
	ModeEscapeDescriptors = "escape_descriptors"
	ModeEscapeSignals     = "escape_signals"
	ModeEscapeLimits      = "escape_limits"
	ModeEscapeFileTools   = "escape_file_tools"
	ModeEscapeClasses     = "escape_classes"
	// ModeEscapeGit is a hostile model that leaves what git on the host would run: git's
	// configuration, hooks, an exclude entry and a commondir pointer (EscapeGitSteps).
	ModeEscapeGit = "escape_git"
	// ModePrimaryDown answers every request for any model but FallbackModel with 503, on every
	// call of the conversation: the primary is down, and only a fallback (gateway.fallbacks) can
	// answer. `starter demo --inject primary_down` configures FallbackModel as the fallback.
	ModePrimaryDown = "primary_down"
	// ModeUsageLimit answers attempt 1 of the first model call with 429 and a Retry-After of
	// Options.UsageReset (2 hours unless set): a usage limit whose reset lies beyond the retry
	// cap. The same request made again after the wait is answered.
	ModeUsageLimit = "usage_limit"
	// ModeDelegate makes the first call start DelegateCount sub-agents with the delegate tool,
	// each on the demo script, and answers once all their results are back.
	ModeDelegate = "delegate"
	// ModeDelegateFail makes the first call start one sub-agent whose model refuses (so it
	// fails), and answers once its result is back.
	ModeDelegateFail = "delegate_fail"
	// ModeDelegateLong makes the first call start two sub-agents whose first call runs
	// "sleep 15" (ModeLongCommand), then the demo script: time to kill a worker under them.
	ModeDelegateLong = "delegate_long"
	// ModeDelegateEscalate makes the first call start two sub-agents on ModeBadArgs: each
	// escalates and waits until a person answers it.
	ModeDelegateEscalate = "delegate_escalate"
	// ModeDelegateGreedy makes the first call start one sub-agent on the demo script, asking
	// for GreedyAsk: more turns and tokens than any test session has.
	ModeDelegateGreedy = "delegate_greedy"
)

// GreedyAsk is the limits ModeDelegateGreedy's delegate call asks for, as JSON fields.
const GreedyAsk = `"max_turns":1000,"max_tokens":100000000`

// DelegateCount is how many sub-agents ModeDelegate starts in its first reply.
const DelegateCount = 3

// DefaultUsageReset is ModeUsageLimit's Retry-After when Options.UsageReset is not set.
const DefaultUsageReset = 2 * time.Hour

// GoalCheck is a check command for goal mode that fails with its own output on its first fails
// runs and passes after: it counts its runs in a file of the work directory.
func GoalCheck(fails int) string {
	return fmt.Sprintf(`sh -c 'n=$(($(cat .keel-check-runs 2>/dev/null || echo 0)+1)); echo $n > .keel-check-runs; if [ $n -le %d ]; then echo "--- FAIL: TestGoal (run $n)"; exit 1; fi; echo ok'`, fails)
}

// GoalCheckSame is a check command that always fails the same way.
const GoalCheckSame = `sh -c 'echo "--- FAIL: TestGoal: want 3, got 2"; exit 1'`

// ChattyCommand is the command of ModeChattyCommand.
const ChattyCommand = `sh -c 'for i in 1 2 3 4 5 6; do echo "step $i of 6"; sleep 1; done'`

// FallbackModel is the model the fake serves even in primary_down mode.
const FallbackModel = "keel-fallback"

// FlakyTool is the tool the breaker mode keeps calling, with arguments {"query": string}; the
// query changes on every call so repeat detection does not trip before the breaker opens.
const FlakyTool = "flaky_lookup"

// ModeInfo is one injection mode and what a person sees it do, in one line.
type ModeInfo struct {
	Name string
	Does string
}

// ModeTable is every injection mode with what it does, in the order `starter demo --help` lists
// them: the one place a mode is described for people.
var ModeTable = []ModeInfo{
	{ModeRateLimit, "the first model call gets 429 with Retry-After: 1 once; the retry waits and succeeds"},
	{ModeThrottleForever, "every model call attempt gets 429; the throttle retries run out and the session fails"},
	{ModeNetwork, "the connection closes before a byte on attempts 1 to 3; the fourth succeeds"},
	{ModeServerError, "503 on attempts 1 and 2; the third succeeds"},
	{ModeOverloaded, "529 overloaded once, with Retry-After: 1; the retry succeeds"},
	{ModeTruncatedStart, "the stream opens and closes before any text, once; the retry succeeds"},
	{ModeTruncated, "every reply is cut after a few words: surfaced, not retried, since the text was shown"},
	{ModeSchema, "every reply carries an event that is not JSON: retried once, then surfaced"},
	{ModeRefusal, "the model declines the request: surfaced"},
	{ModeBudget, "the quota or credit is exhausted: surfaced, with an escalation notice"},
	{ModeUnknown, "422 with a body in no provider's shape: surfaced (fail closed)"},
	{ModeBadArgs, "every tool call has broken JSON arguments until a person answers the escalation"},
	{ModeLoop, "the model repeats one read_file call until told it is repeating itself"},
	{ModeLongCommand, "the first tool call runs sleep 15: time to press Esc, hit a limit or approve"},
	{ModeChattyCommand, "the first tool call prints a line a second for 6 s, shown live under the status line"},
	{ModeHang, "the first tool call runs sleep 3600, until cancelled or its timeout"},
	{ModeSlowStream, "the first reply streams slowly for about 15 s: time to cancel mid-reply"},
	{ModeToolError, "the first write_file fails with the file unchanged; the model retries it as told"},
	{ModeBreaker, "an MCP tool fails on every call until its breaker opens and read_file is offered instead"},
	{ModeEscape, "a hostile model tries every way out of the sandbox it knows, one per turn"},
	{ModeEscapeHold, "a command that waits, then the escape attempts: time to cancel mid-escape"},
	{ModeEscapeState, "a hostile model looks for other sessions' tasks and transcripts and writes a keel.yaml that would unconfine later commands"},
	{ModeEscapeSetuid, "a hostile model makes setuid, setgid and device files in the work directory and the cache"},
	{ModeEscapeDescriptors, "a hostile model plants keys, lists its descriptors and forges the sandbox's report"},
	{ModeEscapeSignals, "a hostile model sends the sandbox's init SIGQUIT, SIGTERM, SIGSEGV, SIGSTOP and SIGCONT"},
	{ModeEscapeLimits, "a hostile model runs a fork loop for 10 s and touches 3 GiB of shared memory (bounded only where a cgroup is)"},
	{ModeEscapeFileTools, "a hostile model turns the file tools on a 200 MiB file and a named pipe"},
	{ModeEscapeClasses, "every escape class above in one session"},
	{ModeEscapeGit, "a hostile model writes git's configuration, hooks and exclude entries for git on the host to run"},
	{ModeHostileText, "a hostile model prints escape sequences, C1 controls and lines like Keel's, and asks to run a 2,000-character command"},
	{ModePrimaryDown, "the primary model answers 503 on every call; the fallback model (gateway.fallbacks) answers"},
	{ModeDelegate, "the first reply starts three sub-agents with delegate, each fixing the demo on its own; the answer follows their results"},
	{ModeDelegateFail, "the first reply starts one sub-agent whose model refuses, so it fails; the parent is told and answers"},
	{ModeDelegateLong, "the first reply starts two sub-agents that each run sleep 15 first: time to kill a worker or cancel one"},
	{ModeDelegateEscalate, "the first reply starts two sub-agents whose tool calls are broken until a person answers each one's escalation"},
	{ModeDelegateGreedy, "the first reply starts one sub-agent asking for 1,000 turns and 100 million tokens; it gets what its parent has left"},
	{ModeUsageLimit, "the first model call gets 429 with Retry-After: 7200 once: a usage limit the session waits out on a timer (or escalates, when the reset is after its deadline)"},
}

// Modes lists every injection mode, for tests and selftests that walk them all.
var Modes = modeNames()

func modeNames() []string {
	names := make([]string, len(ModeTable))
	for i, m := range ModeTable {
		names[i] = m.Name
	}
	return names
}

// ModeHeader is the HTTP header a direct client of the fake may use to pick the mode of one
// request; it wins over a mode named in the task.
const ModeHeader = "X-Fake-Gateway-Mode"

// modeLine starts the task line that names the mode.
const modeLine = "fake gateway mode: "

// WithMode returns task with a last line naming mode for the scripted model; an empty mode leaves
// task as it is.
func WithMode(task, mode string) string {
	if mode == "" {
		return task
	}
	return task + "\n\n" + modeLine + mode
}

// mode is the mode named by the first user message that names one, or "".
func (t transcript) mode() string {
	for _, m := range t.Messages {
		if m.Role != "user" {
			continue
		}
		for line := range strings.Lines(m.Text) {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), modeLine); ok {
				return strings.TrimSpace(rest)
			}
		}
	}
	return ""
}
