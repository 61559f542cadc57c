//go:build linux

package sandbox

import (
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkTrue measures what the sandbox costs per command, `true` outside and inside, as p50
// and p99 in milliseconds, with this small test binary as the init; BenchmarkSandboxTrue in
// internal/devkit/bench measures it with all the worker's packages linked. "inside a repository"
// runs it in a work directory that holds a git repository, whose control files every command
// binds read-only and looks at again afterwards.
//
//	go test ./internal/tools/sandbox -run '^$' -bench True -benchtime 300x
func BenchmarkTrue(b *testing.B) {
	dir := b.TempDir()
	b.Run("outside", func(b *testing.B) { percentiles(b, func() error { return exec.Command("true").Run() }) })
	b.Run("inside", func(b *testing.B) {
		percentiles(b, func() error {
			_, err := Run(Config{}, dir, []string{"true"}, testEnv, io.Discard)
			return err
		})
	})
	repo := b.TempDir()
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		b.Fatalf("git init: %v\n%s", err, out)
	}
	if repo, err := filepath.EvalSymlinks(repo); err == nil {
		b.Run("inside a repository", func(b *testing.B) {
			percentiles(b, func() error {
				_, err := Run(Config{}, repo, []string{"true"}, testEnv, io.Discard)
				return err
			})
		})
	}
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
