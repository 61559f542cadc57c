package workflows

import (
	"testing"

	"github.com/keelrun/keel/internal/contract"
)

// TestToolSummary: a tool activity's Web UI summary names the call by the tool's own summary
// arguments, and a tool that is not built in by the usual ones.
func TestToolSummary(t *testing.T) {
	cases := []struct {
		name, args, want string
	}{
		{"write_file", `{"path":"calc.go","content":"x"}`, "write_file calc.go"},
		{"run_command", `{"command":"go test ./...","timeout_seconds":5}`, "run_command go test ./..."},
		{"search", `{"pattern":"TODO"}`, "search TODO"},
		{"read_file", `{"command":"not an argument of read_file"}`, "read_file"},
		{"docs_lookup", `{"pattern":"retry"}`, "docs_lookup retry"},
		{"read_file", `{`, "read_file"},
	}
	for _, c := range cases {
		if got := toolSummary(contract.ToolCall{Name: c.name, Arguments: c.args}); got != c.want {
			t.Errorf("%s %s: summary %q, want %q", c.name, c.args, got, c.want)
		}
	}
}
