package workflows_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/tools/toolspec"
)

// TestToolTextChangeKeepsFixturesReplaying is a release that rewrites every built-in tool's
// description and schema: each recorded session and turn must still replay, because a running
// turn resolves the tools it was started with by their digest, not from this build's text.
func TestToolTextChangeKeepsFixturesReplaying(t *testing.T) {
	released := toolspec.Builtin()
	changed := toolspec.Builtin()
	for i := range changed {
		changed[i].Description += " (reworded)"
		changed[i].Parameters = []byte(strings.ReplaceAll(string(changed[i].Parameters), `"description":"`, `"description":"reworded: `))
	}
	restore := toolspec.OverrideBuiltin(changed)
	defer restore()
	for i, s := range toolspec.Builtin() {
		if s.Description == released[i].Description || slices.Equal(s.Parameters, released[i].Parameters) {
			t.Fatalf("%s: the description and the schema must both change", s.Name)
		}
	}
	replayEveryFixture(t)
}
