//go:build linux

package tools

import (
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/tools/toolspec"
)

// TestCommandSucceededPrefix: a goal's check passes when run_command's result starts with
// toolspec.CommandSucceeded, so exactly the results of a clean exit 0 must start with it.
func TestCommandSucceededPrefix(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    outcome
		pass bool
	}{
		{"exit 0", outcome{known: true}, true},
		{"exit 0 with leftovers", outcome{known: true, leftovers: true}, true},
		{"exit 1", outcome{known: true, code: 1}, false},
		{"exit 0 but failed", outcome{known: true, failed: true}, false},
		{"unknown end", outcome{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := commandResult(notStopped, tc.o, 0, false, "ok\n")
			if got := strings.HasPrefix(res.Content, toolspec.CommandSucceeded); got != tc.pass {
				t.Errorf("starts with the success prefix: %v, want %v: %q", got, tc.pass, res.Content)
			}
		})
	}
}
