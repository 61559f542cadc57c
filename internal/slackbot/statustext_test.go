package slackbot

import (
	"testing"

	"github.com/keelrun/keel/internal/contract"
)

// TestStatusTextNamesTheRunningTurn: during a turn the counts are of the turns done, and the reply
// says which turn runs, so "turn 0, 0 tokens" during turn 1 is not read as no progress.
func TestStatusTextNamesTheRunningTurn(t *testing.T) {
	cases := []struct {
		name string
		st   contract.SessionStatus
		want string
	}{
		{"between turns", contract.SessionStatus{Status: contract.StatusRunning, Turn: 2},
			"Session `w`: *running*, turn 2, 0 tokens, 0 tool calls (0 blocked)"},
		{"turn 1 running", contract.SessionStatus{Status: contract.StatusRunning, Running: 1},
			"Session `w`: *running*, turn 0, 0 tokens, 0 tool calls (0 blocked)\nTurn 1 is running (the counts above are of the turns done)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := StatusText("w", c.st); got != c.want {
				t.Errorf("StatusText = %q, want %q", got, c.want)
			}
		})
	}
}
