package fakegw

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ModeBench makes the model call one tool a turn, as many turns as its task names (BenchTask),
// then answer: the benchmarks' model, the same for Keel and for any other loop that sends the
// task as its first user message. Each turn's call is list_dir of the work directory, or
// run_command of the task's command; the argument text alternates between two spellings, so
// Keel's repeat detection (identical text three times in a row) never stops a call. A task may
// also ask every reply to stream for a while first. It is not offered by `starter demo --inject`.
const ModeBench = "bench"

// BenchScript is what a ModeBench task asks of the model.
type BenchScript struct {
	// Turns is how many turns call a tool before the answer.
	Turns int
	// Command, when set, is run with run_command each turn instead of listing the work directory.
	Command string
	// Stream, when positive, makes every reply stream one small delta every BenchStreamEvery
	// for about this long before its text.
	Stream time.Duration
}

// BenchStreamEvery is how often a ModeBench reply that streams for a while sends a delta, about
// a fast model's pace.
const BenchStreamEvery = 100 * time.Millisecond

// BenchAnswer is ModeBench's final answer.
const BenchAnswer = "done"

// Task lines of a ModeBench task.
const (
	benchTurnsLine   = "bench turns: "
	benchCommandLine = "bench command: "
	benchStreamLine  = "bench stream: "
)

// BenchTask is a ModeBench task: task (unique per session, so the gateway's records tell the
// sessions apart), then the script's lines.
func BenchTask(task string, s BenchScript) string {
	var b strings.Builder
	b.WriteString(task)
	fmt.Fprintf(&b, "\n%s%d", benchTurnsLine, s.Turns)
	if s.Command != "" {
		b.WriteString("\n" + benchCommandLine + s.Command)
	}
	if s.Stream > 0 {
		b.WriteString("\n" + benchStreamLine + s.Stream.String())
	}
	return WithMode(b.String(), ModeBench)
}

// benchScript reads the script from the task's lines.
func (t transcript) benchScript() BenchScript {
	var s BenchScript
	for line := range strings.Lines(t.task()) {
		line = strings.TrimRight(line, "\n")
		if v, ok := strings.CutPrefix(line, benchTurnsLine); ok {
			s.Turns, _ = strconv.Atoi(strings.TrimSpace(v))
		}
		if v, ok := strings.CutPrefix(line, benchCommandLine); ok {
			s.Command = v
		}
		if v, ok := strings.CutPrefix(line, benchStreamLine); ok {
			s.Stream, _ = time.ParseDuration(strings.TrimSpace(v))
		}
	}
	return s
}

// benchTurn is the turn a request is for: one more than the model's answers it holds.
func (t transcript) benchTurn() int {
	turn := 1
	for _, m := range t.Messages {
		if m.Role == "assistant" {
			turn++
		}
	}
	return turn
}

// benchReply is the call of this turn, or the answer once the script's turns are spent.
func benchReply(t transcript) reply {
	s, turn := t.benchScript(), t.benchTurn()
	if turn > s.Turns {
		return reply{Text: BenchAnswer}
	}
	name, key, value := "list_dir", "path", "."
	if s.Command != "" {
		name, key, value = "run_command", "command", s.Command
	}
	k, _ := json.Marshal(key)
	v, _ := json.Marshal(value)
	sep := ":"
	if turn%2 == 1 {
		sep = ": "
	}
	return reply{Text: "Next call.", Calls: []call{{Name: name, Args: "{" + string(k) + sep + string(v) + "}"}}}
}

// benchSlow is the deltas a ModeBench reply streams before its text.
func benchSlow(t transcript) []string {
	s := t.benchScript()
	if s.Stream <= 0 {
		return nil
	}
	return slowPieces(int(s.Stream / BenchStreamEvery))
}
