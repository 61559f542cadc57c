package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/gateway"
	"github.com/keelrun/keel/internal/tools/toolspec"
)

// listDirArgs are the two argument texts the scripted model alternates between. Both list the
// work directory; they differ as text so Keel's repeat detection (identical text three times in a
// row) never blocks a call and every turn runs a real tool activity.
var listDirArgs = [2]string{`{"path":"."}`, `{"path": "."}`}

// FinalAnswer is what the scripted model answers once its tool turns are spent.
const FinalAnswer = "done"

// Scripted is a zero-latency gateway.Provider that asks for one list_dir call per turn until the
// transcript holds ToolTurns assistant messages, then answers without tool calls. It reads the
// turn from the transcript, so it holds no per-session state and serves any number of sessions at
// once. Each call is stamped, so turn latency can be measured from outside the workflows.
type Scripted struct {
	// ToolTurns is how many turns ask for a tool before the final answer.
	ToolTurns int
	// OnCall, when set, is called at the start of every model call with the session's task (its
	// first user message) and the turn number (1-based).
	OnCall func(task string, turn int, at time.Time)
	// StreamFor, when set, makes every reply stream for that long: one delta every streamDelta.
	StreamFor time.Duration
	// Command, when set, is the command each tool turn asks run_command to run, instead of
	// listing the work directory.
	Command string
	// Delegate, when set, makes a session's first tool turn start that many sub-agents with the
	// delegate tool instead of its tool call; each sub-agent (its task starts with SubAgentTask)
	// runs the plain script of ToolTurns tool turns and the answer, so a tree's parent spends the
	// same turns as a session without children.
	Delegate int
}

// SubAgentTask starts the task of every sub-agent a Scripted model delegates to.
const SubAgentTask = "bench sub-agent"

// streamDelta is how often a slow scripted reply sends a delta, about a fast model's pace.
const streamDelta = 100 * time.Millisecond

// Name is the provider's name in logs.
func (s *Scripted) Name() string { return "bench-scripted" }

// Stream answers at once (or streams for s.StreamFor): deltas, then a tool call or the final answer.
func (s *Scripted) Stream(ctx context.Context, req gateway.Request, onDelta func(string)) (gateway.Response, error) {
	turn, task := 1, ""
	for _, m := range req.Messages {
		switch {
		case m.Role == contract.RoleAssistant:
			turn++
		case m.Role == contract.RoleUser && task == "":
			task = m.Content
		}
	}
	if s.OnCall != nil {
		s.OnCall(task, turn, time.Now())
	}
	usage := contract.Usage{InputTokens: 10, OutputTokens: 5}
	if err := s.slowStream(ctx, onDelta); err != nil {
		return gateway.Response{}, err
	}
	if turn > s.ToolTurns {
		onDelta(FinalAnswer)
		return gateway.Response{Message: contract.Message{Role: contract.RoleAssistant, Content: FinalAnswer}, Usage: usage, StopReason: "stop"}, nil
	}
	if turn == 1 && s.Delegate > 0 && !strings.HasPrefix(task, SubAgentTask) {
		onDelta("delegating")
		calls := make([]contract.ToolCall, s.Delegate)
		for i := range calls {
			calls[i] = contract.ToolCall{ID: fmt.Sprintf("delegate-%d", i+1), Name: toolspec.Delegate,
				Arguments: fmt.Sprintf(`{"task":%q}`, fmt.Sprintf("%s %d of %d: %s", SubAgentTask, i+1, s.Delegate, task))}
		}
		return gateway.Response{
			Message:    contract.Message{Role: contract.RoleAssistant, Content: "delegating", ToolCalls: calls},
			Usage:      usage,
			StopReason: "tool_calls",
		}, nil
	}
	onDelta("listing")
	call := contract.ToolCall{ID: fmt.Sprintf("call-%d", turn), Name: toolspec.ListDir, Arguments: listDirArgs[turn%2]}
	if s.Command != "" {
		// Two spellings of the same arguments, so repeat detection never blocks a call.
		args := [2]string{`{"command":%q}`, `{"command": %q}`}
		call = contract.ToolCall{ID: call.ID, Name: toolspec.RunCommand, Arguments: fmt.Sprintf(args[turn%2], s.Command)}
	}
	return gateway.Response{
		Message:    contract.Message{Role: contract.RoleAssistant, Content: "listing", ToolCalls: []contract.ToolCall{call}},
		Usage:      usage,
		StopReason: "tool_calls",
	}, nil
}

// slowStream sends a delta every streamDelta for s.StreamFor, stopping when ctx ends.
func (s *Scripted) slowStream(ctx context.Context, onDelta func(string)) error {
	if s.StreamFor <= 0 {
		return nil
	}
	t := time.NewTicker(streamDelta)
	defer t.Stop()
	end := time.After(s.StreamFor)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-end:
			return nil
		case <-t.C:
			onDelta("thinking ")
		}
	}
}

// Stamps collects the model-call times of many sessions, keyed by task, so the time between one
// turn's model call and the next (one full turn of orchestration plus tool) can be read afterwards.
// Only the first call of a turn counts, so a retried call does not shorten a gap.
type Stamps struct {
	mu sync.Mutex
	by map[string]map[int]time.Time
}

// NewStamps returns an empty collector.
func NewStamps() *Stamps { return &Stamps{by: map[string]map[int]time.Time{}} }

// Record is a Scripted.OnCall function.
func (s *Stamps) Record(task string, turn int, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.by[task]
	if m == nil {
		m = map[int]time.Time{}
		s.by[task] = m
	}
	if _, ok := m[turn]; !ok {
		m[turn] = at
	}
}

// Gaps returns, over every session, the times between the first calls of consecutive turns: one
// per turn except each session's last.
func (s *Stamps) Gaps() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []time.Duration
	for _, m := range s.by {
		for turn, at := range m {
			if prev, ok := m[turn-1]; ok {
				out = append(out, at.Sub(prev))
			}
		}
	}
	return out
}

// Calls is the number of turns recorded.
func (s *Stamps) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, m := range s.by {
		n += len(m)
	}
	return n
}

// Reset forgets everything recorded.
func (s *Stamps) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.by = map[string]map[int]time.Time{}
}
