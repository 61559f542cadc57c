package tools

import (
	"reflect"
	"testing"

	"github.com/keelrun/keel/internal/tools/toolspec"
)

// TestEveryToolRuns: every built-in tool's row has a runner that decodes into the row's own
// argument struct (the struct its schema is generated from), and every runner belongs to a row.
func TestEveryToolRuns(t *testing.T) {
	rows := toolspec.Tools()
	for _, tool := range rows {
		r, ok := runners[tool.Name]
		switch {
		case !ok:
			t.Errorf("%s has a row in toolspec but no runner in runners", tool.Name)
		case r.args != reflect.TypeOf(tool.Args):
			t.Errorf("%s: the runner decodes into %s, the row's schema is of %T", tool.Name, r.args, tool.Args)
		}
	}
	if len(runners) != len(rows) {
		t.Errorf("%d runners for %d built-in tools: a runner has no row in toolspec", len(runners), len(rows))
	}
}
