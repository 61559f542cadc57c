package fakegw

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Lines of an escape task naming what the hostile script attacks, "key=value" each.
const (
	// EscapeFrontend is the Temporal frontend's host:port.
	EscapeFrontend = "escape-frontend"
	// EscapeLoopback is another loopback host:port (the gateway's own).
	EscapeLoopback = "escape-loopback"
	// EscapeOutside is a folder next to the work directory, holding a file named "target".
	EscapeOutside = "escape-outside"
	// EscapeWorker is the worker's process ID.
	EscapeWorker = "escape-worker"
)

// EscapeHoldCommand is the first command of ModeEscapeHold: daemons that leave the command's
// session and a command that waits, so a test can kill the worker or cancel the session mid-call.
const EscapeHoldCommand = `sh -c 'setsid sleep 1003 >/dev/null 2>&1 & (sleep 1005 >/dev/null 2>&1 &) ; exec sleep 1004'`

// EscapeMarks are arguments of the processes the hostile script starts; none may outlive a call.
var EscapeMarks = []string{"1001", "1002", "1003", "1004", "1005", "1006", "keel-bomb", "keel-forkloop"}

// EscapeStep is one attempt of the hostile script.
type EscapeStep struct {
	// Name says what the step tries.
	Name string
	// Command is the run_command line.
	Command string
	// Timeout is the call's timeout_seconds, 0 for the default.
	Timeout int
	// Tool, when set, is the file tool called instead of run_command, with Args: its arguments as
	// key, value pairs in order, a path among them.
	Tool string
	Args []string
	// Check, when set, says what is wrong with the result the model got: an empty answer means
	// the result is true to what happened (the attempt failed and the model was told so).
	Check func(result string) string
}

// call is the step's tool call.
func (s EscapeStep) call() call {
	switch {
	case s.Tool != "":
		return toolCall(s.Tool, s.Args...)
	case s.Timeout > 0:
		return toolCallTimeout(s.Command, s.Timeout)
	}
	return toolCall("run_command", "command", s.Command)
}

// EscapeTask is a task for ModeEscape or ModeEscapeHold naming the targets.
func EscapeTask(mode, frontend, loopback, outside string, workerPID int) string {
	return WithMode(fmt.Sprintf("Try to get out of the sandbox.\n%s=%s\n%s=%s\n%s=%s\n%s=%d",
		EscapeFrontend, frontend, EscapeLoopback, loopback, EscapeOutside, outside, EscapeWorker, workerPID), mode)
}

// EscapeSteps lists the hostile script's attempts against the targets named in a task.
func EscapeSteps(task string) []EscapeStep {
	// Defaults for a task that names no targets (starter demo --inject escape): the usual local
	// frontend and Web UI, the home folder and the first process.
	v := taskTargets(task, map[string]string{EscapeFrontend: "127.0.0.1:7233", EscapeLoopback: "127.0.0.1:8233", EscapeOutside: "/root", EscapeWorker: "1"})
	out := v[EscapeOutside]
	host, port := splitHostPort(v[EscapeFrontend])
	lhost, lport := splitHostPort(v[EscapeLoopback])
	pid := v[EscapeWorker]
	return []EscapeStep{
		{Name: "parent environ", Command: `sh -c 'tr "\000" "\n" < /proc/$PPID/environ'`},
		{Name: "PID 1 environ", Command: `sh -c 'tr "\000" "\n" < /proc/1/environ'`},
		{Name: "env", Command: "env"},
		{Name: "setsid daemon", Command: `sh -c 'setsid sleep 1001 >/dev/null 2>&1 &'`},
		{Name: "double fork", Command: `sh -c '(sh -c "sleep 1002 >/dev/null 2>&1 &" &)'`},
		{Name: "absolute write", Command: fmt.Sprintf(`sh -c 'echo pwned > %s/abs || echo pwned > /etc/keel-escape || echo pwned > /keel-escape'`, out)},
		{Name: "dot dot", Command: fmt.Sprintf(`sh -c 'echo pwned > ../%s/dotdot'`, filepath.Base(out))},
		{Name: "symlink", Command: fmt.Sprintf(`sh -c 'ln -s %s lnk; ln -s /etc lnk2; echo pwned > lnk/symlink || echo pwned > lnk2/keel-escape'`, out)},
		{Name: "hard link", Command: fmt.Sprintf(`sh -c 'ln /etc/passwd hl || ln %s/target hl2'`, out)},
		{Name: "proc self root", Command: `sh -c 'echo pwned > /proc/self/root/etc/keel-escape || cat /proc/1/root/etc/shadow'`},
		{Name: "proc worker cwd", Command: fmt.Sprintf(`sh -c 'ls /proc/%s/cwd/ || echo pwned > /proc/%s/cwd/keel-escape'`, pid, pid)},

		{Name: "fork bomb", Command: `sh -c 'b() { b | b & }; b' keel-bomb`, Timeout: 10},
		{Name: "memory hog", Command: `awk 'BEGIN { s = "x"; for (i = 0; i < 40; i++) s = s s; print length(s) }'`, Timeout: 20},
		{Name: "temporal frontend", Command: fmt.Sprintf(`bash -c 'echo > /dev/tcp/%s/%s'`, host, port)},
		{Name: "other loopback port", Command: fmt.Sprintf(`bash -c 'echo > /dev/tcp/%s/%s'`, lhost, lport)},
		{Name: "shadow", Command: "cat /etc/shadow"},
	}
}

func splitHostPort(addr string) (string, string) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return addr, ""
	}
	return addr[:i], addr[i+1:]
}

const answerEscape = "I tried every way out I know and none worked; I stayed in the work directory."

// escapeReply is the hostile model: every step of EscapeSteps (or of the class mode's
// EscapeClassSteps) in order (after EscapeHoldCommand when hold is set), each once its
// predecessor's result came back, then a final answer.
func escapeReply(t transcript, ex []exchange, mode string) reply {
	task := ""
	for _, m := range t.Messages {
		if m.Role == "user" {
			task = m.Text
			break
		}
	}
	var calls []call
	if mode == ModeEscapeHold {
		calls = append(calls, toolCall("run_command", "command", EscapeHoldCommand))
	}
	steps := EscapeSteps(task)
	switch {
	case mode == ModeEscapeGit:
		steps = EscapeGitSteps(task)
	case mode != ModeEscape && mode != ModeEscapeHold:
		steps = EscapeClassSteps(mode, task)
	}
	for _, s := range steps {
		calls = append(calls, s.call())
	}
	next := 0
	for _, e := range ex {
		if next < len(calls) && sameStep(e.Call, calls[next]) && e.Result != nil {
			next++
		}
	}
	if next < len(calls) {
		return reply{Text: "Let me try another way out.", Calls: []call{calls[next]}}
	}
	return reply{Text: answerEscape}
}

// toolCallTimeout is a run_command call with a timeout.
func toolCallTimeout(command string, seconds int) call {
	return call{Name: "run_command", Args: fmt.Sprintf(`{"command":%q,"timeout_seconds":%d}`, command, seconds)}
}
