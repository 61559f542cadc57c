package deploy

import (
	"context"
	"testing"

	"github.com/keelrun/keel/internal/devkit/testenv"
)

// TestMain installs, before any test's clock starts, the OCI runtime the seccomp profile's test
// runs containers with (Debian's runc: the runtime Docker itself hands containers to) and the
// AppArmor parser that compiles the AppArmor profiles.
func TestMain(m *testing.M) {
	testenv.Main(m, "deploy", testenv.SomeTests, func(ctx context.Context) (func(), error) {
		if err := testenv.EnsureCommand(ctx, "runc", "runc"); err != nil {
			return nil, err
		}
		return nil, testenv.EnsureCommand(ctx, "apparmor_parser", "apparmor")
	})
}
