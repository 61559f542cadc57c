package metrics_test

import (
	"testing"

	"github.com/keelrun/keel/internal/devkit/testenv"
)

// TestMain builds Keel's Temporal server before the test that starts a dev server runs, so it does
// not spend its own time on the build.
func TestMain(m *testing.M) {
	testenv.Main(m, "metrics", testenv.SomeTests, testenv.PrebuildServer)
}
