package deploy

import (
	"context"
	"testing"

	"github.com/keelrun/keel/internal/devkit/testenv"
)

// TestMain installs the OCI runtime the seccomp profile's test runs containers with (Debian's
// runc: the runtime Docker itself hands containers to) before any test's clock starts.
func TestMain(m *testing.M) {
	testenv.Main(m, "deploy", testenv.SomeTests, func(ctx context.Context) (func(), error) {
		return nil, testenv.EnsureCommand(ctx, "runc", "runc")
	})
}
