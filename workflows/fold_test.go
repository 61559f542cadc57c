package workflows

import (
	"reflect"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/tools/breaker"
)

// TestFoldTurn states, for every way a turn ends, exactly what the session keeps of it: each case
// starts from the same session state and lists the state and the events it must end with.
func TestFoldTurn(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	before := contract.SessionState{
		TranscriptRef: contract.TranscriptRef{Head: "h1", Pending: []contract.Message{{Role: contract.RoleTool, Content: "earlier"}}},
		Turns:         1,
		Usage:         contract.Usage{InputTokens: 100, OutputTokens: 10},
		Counters:      contract.Counters{ToolCalls: 1, GatewayCalls: 1, GatewayAttempts: 1},
		Guards: contract.Guards{
			Repeat: contract.RepeatState{Key: "old", Count: 1}, Repairs: map[string]int{"read_file": 1},
			Rejected: []string{"turn 1: read_file {"},
		},
		LastInput: 100,
	}
	guards := contract.Guards{
		Repeat: contract.RepeatState{Key: "read_file\x00{}", Count: 2}, Repairs: map[string]int{"*": 2},
		Rejected: []string{"turn 2: x"}, Breakers: breaker.State{Breakers: []breaker.Breaker{{Key: "run_command", State: breaker.Open, OpenedAt: t0}}},
	}
	usage := contract.Usage{InputTokens: 300, OutputTokens: 20}
	modelCalled := contract.Counters{GatewayCalls: 1, GatewayAttempts: 1}
	withTools := contract.Counters{GatewayCalls: 1, GatewayAttempts: 1, ToolCalls: 2}
	stored := contract.Transcript{Head: "h2", Pending: []contract.Message{{Role: contract.RoleTool, Content: "result"}}}
	blocked := []contract.Event{{Event: contract.EventBlocked, Turn: 2, Tool: "rm"}}
	notice := contract.Event{Event: contract.EventNotice, Turn: 2, Text: "turn 2 interrupted by a person's message"}

	// kept is before with every part a turn that ran to its end brings.
	kept := before
	kept.TranscriptRef = contract.TranscriptRef(stored)
	kept.Turns = 2
	kept.Usage, kept.Counters = before.Usage.Add(usage), before.Counters.Add(withTools)
	kept.LastInput = 300
	kept.Guards = guards

	cases := []struct {
		name    string
		res     contract.TurnResult
		outcome turnOutcome
		want    func() contract.SessionState
		events  []contract.Event
	}{
		{"final answer", contract.TurnResult{Transcript: stored, Final: true, Answer: "done", Usage: usage, Counters: withTools, Guards: guards, Events: blocked},
			turnDone, func() contract.SessionState { return kept }, blocked},
		{"tool calls done", contract.TurnResult{Transcript: stored, Usage: usage, Counters: withTools, Guards: guards},
			turnDone, func() contract.SessionState { return kept }, nil},
		{"needs approval", contract.TurnResult{Transcript: stored, Usage: usage, Counters: withTools, Guards: guards,
			NeedsApproval: &contract.Approval{CallID: "c1"}, Resume: []contract.ToolCall{{ID: "c1"}}},
			turnDone, func() contract.SessionState { return kept }, nil},
		{"escalate", contract.TurnResult{Transcript: stored, Usage: usage, Counters: withTools, Guards: guards, Escalate: &contract.EscalationRequest{Reason: contract.ReasonLoop}},
			turnDone, func() contract.SessionState { return kept }, nil},
		{"no repair counts in the result keeps the session's", contract.TurnResult{Transcript: stored, Usage: usage, Counters: withTools,
			Guards: contract.Guards{Repeat: guards.Repeat, Rejected: guards.Rejected, Breakers: guards.Breakers}},
			turnDone, func() contract.SessionState { st := kept; st.Repairs = before.Repairs; return st }, nil},
		{"model call failed", contract.TurnResult{Transcript: contract.Transcript(before.TranscriptRef), Counters: contract.Counters{GatewayCalls: 1, GatewayAttempts: 4},
			Failure: &contract.Failure{Class: contract.ClassTransport, Attempts: 4}},
			turnDone, func() contract.SessionState {
				st := before
				st.Turns = 2
				st.Counters = before.Counters.Add(contract.Counters{GatewayCalls: 1, GatewayAttempts: 4})
				st.Guards = contract.Guards{Repairs: before.Repairs}
				return st
			}, nil},
		{"turn failed (no result)", contract.TurnResult{Failure: &contract.Failure{Class: contract.ClassUnknown}},
			turnDone, func() contract.SessionState {
				st := before
				st.Turns = 2
				st.Guards = contract.Guards{Repairs: before.Repairs}
				return st
			}, nil},
		{"cancelled during its tool calls", contract.TurnResult{Transcript: stored, Usage: usage, Counters: withTools, Guards: guards, Cancelled: true, Events: blocked},
			turnCancelled, func() contract.SessionState {
				st := before
				st.TranscriptRef = contract.TranscriptRef(stored)
				st.Turns = 2
				st.Usage, st.Counters = before.Usage.Add(usage), before.Counters.Add(withTools)
				return st
			}, blocked},
		{"cancelled during the model call", contract.TurnResult{Usage: usage, Counters: modelCalled, Cancelled: true, Partial: "I will"},
			turnCancelled, func() contract.SessionState {
				st := before
				st.Turns = 2
				st.Usage, st.Counters = before.Usage.Add(usage), before.Counters.Add(modelCalled)
				return st
			}, nil},
		{"cancelled before the model call", contract.TurnResult{Cancelled: true},
			turnCancelled, func() contract.SessionState { return before }, nil},
		{"out of time", contract.TurnResult{Transcript: stored, Usage: usage, Counters: withTools, Guards: guards},
			turnTimedOut, func() contract.SessionState {
				st := before
				st.TranscriptRef = contract.TranscriptRef(stored)
				st.Turns = 2
				st.Usage, st.Counters = before.Usage.Add(usage), before.Counters.Add(withTools)
				return st
			}, nil},
		{"interrupted during its tool calls", contract.TurnResult{Transcript: stored, Usage: usage, Counters: withTools, Guards: guards, Cancelled: true, Events: blocked},
			turnInterrupted, func() contract.SessionState { return kept }, append(blocked[:1:1], notice)},
		{"interrupted during the model call", contract.TurnResult{Usage: usage, Counters: modelCalled, Cancelled: true, Partial: "I will"},
			turnInterrupted, func() contract.SessionState {
				st := before
				st.Turns = 2
				st.Usage, st.Counters = before.Usage.Add(usage), before.Counters.Add(modelCalled)
				st.Pending = append(before.Pending[:1:1], contract.Message{Role: contract.RoleAssistant, Content: "I will", Note: "interrupted"})
				return st
			}, []contract.Event{notice}},
		{"interrupted before any text", contract.TurnResult{Counters: modelCalled, Cancelled: true},
			turnInterrupted, func() contract.SessionState {
				st := before
				st.Turns = 2
				st.Counters = before.Counters.Add(modelCalled)
				return st
			}, []contract.Event{notice}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pendingBefore := len(before.Pending)
			got, events := foldTurn(before, 2, c.res, c.outcome)
			if want := c.want(); !reflect.DeepEqual(got, want) {
				t.Errorf("state\n got %+v\nwant %+v", got, want)
			}
			if !reflect.DeepEqual(events, c.events) {
				t.Errorf("events\n got %+v\nwant %+v", events, c.events)
			}
			if len(before.Pending) != pendingBefore || before.Pending[0].Content != "earlier" {
				t.Errorf("the fold changed the state it was given: %+v", before.Pending)
			}
		})
	}
}
