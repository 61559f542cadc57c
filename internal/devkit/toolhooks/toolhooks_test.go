package toolhooks

import (
	"context"
	"slices"
	"testing"

	"github.com/keelrun/keel/activities"
	"github.com/keelrun/keel/internal/contract"
)

// TestFailFirstWrite: the first write_file of each session fails with the "retry as is" result
// and never reaches the tools; every other call does.
func TestFailFirstWrite(t *testing.T) {
	var reached []string
	next := activities.ToolRunnerFunc(func(_ context.Context, req contract.ToolRequest) (contract.ToolResult, error) {
		reached = append(reached, req.SessionID+" "+req.Call.Name)
		return contract.ToolResult{Content: "ok", Changed: true}, nil
	})
	r := FailFirstWrite(next)
	write := contract.ToolCall{Name: "write_file", Arguments: `{"path":"calc.go","content":"x"}`}
	read := contract.ToolCall{Name: "read_file", Arguments: `{"path":"calc.go"}`}
	steps := []struct {
		session string
		call    contract.ToolCall
		failed  bool
	}{
		{"a", read, false},
		{"a", write, true},
		{"a", write, false},
		{"b", write, true},
		{"b", read, false},
	}
	for i, s := range steps {
		res, err := r.Run(context.Background(), contract.ToolRequest{SessionID: s.session, Call: s.call})
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError != s.failed || (s.failed && (res.Changed || res.Content != `The write to "calc.go" failed and the file is unchanged; retry as is.`)) {
			t.Fatalf("step %d (%s %s): %+v", i, s.session, s.call.Name, res)
		}
	}
	if want := []string{"a read_file", "a write_file", "b read_file"}; !slices.Equal(reached, want) {
		t.Fatalf("reached the tools: %v, want %v", reached, want)
	}
}

// TestForMode: only tool_error needs a tool hook.
func TestForMode(t *testing.T) {
	for mode, want := range map[string]int{"tool_error": 1, "rate_limit": 0, "": 0, "bad_args": 0} {
		if got := len(ForMode(mode)); got != want {
			t.Errorf("ForMode(%q) has %d hooks, want %d", mode, got, want)
		}
	}
}
