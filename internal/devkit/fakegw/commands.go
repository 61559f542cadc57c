package fakegw

import "strings"

// ModeCommands makes the model run the commands its task lists, one run_command call a turn,
// in order, then answer: a test writes its own hostile script into the task (CommandsTask). A
// task line ReadLine wrote is a read_file call of its path, in its place among the commands. It
// is not offered by `starter demo --inject`, whose task lists no commands.
const ModeCommands = "commands"

// commandLine starts a task line that holds one command of ModeCommands; readLine one that
// holds the path of a read_file call.
const (
	commandLine = "run: "
	readLine    = "read: "
)

// CommandLine is the task line of ModeCommands that runs command.
func CommandLine(command string) string { return commandLine + command }

// ReadLine is the task line of ModeCommands that reads the file at path with read_file.
func ReadLine(path string) string { return readLine + path }

// answerCommands is ModeCommands's final answer.
const answerCommands = "I ran every command of the task."

// CommandsTask is a task for ModeCommands: task, then one line per command.
func CommandsTask(task string, commands ...string) string {
	var b strings.Builder
	b.WriteString(task)
	for _, c := range commands {
		b.WriteString("\n" + CommandLine(c))
	}
	return WithMode(b.String(), ModeCommands)
}

// commandsReply is the next command of the task whose predecessor's result came back, or the
// final answer.
func commandsReply(t transcript, ex []exchange) reply {
	var calls []call
	for _, m := range t.Messages {
		if m.Role != "user" {
			continue
		}
		for line := range strings.Lines(m.Text) {
			line = strings.TrimRight(line, "\n")
			if c, ok := strings.CutPrefix(line, commandLine); ok {
				calls = append(calls, toolCall("run_command", "command", c))
			} else if p, ok := strings.CutPrefix(line, readLine); ok {
				calls = append(calls, toolCall("read_file", "path", p))
			}
		}
		break
	}
	next := 0
	for _, e := range ex {
		if next < len(calls) && sameStep(e.Call, calls[next]) && e.Result != nil {
			next++
		}
	}
	if next < len(calls) {
		return reply{Text: "Next command.", Calls: []call{calls[next]}}
	}
	return reply{Text: answerCommands}
}
