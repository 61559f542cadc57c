package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
)

// BenchmarkCancelToReaped measures the time from a cancel until the running command's process is
// gone, over b.N demo runs with a long command, for every way a person stops a session (cancelWays:
// SIGINT to the starter, as Esc and Ctrl+C send it; `starter cancel`; the cancel signal the Slack bot
// sends; the Web UI's native cancellation). Run it with -benchtime 20x to get the p50/p99
// docs/benchmarks.md reports.
func BenchmarkCancelToReaped(b *testing.B) {
	for _, way := range cancelWays {
		b.Run(strings.ReplaceAll(way.name, " ", "_"), func(b *testing.B) {
			var times []time.Duration
			for i := 0; i < b.N; i++ {
				times = append(times, cancelOnce(b, way.cancel))
			}
			reportCancelTimes(b, times)
		})
	}
}

func reportCancelTimes(b *testing.B, times []time.Duration) {
	slices.Sort(times)
	p := func(q float64) float64 {
		return float64(times[int(q*float64(len(times)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(p(0.5), "p50-ms")
	b.ReportMetric(p(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
	b.Logf("cancel to reaped over %d runs: p50 %.0f ms, p99 %.0f ms, max %.0f ms", len(times), p(0.5), p(0.99), float64(times[len(times)-1].Microseconds())/1000)
}

func cancelOnce(b *testing.B, cancel func(testing.TB, *liveRun, string)) time.Duration {
	b.Helper()
	l := startLive(b, nil, "demo", "--inject", "long_command", "--output", "jsonl")
	ws := strings.TrimPrefix(l.waitEvent(30*time.Second, "workspace", func(e contract.Event) bool {
		return strings.HasPrefix(e.Text, "workspace: ")
	}).Text, "workspace: ")
	wid := l.workflowID()
	if !waitFor(30*time.Second, func() bool { return len(processesIn(ws, "sleep", "15")) == 1 }) {
		b.Fatal("the sleep command never ran")
	}
	start := time.Now()
	cancel(b, l, wid)
	if !waitFor(5*time.Second, func() bool { return len(processesIn(ws, "sleep", "15")) == 0 }) {
		b.Fatal("the command outlived the cancel by 5 s")
	}
	d := time.Since(start)
	if r := l.finish(); r.Code != 130 {
		b.Fatalf("exit %d, want 130", r.Code)
	}
	return d
}
