package cli

import (
	"testing"

	"github.com/keelrun/keel/internal/devkit/testenv"
)

// TestMain builds Keel's Temporal server before the tests that start dev servers run, so none of
// them spends its own time on the build.
func TestMain(m *testing.M) {
	testenv.Main(m, "cli", testenv.SomeTests, testenv.PrebuildServer)
}
