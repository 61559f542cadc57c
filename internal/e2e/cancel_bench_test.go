package e2e

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
)

// BenchmarkCancelToReaped measures the time from SIGINT to the starter until the running command's
// process is gone, over b.N demo runs with a long command. Run it with -benchtime 20x to get the
// p50/p99 docs/benchmarks.md reports.
func BenchmarkCancelToReaped(b *testing.B) {
	var times []time.Duration
	for i := 0; i < b.N; i++ {
		times = append(times, cancelOnce(b))
	}
	slices.Sort(times)
	p := func(q float64) float64 {
		return float64(times[int(q*float64(len(times)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(p(0.5), "p50-ms")
	b.ReportMetric(p(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
}

func cancelOnce(b *testing.B) time.Duration {
	b.Helper()
	l := startLive(b, nil, "demo", "--inject", "long_command", "--output", "jsonl")
	ws := strings.TrimPrefix(l.waitEvent(30*time.Second, "workspace", func(e contract.Event) bool {
		return strings.HasPrefix(e.Text, "workspace: ")
	}).Text, "workspace: ")
	if !waitFor(30*time.Second, func() bool { return len(processesIn(ws, "sleep", "15")) == 1 }) {
		b.Fatal("the sleep command never ran")
	}
	start := time.Now()
	if err := l.cmd.Process.Signal(os.Interrupt); err != nil {
		b.Fatal(err)
	}
	if !waitFor(5*time.Second, func() bool { return len(processesIn(ws, "sleep", "15")) == 0 }) {
		b.Fatal("the command outlived the cancel by 5 s")
	}
	d := time.Since(start)
	if r := l.finish(); r.Code != 130 {
		b.Fatalf("exit %d, want 130", r.Code)
	}
	return d
}
