//go:build linux

package sandbox

import (
	"os/exec"
	"slices"
	"testing"
	"time"
)

// BenchmarkTrue measures what the sandbox costs per command: `true` started and waited for
// outside and inside, reported as p50 and p99 in milliseconds next to the mean.
//
//	go test ./internal/tools/sandbox -run '^$' -bench True -benchtime 200x
func BenchmarkTrue(b *testing.B) {
	dir := b.TempDir()
	cases := []struct {
		name string
		run  func() error
	}{
		{"outside", func() error { return exec.Command("true").Run() }},
		{"inside", func() error {
			c, err := Command(Config{}, dir, []string{"true"}, testEnv)
			if err != nil {
				return err
			}
			err = c.Exec.Start()
			c.Started()
			if err != nil {
				return err
			}
			if err := c.Exec.Wait(); err != nil {
				return err
			}
			if rep, ok := c.Report(); !ok || rep.Code != 0 {
				b.Fatalf("report %+v", rep)
			}
			return nil
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			took := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				if err := c.run(); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			ms := func(q float64) float64 { return float64(took[int(q*float64(len(took)-1))]) / float64(time.Millisecond) }
			b.ReportMetric(ms(0.50), "p50-ms")
			b.ReportMetric(ms(0.99), "p99-ms")
		})
	}
}
