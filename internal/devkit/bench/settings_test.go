package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
)

// settingsToolTurns is the session length of each settings probe (plus the answer).
const settingsToolTurns = 6

// settingsRounds is how many times every setting is probed, round-robin over all servers, so
// background load lands on every setting alike.
const settingsRounds = 3

// settingResult gathers one setting's probes.
type settingResult struct {
	keel, floor, wftWait []time.Duration
}

// BenchmarkSettings starts one dev server per setting, all at once, then probes them round-robin:
// a Keel session and a floor parent of the same length, and from the floor's child histories the
// wait between a workflow task being scheduled and started.
func BenchmarkSettings(b *testing.B) {
	ctx := benchContext(b)
	settings := Settings()
	rigs := make([]*Rig, len(settings))
	var wg sync.WaitGroup
	errs := make([]error, len(settings))
	servers := make([]*Server, len(settings))
	for i, s := range settings {
		wg.Go(func() { servers[i], errs[i] = StartServer(ctx, s.Dynamic) })
	}
	wg.Wait()
	for i, s := range settings {
		if errs[i] != nil {
			b.Fatal(errs[i])
		}
		b.Cleanup(func() { _ = servers[i].Stop() })
		rigs[i] = startRig(b, servers[i], RigOptions{TaskQueue: fmt.Sprintf("bench-settings-%d", i), ToolTurns: settingsToolTurns, Worker: s.Worker, EagerStart: s.EagerStart})
		if _, _, err := rigs[i].RunSession(ctx, uniq("warm"), uniq("warm")); err != nil {
			b.Fatalf("%s: %v", s.Name, err)
		}
	}
	turns := settingsToolTurns + 1
	res := make([]settingResult, len(settings))
	for i := 0; i < b.N; i++ {
		for range settingsRounds {
			for j, r := range rigs {
				_, d, err := r.RunSession(ctx, uniq("keel"), uniq("task"))
				if err != nil {
					b.Fatalf("%s: %v", settings[j].Name, err)
				}
				res[j].keel = append(res[j].keel, d/time.Duration(turns))
				fid := uniq("floor")
				fd, err := r.RunFloor(ctx, fid, turns)
				if err != nil {
					b.Fatalf("%s: %v", settings[j].Name, err)
				}
				res[j].floor = append(res[j].floor, fd/time.Duration(turns))
				w, err := workflowTaskWaits(ctx, r, fid, turns)
				if err != nil {
					b.Fatal(err)
				}
				res[j].wftWait = append(res[j].wftWait, w...)
			}
		}
	}
	var base time.Duration
	for j, s := range settings {
		if s.Shipped {
			base = Percentile(res[j].keel, 0.5)
		}
	}
	b.Logf("%-42s %12s %12s %10s %14s %10s", "setting", "keel ms/turn", "floor ms/turn", "keel/floor", "WFT wait p50", "vs shipped")
	for j, s := range settings {
		k, f, w := Percentile(res[j].keel, 0.5), Percentile(res[j].floor, 0.5), Percentile(res[j].wftWait, 0.5)
		b.Logf("%-42s %12.1f %12.1f %10.2f %14.1f %9.2fx", s.Name, Ms(k), Ms(f), float64(k)/float64(f), Ms(w), float64(k)/float64(base))
	}
	b.ReportMetric(0, "ns/op")
}

// workflowTaskWaits reads the floor parent's children and returns, for every workflow task, the
// time between WorkflowTaskScheduled and WorkflowTaskStarted: the dispatch wait.
func workflowTaskWaits(ctx context.Context, r *Rig, parentID string, turns int) ([]time.Duration, error) {
	var out []time.Duration
	for t := 1; t <= turns; t++ {
		evs, err := History(ctx, r.Client, fmt.Sprintf("%s/turn-%d", parentID, t), "")
		if err != nil {
			return nil, err
		}
		var scheduled time.Time
		for _, e := range evs {
			switch e.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
				scheduled = e.GetEventTime().AsTime()
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
				out = append(out, e.GetEventTime().AsTime().Sub(scheduled))
			}
		}
	}
	return out, nil
}
