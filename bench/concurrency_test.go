package bench

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
)

// concurrencyToolTurns is each concurrent session's length: 3 list_dir turns and the answer.
const concurrencyToolTurns = 3

// concurrencyPhase bounds one load level.
const concurrencyPhase = 4 * time.Minute

// loadResult is one load level's outcome.
type loadResult struct {
	turns      int
	wall       time.Duration
	gaps       []time.Duration
	rss        int64
	goroutines int
}

func (r loadResult) perSecond() float64 { return float64(r.turns) / r.wall.Seconds() }

// BenchmarkConcurrency runs 10 and 100 concurrent 4-turn sessions and 500 concurrent 2-turn
// sessions on one in-process worker,
// then the floor at 100 (parents with 4 children of two no-op activities each), on Keel's dev
// server configuration as it ships (devserver.DynamicConfig).
func BenchmarkConcurrency(b *testing.B) {
	ctx := benchContext(b)
	for i := 0; i < b.N; i++ {
		for _, c := range []struct {
			name string
			dyn  map[string]string
		}{{"shipped", KeelDynamicConfig(nil)}} {
			srv := startServer(b, ctx, c.dyn)
			rig := startRig(b, srv, RigOptions{TaskQueue: "bench-concurrency-" + c.name, ToolTurns: concurrencyToolTurns})
			if _, _, err := rig.RunSession(ctx, uniq("warm"), uniq("warm")); err != nil {
				b.Fatal(err)
			}
			// 500 sessions of 4 turns take over 3 minutes on a loaded 2-core machine; the 500 level
			// runs 2-turn sessions (one list_dir, then the answer) on a second worker of its own.
			short := startRig(b, srv, RigOptions{TaskQueue: "bench-concurrency-short-" + c.name, ToolTurns: 1})
			var at100 loadResult
			for _, n := range []int{10, 100, 500} {
				lr := rig
				if n == 500 {
					lr = short
				}
				r := runLoad(b, ctx, lr, n, false)
				if n == 100 {
					at100 = r
				}
				report(b, c.name, fmt.Sprintf("keel-%d", n), r)
			}
			fl := runLoad(b, ctx, rig, 100, true)
			report(b, c.name, "floor-100", fl)
			b.ReportMetric(at100.perSecond()/fl.perSecond(), c.name+"-keel/floor-turns/s@100")
			b.Logf("%s: keel/floor turns per second at 100 = %.2f", c.name, at100.perSecond()/fl.perSecond())
		}
	}
	b.ReportMetric(0, "ns/op")
}

func report(b *testing.B, cfg, name string, r loadResult) {
	p50, p99 := Percentile(r.gaps, 0.5), Percentile(r.gaps, 0.99)
	b.ReportMetric(r.perSecond(), cfg+"-"+name+"-turns/s")
	b.ReportMetric(Ms(p50), cfg+"-"+name+"-p50-ms")
	b.ReportMetric(Ms(p99), cfg+"-"+name+"-p99-ms")
	b.Logf("%s %-10s %5d turns in %6.2fs = %6.1f turns/s; turn p50 %6.1f ms p99 %7.1f ms (%d samples); peak RSS %.0f MiB; peak goroutines %d",
		cfg, name, r.turns, r.wall.Seconds(), r.perSecond(), Ms(p50), Ms(p99), len(r.gaps), MiB(r.rss), r.goroutines)
}

// runLoad starts n sessions (or floor parents) at once, waits for all, and measures.
func runLoad(b *testing.B, ctx context.Context, rig *Rig, n int, floor bool) loadResult {
	ctx, cancel := context.WithTimeout(ctx, concurrencyPhase)
	defer cancel()
	stamps := rig.Stamps
	if floor {
		stamps = rig.FloorStamps
	}
	stamps.Reset()
	runtime.GC()
	peaks := WatchPeaks(100 * time.Millisecond)
	toolTurns := rig.opts.ToolTurns
	turns := toolTurns + 1
	start := time.Now()
	runs := make([]client.WorkflowRun, n)
	prefix := uniq("load")
	for i := range runs {
		var err error
		if floor {
			runs[i], err = rig.StartFloor(ctx, fmt.Sprintf("%s-floor-%d", prefix, i), turns)
		} else {
			runs[i], err = rig.StartSession(ctx, fmt.Sprintf("%s-keel-%d", prefix, i), fmt.Sprintf("%s task %d", prefix, i))
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	for _, run := range runs {
		var err error
		if floor {
			err = WaitFloor(ctx, run, turns)
		} else {
			_, err = WaitSession(ctx, run, toolTurns)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	wall := time.Since(start)
	rss, g := peaks.Stop()
	if got := stamps.Calls(); got != n*turns {
		b.Fatalf("recorded %d turns, want %d", got, n*turns)
	}
	return loadResult{turns: n * turns, wall: wall, gaps: stamps.Gaps(), rss: rss, goroutines: g}
}
