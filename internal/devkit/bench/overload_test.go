package bench

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/activities"
	"github.com/keelrun/keel/internal/app"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/contract"
)

// overloadToolTurns is each session's length in BenchmarkOverload: three run_command turns and the
// answer.
const overloadToolTurns = 3

// overloadLevels are the numbers of sessions BenchmarkOverload runs at once.
var overloadLevels = flag.String("overload.levels", "5,40", "BenchmarkOverload: sessions at once, per level")

// BenchmarkOverload runs N sessions at once on one worker built as the worker process builds it
// (app.Activities: the sandbox, snapshots in a state directory, the transcript store and its
// cache; app.NewWorker), its model replaced by the scripted one: each turn streams for 3 s and
// asks run_command to `sleep 2`. It reports the median time between one turn's model call and
// the next (5 s of model and tool, plus what orchestration adds), the worker's and the server's
// CPU per turn, the server's actions per turn and the worker's RPCs per turn by method.
func BenchmarkOverload(b *testing.B) {
	levels := parseLevels(b, "overload.levels", *overloadLevels)
	ctx := benchContext(b)
	srv := startServer(b, ctx, KeelDynamicConfig(nil))
	var rpcs RPCs
	w := startOverloadWorker(b, ctx, srv, &rpcs)
	for i := 0; i < b.N; i++ {
		for _, n := range levels {
			runOverload(b, ctx, srv, w, &rpcs, n)
		}
	}
	b.ReportMetric(0, "ns/op")
}

// overloadWorker is the in-process worker BenchmarkOverload measures.
type overloadWorker struct {
	client  client.Client
	stamps  *Stamps
	queue   string
	workdir string
}

func startOverloadWorker(b *testing.B, ctx context.Context, srv *Server, rpcs *RPCs) *overloadWorker {
	b.Helper()
	dir := b.TempDir()
	queue := "bench-overload"
	cfg, err := config.Load("", nil, map[string]any{
		config.GatewayFake:       true,
		config.TemporalAddress:   srv.Address(),
		config.TemporalTaskQueue: queue,
		config.DevStateDir:       filepath.Join(dir, "state"),
	})
	if err != nil {
		b.Fatal(err)
	}
	acts, closeDeps, err := app.Activities(ctx, cfg, "")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(closeDeps)
	stamps := NewStamps()
	acts.Models = activities.Solo(&Scripted{ToolTurns: overloadToolTurns, OnCall: stamps.Record, StreamFor: 3 * time.Second, Command: "sleep 2"})
	c, err := dialRig(ctx, srv.Address(), acts.Store, rpcs)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	w := app.NewWorker(c, cfg, acts)
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(w.Stop)
	workdir := filepath.Join(dir, "work")
	if err := seedWorkdir(workdir); err != nil {
		b.Fatal(err)
	}
	return &overloadWorker{client: c, stamps: stamps, queue: queue, workdir: workdir}
}

