package bench

import (
	"context"
	"flag"
	"testing"

	"github.com/keelrun/keel/internal/devkit/testenv"
)

// TestMain builds Keel's Temporal server before the benchmarks run, so none of them spends its
// benchTimeout on the build. Only the benchmarks start servers: a run without -bench builds
// nothing.
func TestMain(m *testing.M) {
	testenv.Main(m, "bench", testenv.SomeTests, func(ctx context.Context) (func(), error) {
		if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
			return nil, nil
		}
		return testenv.PrebuildServer(ctx)
	})
}
