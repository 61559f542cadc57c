package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/devkit/devserver"
)

// TestTierCommandsAreDocumented: the README's first two lines are the demo and FullSuiteCommand,
// CONTRIBUTING.md gives both tiers' commands, and CI runs the README's second line and installs
// nothing the tests need, so CI, a newcomer and a contributor run the same thing.
func TestTierCommandsAreDocumented(t *testing.T) {
	read := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(RepoRoot(), name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	lines := strings.SplitN(read("README.md"), "\n", 3)
	if len(lines) < 3 || lines[0] != "go run ./starter demo" || lines[1] != FullSuiteCommand {
		t.Errorf("README.md starts with %q; want the demo, then %q", lines[:min(2, len(lines))], FullSuiteCommand)
	}
	contributing := read("CONTRIBUTING.md")
	for _, cmd := range []string{FastTierCommand, FullSuiteCommand} {
		if !strings.Contains(contributing, "`"+cmd+"`") {
			t.Errorf("CONTRIBUTING.md does not give %q", cmd)
		}
	}
	ci := read(".ci/run")
	cases := []struct {
		what string
		text string
		want bool
	}{
		{"reads the README's test command", "test_command=$(sed -n 2p README.md)", true},
		{"runs it", "\n$test_command\n", true},
		{"installs the temporal CLI", strings.Split(devserver.CLIModule, "@")[0], false},
		{"runs a go test of its own", "\ngo test", false},
	}
	for _, c := range cases {
		if strings.Contains(ci, c.text) != c.want {
			t.Errorf(".ci/run: %s is %v, want %v", c.what, !c.want, c.want)
		}
	}
}
