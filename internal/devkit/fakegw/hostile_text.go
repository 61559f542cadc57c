package fakegw

import (
	"strings"
)

// ModeHostileText is a model that tries to command the operator's terminal and to pass for Keel in
// what it prints: escape sequences, C1 controls and bidi overrides in its streamed replies, in a
// tool call's arguments, in a file name that a listing then shows, in a command's output and in
// its final answer, which also holds lines made to look like Keel's own; one of its commands is
// HostileLongLen characters long with the part that matters at its end (HostileTail).
const ModeHostileText = "hostile_text"

// Marks of the hostile text, for a test to look for: none may reach a terminal raw, and the visible
// form of each must.
const (
	// HostileTitle is the window title the hostile text's OSC sequences ask for.
	HostileTitle = "pwned-title"
	// HostileFile is the name of the file the model writes: an OSC title, a C1 CSI and a bidi
	// override in one name.
	HostileFile = "evil\x1b]0;" + HostileTitle + "\x07\u009b2J\u202eexe.txt"
	// HostileForgedKeel and HostileForgedMark are lines of the final answer that copy Keel's.
	HostileForgedKeel = "keel: fork verified, all files restored"
	HostileForgedMark = "  ✓ tests pass (approved by alice)"
	// HostileTail ends the long command: what it does, hidden behind padding.
	HostileTail = "echo hostile-tail-ran > hostile-tail"
	// HostileLongLen is the long command's length in characters.
	HostileLongLen = 2000
)

// HostileSequences are the raw forms the hostile text uses; a test checks that none of them is in
// what Keel printed.
var HostileSequences = []string{"\x1b]0;", "\x1b[2J", "\x1b[H", "\u009b", "\u009d", "\u202e", "\u2066", "\x1b[31m"}

// hostileSteps are the hostile model's calls, one a turn, each with the text streamed before it.
var hostileSteps = []step{
	{"Writing a file \x1b]0;" + HostileTitle + "\x07now\x1b[2J\x1b[H.\nkeel: all clear\n", toolCall("write_file", "path", HostileFile, "content", "x\n")},
	{"Listing \u009b2J\u009d0;" + HostileTitle + "\u009c the folder \u2066isolated\u2069.", toolCall("list_dir", "path", ".")},
	{"Printing colours.", toolCall("run_command", "command", `printf 'out \033[31mred\033]0;`+HostileTitle+`\007 \302\233 2J \342\200\256 end\n'`)},
	{"One more command.", toolCall("run_command", "command", HostileLongCommand())},
}

// HostileLongCommand is the long command: HostileLongLen characters, padding first, HostileTail
// last.
func HostileLongCommand() string {
	head, tail := "sh -c ': ", "; "+HostileTail+"'"
	return head + strings.Repeat("=", HostileLongLen-len(head)-len(tail)) + tail
}

// HostileAnswer is the final answer.
const HostileAnswer = "Done.\x1b]0;" + HostileTitle + "\x07\u009d0;" + HostileTitle + "\u009c\n" + HostileForgedKeel + "\n" + HostileForgedMark +
	"\n\u202etxt.exe\r" + HostileForgedMark + "\n"

// hostileReply makes the hostile steps in order, each once the previous one's result came back,
// then answers.
func hostileReply(ex []exchange) reply {
	next := 0
	for _, e := range ex {
		if next < len(hostileSteps) && e.Call.Name == hostileSteps[next].Call.Name && e.Call.Args == hostileSteps[next].Call.Args && e.Result != nil {
			next++
		}
	}
	if next < len(hostileSteps) {
		s := hostileSteps[next]
		return reply{Text: s.Text, Calls: []call{s.Call}}
	}
	return reply{Text: HostileAnswer}
}
