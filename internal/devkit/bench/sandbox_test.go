package bench

import (
	"io"
	"os/exec"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/tools/sandbox"
)

// BenchmarkSandboxTrue measures what the sandbox costs per command as the worker pays it: this
// test binary links the worker's packages, whose initialisation every sandbox's init goes through.
// It reports the p50 and p99 of `true` outside and inside, in milliseconds.
//
//	go test ./internal/devkit/bench -run '^$' -bench SandboxTrue -benchtime 300x
func BenchmarkSandboxTrue(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("the sandbox needs Linux")
	}
	dir := b.TempDir()
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp"}
	b.Run("outside", func(b *testing.B) { percentiles(b, func() error { return exec.Command("true").Run() }) })
	b.Run("inside", func(b *testing.B) {
		percentiles(b, func() error {
			_, err := sandbox.Run(sandbox.Config{}, dir, []string{"true"}, env, io.Discard)
			return err
		})
	})
}

// percentiles runs f b.N times and reports the p50 and p99 of its duration.
func percentiles(b *testing.B, f func() error) {
	took := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	ms := func(q float64) float64 { return float64(took[int(q*float64(len(took)-1))]) / float64(time.Millisecond) }
	b.ReportMetric(ms(0.50), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
}
