package deploy

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestParseExposition checks the drill's reading of /metrics, which its assertions rest on.
func TestParseExposition(t *testing.T) {
	text := `# HELP keel_tool_calls_total tool calls
# TYPE keel_tool_calls_total counter
keel_tool_calls_total{namespace="default",outcome="ok",tool="read_file"} 3
keel_tool_calls_total{namespace="default",outcome="error",tool="run_command"} 2
keel_tool_calls_total{namespace="default",outcome="unknown",tool="run_command"} 1
keel_tool_calls_total{outcome="ok",tool="say \"hi\", twice"} 4
temporal_workflow_completed_total 7
not_a_number{a="b"} NaNx
`
	m := parseExposition(text)
	tests := []struct {
		name   string
		metric string
		keep   func(map[string]string) bool
		want   float64
	}{
		{"all of a metric", "keel_tool_calls_total", nil, 10},
		{"one outcome", "keel_tool_calls_total", outcomeIn("unknown"), 1},
		{"two outcomes", "keel_tool_calls_total", outcomeIn("ok", "error"), 9},
		{"escaped label value", "keel_tool_calls_total", func(l map[string]string) bool { return l["tool"] == `say \"hi\", twice` }, 4},
		{"no labels", "temporal_workflow_completed_total", nil, 7},
		{"absent", "keel_model_attempts_total", nil, 0},
		{"unparsable value skipped", "not_a_number", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, m.sum(tt.metric, tt.keep))
		})
	}
}

// TestDuplicates checks that a tool activity logged twice is reported once, and that the same
// activity ID in another workflow is not a duplicate.
func TestDuplicates(t *testing.T) {
	tests := []struct {
		name    string
		effects []effectLine
		want    []string
	}{
		{"none", []effectLine{{Workflow: "s/turn-1", Activity: "5"}, {Workflow: "s/turn-2", Activity: "5"}}, nil},
		{"one twice", []effectLine{{Workflow: "s/turn-1", Activity: "5"}, {Workflow: "s/turn-1", Activity: "5"}}, []string{"s/turn-1#5"}},
		{"one three times", []effectLine{{Workflow: "a", Activity: "1"}, {Workflow: "a", Activity: "1"}, {Workflow: "a", Activity: "1"}}, []string{"a#1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, duplicates(tt.effects))
		})
	}
}
