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

// concurrencyPairs is how many times the 100-session level runs Keel then the floor, so the
// ratio is measured side by side more than once in a run.
const concurrencyPairs = 2

// loadResult is one load level's outcome.
type loadResult struct {
	turns      int
	wall       time.Duration
	gaps       []time.Duration
	rss        int64
	goroutines int
	// workerCPU and serverCPU are the CPU time this process (the worker) and the dev server used.
	workerCPU, serverCPU time.Duration
}

func (r loadResult) perSecond() float64 { return float64(r.turns) / r.wall.Seconds() }

// cpuPerTurn is the worker's and the server's CPU time per turn.
func (r loadResult) cpuPerTurn() (worker, server time.Duration) {
	return r.workerCPU / time.Duration(r.turns), r.serverCPU / time.Duration(r.turns)
}

// add sums two results of the same level (for the ratio over several pairs).
func (r loadResult) add(o loadResult) loadResult {
	return loadResult{turns: r.turns + o.turns, wall: r.wall + o.wall, workerCPU: r.workerCPU + o.workerCPU, serverCPU: r.serverCPU + o.serverCPU}
}

// BenchmarkConcurrency runs 10 and 100 concurrent 4-turn sessions and 500 concurrent 2-turn
// sessions on one in-process worker, and the floor at 100 (parents with 4 children of two no-op
// activities each) alternating with Keel's 100, on Keel's dev server configuration as it ships
// (devserver.DynamicConfig). Besides turns per second it reports the CPU time per turn of the
// worker and of the server: the server is the bottleneck, so CPU per turn explains throughput.
func BenchmarkConcurrency(b *testing.B) {
	ctx := benchContext(b)
	const name = "shipped"
	for i := 0; i < b.N; i++ {
		srv := startServer(b, ctx, KeelDynamicConfig(nil))
		rig := startRig(b, srv, RigOptions{TaskQueue: "bench-concurrency", ToolTurns: concurrencyToolTurns})
		if _, _, err := rig.RunSession(ctx, uniq("warm"), uniq("warm")); err != nil {
			b.Fatal(err)
		}
		// 500 sessions of 4 turns take over 3 minutes on a loaded 2-core machine; the 500 level
		// runs 2-turn sessions (one list_dir, then the answer) on a second worker of its own.
		short := startRig(b, srv, RigOptions{TaskQueue: "bench-concurrency-short", ToolTurns: 1})
		report(b, name, "keel-10", runLoad(b, ctx, rig, 10, false))
		// Keel and the floor at 100 alternate, so load on the shared machine lands on both.
		var keel100, floor100 loadResult
		for range concurrencyPairs {
			k := runLoad(b, ctx, rig, 100, false)
			report(b, name, "keel-100", k)
			f := runLoad(b, ctx, rig, 100, true)
			report(b, name, "floor-100", f)
			b.Logf("this pair's keel/floor turns per second at 100 = %.2f", k.perSecond()/f.perSecond())
			keel100, floor100 = keel100.add(k), floor100.add(f)
		}
		report(b, name, "keel-500", runLoad(b, ctx, short, 500, false))
		ratio := keel100.perSecond() / floor100.perSecond()
		kw, ks := keel100.cpuPerTurn()
		fw, fs := floor100.cpuPerTurn()
		b.ReportMetric(ratio, "keel/floor-turns/s@100")
		b.ReportMetric(float64(kw+ks)/float64(fw+fs), "keel/floor-cpu/turn@100")
		b.Logf("keel/floor turns per second at 100 over %d pairs = %.2f; CPU per turn keel %.1f ms (worker %.1f + server %.1f), floor %.1f ms (worker %.1f + server %.1f), keel/floor %.2f",
			concurrencyPairs, ratio, Ms(kw+ks), Ms(kw), Ms(ks), Ms(fw+fs), Ms(fw), Ms(fs), float64(kw+ks)/float64(fw+fs))
	}
	b.ReportMetric(0, "ns/op")
}

func report(b *testing.B, cfg, name string, r loadResult) {
	p50, p99 := Percentile(r.gaps, 0.5), Percentile(r.gaps, 0.99)
	b.ReportMetric(r.perSecond(), cfg+"-"+name+"-turns/s")
	b.ReportMetric(Ms(p50), cfg+"-"+name+"-p50-ms")
	b.ReportMetric(Ms(p99), cfg+"-"+name+"-p99-ms")
	w, s := r.cpuPerTurn()
	b.Logf("%s %-10s %5d turns in %6.2fs = %6.1f turns/s; turn p50 %6.1f ms p99 %7.1f ms (%d samples); peak RSS %.0f MiB; peak goroutines %d; CPU per turn worker %.1f ms, server %.1f ms",
		cfg, name, r.turns, r.wall.Seconds(), r.perSecond(), Ms(p50), Ms(p99), len(r.gaps), MiB(r.rss), r.goroutines, Ms(w), Ms(s))
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
	cpu0, srv0, err := CPUTimes()
	if err != nil {
		b.Fatal(err)
	}
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
	cpu1, srv1, err := CPUTimes()
	if err != nil {
		b.Fatal(err)
	}
	rss, g := peaks.Stop()
	if got := stamps.Calls(); got != n*turns {
		b.Fatalf("recorded %d turns, want %d", got, n*turns)
	}
	return loadResult{turns: n * turns, wall: wall, gaps: stamps.Gaps(), rss: rss, goroutines: g, workerCPU: cpu1 - cpu0, serverCPU: srv1 - srv0}
}
