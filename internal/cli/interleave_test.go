package cli

import (
	"reflect"
	"testing"

	"github.com/keelrun/keel/internal/contract"
)

// TestInterleave: a session's events print where they happened among its transcript's messages:
// a call's approval and decision after the reply that asked for the call and before its result,
// an escalation and its answer after their turn, a message said to the session where it reached
// the model, and what has no place yet at the end.
func TestInterleave(t *testing.T) {
	msgs := []contract.Message{
		{Role: contract.RoleUser, Content: "fix it"},
		{Role: contract.RoleAssistant, Content: "r1", ToolCalls: []contract.ToolCall{{ID: "c1", Name: "write_file"}}},
		{Role: contract.RoleTool, ToolCallID: "c1", Content: "written"},
		{Role: contract.RoleUser, Note: "escalation", Content: contract.PersonPrefix + "use calc.go"},
		{Role: contract.RoleAssistant, Content: "r2"},
		{Role: contract.RoleUser, Note: "say", Content: contract.PersonPrefix + "also the docs"},
		{Role: contract.RoleAssistant, Content: "r3"},
	}
	evs := []contract.Event{
		{Seq: 1, Event: contract.EventApproval, Turn: 1, CallID: "c1"},
		{Seq: 2, Event: contract.EventAnswer, Turn: 1, CallID: "c1", Text: "write_file approved by ann"},
		{Seq: 3, Event: contract.EventEscalation, Turn: 1, Text: "needs a person"},
		{Seq: 4, Event: contract.EventAnswer, Text: "edit"},
		{Seq: 5, Event: contract.EventSay, Turn: 2, Text: "also the docs", By: "ann"},
		{Seq: 6, Event: contract.EventLimit, Turn: 3, Text: "max turns"},
		{Seq: 7, Event: contract.EventSay, Turn: 4, Text: "not delivered yet", By: "bob"},
	}
	var got []string
	for _, e := range interleave(msgs, evs) {
		if e.Event == contract.EventMessage {
			got = append(got, e.Class+":"+e.Text)
			continue
		}
		got = append(got, e.Event+":"+e.Text)
	}
	want := []string{
		"user:fix it",
		"assistant:r1",
		"approval:", "answer:write_file approved by ann",
		"tool:written",
		"escalation:needs a person", "answer:edit",
		"user:" + contract.PersonPrefix + "use calc.go",
		"assistant:r2",
		"say:also the docs",
		"assistant:r3",
		"limit:max turns",
		"say:not delivered yet",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("order:\n%q\nwant:\n%q", got, want)
	}
}

// TestContinuedTranscript: a continued session keeps the whole transcript, counts its turns as
// fork does (model replies, not Keel's own records), and puts the next instruction after it as the
// person's.
func TestContinuedTranscript(t *testing.T) {
	msgs := []contract.Message{
		{Role: contract.RoleUser, Content: "fix it"},
		{Role: contract.RoleAssistant, Content: "r1"},
		{Role: contract.RoleAssistant, Content: "cut", Note: "partial"},
		{Role: contract.RoleAssistant, Content: "done"},
	}
	out, turns := continuedTranscript(msgs, "add a test")
	if turns != 2 || len(out) != 5 || out[4].Role != contract.RoleUser || out[4].Content != contract.PersonPrefix+"add a test" {
		t.Fatalf("turns %d, messages %+v", turns, out)
	}
}
