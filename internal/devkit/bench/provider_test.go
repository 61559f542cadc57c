package bench

import (
	"context"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/gateway"
	"github.com/keelrun/keel/internal/tools/toolspec"
)

func TestScriptedAsksThenAnswers(t *testing.T) {
	tests := []struct {
		name       string
		assistants int
		wantTool   bool
		wantArgs   string
	}{
		{"first turn asks", 0, true, listDirArgs[1]},
		{"second turn alternates the argument text", 1, true, listDirArgs[0]},
		{"last tool turn asks", 2, true, listDirArgs[1]},
		{"after the tool turns it answers", 3, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var gotTurn int
			s := &Scripted{ToolTurns: 3, OnCall: func(task string, turn int, _ time.Time) {
				if task != "the task" {
					t.Errorf("task %q, want %q", task, "the task")
				}
				gotTurn = turn
			}}
			msgs := []contract.Message{{Role: contract.RoleUser, Content: "the task"}}
			for range tt.assistants {
				msgs = append(msgs, contract.Message{Role: contract.RoleAssistant}, contract.Message{Role: contract.RoleTool})
			}
			deltas := 0
			resp, err := s.Stream(context.Background(), gateway.Request{Messages: msgs}, func(string) { deltas++ })
			if err != nil {
				t.Fatal(err)
			}
			if gotTurn != tt.assistants+1 || deltas != 1 {
				t.Errorf("turn %d with %d deltas, want turn %d with 1", gotTurn, deltas, tt.assistants+1)
			}
			calls := resp.Message.ToolCalls
			if !tt.wantTool {
				if len(calls) != 0 || resp.Message.Content != FinalAnswer {
					t.Errorf("got %+v, want the final answer", resp.Message)
				}
				return
			}
			if len(calls) != 1 || calls[0].Name != toolspec.ListDir || calls[0].Arguments != tt.wantArgs {
				t.Errorf("got calls %+v, want one list_dir with %s", calls, tt.wantArgs)
			}
		})
	}
}

func TestStampsGapsAndPercentile(t *testing.T) {
	s := NewStamps()
	t0 := time.Unix(0, 0)
	s.Record("a", 1, t0)
	s.Record("a", 2, t0.Add(100*time.Millisecond))
	s.Record("a", 2, t0.Add(900*time.Millisecond)) // a retried call keeps the first stamp
	s.Record("a", 3, t0.Add(300*time.Millisecond))
	s.Record("b", 1, t0)
	if got := s.Calls(); got != 4 {
		t.Fatalf("calls %d, want 4", got)
	}
	gaps := s.Gaps()
	if len(gaps) != 2 {
		t.Fatalf("gaps %v, want two", gaps)
	}
	if p := Percentile(gaps, 1); p != 200*time.Millisecond {
		t.Errorf("max gap %v, want 200ms", p)
	}
	if p := Percentile(gaps, 0.5); p != 100*time.Millisecond {
		t.Errorf("median gap %v, want 100ms", p)
	}
	if p := Percentile(nil, 0.5); p != 0 {
		t.Errorf("percentile of nothing %v, want 0", p)
	}
}

func TestRSSReadsThisProcess(t *testing.T) {
	rss, err := RSS()
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	if rss < 1<<20 {
		t.Errorf("RSS %d bytes, want at least 1 MiB", rss)
	}
}