// runOverload starts n sessions at once, each in a work directory of its own, waits for all and
// reports.
func runOverload(b *testing.B, ctx context.Context, srv *Server, w *overloadWorker, rpcs *RPCs, n int) {
	b.Helper()
	w.stamps.Reset()
	before, err := SettledActions(ctx, srv.MetricsURL())
	if err != nil {
		b.Fatal(err)
	}
	rpcs.Take()
	cpu0, srv0, err := CPUTimes()
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	prefix := uniq("overload")
	runs := make([]client.WorkflowRun, n)
	for i := range runs {
		dir := filepath.Join(w.workdir, fmt.Sprintf("%s-%d", prefix, i))
		if err := seedWorkdir(dir); err != nil {
			b.Fatal(err)
		}
		in := contract.SessionInput{Task: fmt.Sprintf("%s task %d", prefix, i), Limits: contract.Limits{MaxTurns: overloadToolTurns + 5}}
		in.Workdir = dir
		runs[i], err = w.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("%s-%d", prefix, i), TaskQueue: w.queue}, contract.SessionWorkflow, in)
		if err != nil {
			b.Fatal(err)
		}
	}
	for _, run := range runs {
		if _, err := WaitSession(ctx, run, overloadToolTurns); err != nil {
			b.Fatal(err)
		}
	}
	wall := time.Since(start)
	cpu1, srv1, err := CPUTimes()
	if err != nil {
		b.Fatal(err)
	}
	calls := rpcs.Take()
	after, err := SettledActions(ctx, srv.MetricsURL())
	if err != nil {
		b.Fatal(err)
	}
	turns := n * (overloadToolTurns + 1)
	if got := w.stamps.Calls(); got != turns {
		b.Fatalf("recorded %d model calls, want %d", got, turns)
	}
	gaps := w.stamps.Gaps()
	per := func(d time.Duration) float64 { return Ms(d / time.Duration(turns)) }
	var byMethod []string
	for _, m := range slices.Sorted(maps.Keys(calls)) {
		byMethod = append(byMethod, fmt.Sprintf("%s=%.2f (p50 %.1f ms)", m, float64(len(calls[m]))/float64(turns), Ms(Percentile(calls[m], 0.5))))
	}
	load, _ := os.ReadFile("/proc/loadavg")
	name := fmt.Sprintf("keel-%d", n)
	b.ReportMetric(Ms(Percentile(gaps, 0.5)), name+"-p50-ms")
	b.ReportMetric(per(srv1-srv0), name+"-server-cpu-ms/turn")
	b.ReportMetric(after.Sub(before).Total/float64(turns), name+"-actions/turn")
	b.Logf("%s: %d turns in %.1fs; step p50 %.0f ms p90 %.0f ms max %.0f ms; CPU per turn worker %.1f ms, server %.1f ms; actions per turn %.2f; RPCs per turn %s; load %s",
		name, turns, wall.Seconds(), Ms(Percentile(gaps, 0.5)), Ms(Percentile(gaps, 0.9)), Ms(Percentile(gaps, 1)),
		per(cpu1-cpu0), per(srv1-srv0), after.Sub(before).Total/float64(turns), strings.Join(byMethod, " "), strings.TrimSpace(string(load)))
	logTurnPhases(b, ctx, w.client, name, runs)
}

// logTurnPhases reads every session's and turn's history and logs, as medians over the turns,
// where a turn's time went: workflow tasks waiting for a worker and running, each activity
// waiting for a worker and running, and the session's time between one turn's end and the next
// one's start.
func logTurnPhases(b *testing.B, ctx context.Context, c client.Client, name string, runs []client.WorkflowRun) {
	b.Helper()
	var wftWait, wftRun, between, sessWait []time.Duration
	actWait := map[string][]time.Duration{}
	actRun := map[string][]time.Duration{}
	for _, run := range runs {
		evs, err := History(ctx, c, run.GetID(), run.GetRunID())
		if err != nil {
			b.Fatal(err)
		}
		between = append(between, BetweenChildren(evs)...)
		sessWait = append(sessWait, ChildPhases(evs).WFTWait)
		for _, e := range evs {
			a := e.GetStartChildWorkflowExecutionInitiatedEventAttributes()
			if a == nil {
				continue
			}
			child, err := History(ctx, c, a.GetWorkflowId(), "")
			if err != nil {
				b.Fatal(err)
			}
			p := ChildPhases(child)
			wftWait, wftRun = append(wftWait, p.WFTWait), append(wftRun, p.WFTRun)
			scheduled := map[int64]time.Time{}
			types := map[int64]string{}
			started := map[int64]time.Time{}
			for _, ce := range child {
				at := ce.GetEventTime().AsTime()
				if sa := ce.GetActivityTaskScheduledEventAttributes(); sa != nil {
					scheduled[ce.GetEventId()], types[ce.GetEventId()] = at, sa.GetActivityType().GetName()
				}
				if sa := ce.GetActivityTaskStartedEventAttributes(); sa != nil {
					id := sa.GetScheduledEventId()
					started[id] = at
					actWait[types[id]] = append(actWait[types[id]], at.Sub(scheduled[id]))
				}
				if ca := ce.GetActivityTaskCompletedEventAttributes(); ca != nil {
					id := ca.GetScheduledEventId()
					actRun[types[id]] = append(actRun[types[id]], at.Sub(started[id]))
				}
			}
		}
	}
	med := func(ds []time.Duration) float64 { return Ms(Percentile(ds, 0.5)) }
	var acts []string
	for _, t := range slices.Sorted(maps.Keys(actRun)) {
		acts = append(acts, fmt.Sprintf("%s wait %.0f run %.0f", t, med(actWait[t]), med(actRun[t])))
	}
	b.Logf("%s phases (median ms): turn's workflow tasks wait %.0f run %.0f; %s; session between turns %.0f; session's workflow tasks wait %.0f in all",
		name, med(wftWait), med(wftRun), strings.Join(acts, "; "), med(between), med(sessWait))
}
