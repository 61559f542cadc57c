package bench

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/gateway"
	"github.com/keelrun/keel/internal/store"
	"github.com/keelrun/keel/internal/tools"
)

// overheadTurns is the length of the sessions BenchmarkTurnOverhead compares: 20 tool turns plus
// the final answer.
const overheadTurns = 20

// overheadRounds alternates Keel, floor and plain runs this many times, so background load hits
// all three alike.
const overheadRounds = 8

// BenchmarkTurnOverhead runs a 21-turn Keel session (20 list_dir turns and an answer) against
// the same loop as plain Go calls in this process and against Temporal's floor (a parent running
// 21 children with two no-op activities each), alternating every run, on Keel's dev server
// configuration as it ships (devserver.DynamicConfig). BenchmarkSettings compares configurations.
func BenchmarkTurnOverhead(b *testing.B) {
	ctx := benchContext(b)
	turns := overheadTurns + 1
	srv := startServer(b, ctx, KeelDynamicConfig(nil))
	var ts *timedStore
	var rpcs RPCs
	rig := startRig(b, srv, RigOptions{TaskQueue: "bench-overhead", ToolTurns: overheadTurns, RPCs: &rpcs, Store: func(s store.Store) store.Store {
		ts = &timedStore{Store: s}
		return ts
	}})
	// Warm up both paths (worker caches, task queue partitions), unmeasured.
	if _, _, err := rig.RunSession(ctx, uniq("warm-keel"), uniq("warm")); err != nil {
		b.Fatal(err)
	}
	if _, err := rig.RunFloor(ctx, uniq("warm-floor"), turns); err != nil {
		b.Fatal(err)
	}
	var keel, flr, plain []time.Duration
	var keelIDs, floorIDs []string
	keelRPCs, floorRPCs := map[string][]time.Duration{}, map[string][]time.Duration{}
	rpcs.Take()
	for i := 0; i < b.N; i++ {
		for range overheadRounds {
			kid, fid := uniq("keel"), uniq("floor")
			keelIDs, floorIDs = append(keelIDs, kid), append(floorIDs, fid)
			_, d, err := rig.RunSession(ctx, kid, uniq("task"))
			if err != nil {
				b.Fatal(err)
			}
			keel = append(keel, d/time.Duration(turns))
			mergeRPCs(keelRPCs, rpcs.Take())
			fd, err := rig.RunFloor(ctx, fid, turns)
			if err != nil {
				b.Fatal(err)
			}
			mergeRPCs(floorRPCs, rpcs.Take())
			flr = append(flr, fd/time.Duration(turns))
			plain = append(plain, plainLoop(b, ctx, rig.Workdir, overheadTurns)/time.Duration(turns))
		}
	}
	k, f, p := Percentile(keel, 0.5), Percentile(flr, 0.5), Percentile(plain, 0.5)
	b.ReportMetric(Ms(k), "keel-ms/turn")
	b.ReportMetric(Ms(f), "floor-ms/turn")
	b.ReportMetric(Ms(p)*1000, "plain-µs/turn")
	b.ReportMetric(float64(k)/float64(f), "keel/floor")
	b.ReportMetric(float64(k)/float64(p), "keel/plain")
	b.Logf("per turn (median of %d): keel %.1f ms, floor %.1f ms, plain %.3f ms; keel/floor %.2f, keel/plain %.0f; all keel %v; all floor %v; all plain %v",
		len(keel), Ms(k), Ms(f), Ms(p), float64(k)/float64(f), float64(k)/float64(p), keel, flr, plain)
	b.ReportMetric(0, "ns/op")
	logBreakdown(b, ctx, rig, keelIDs, floorIDs, turns)
	b.Logf("transcript store inside CallModel: %.2f ms per call (two appends and a load, through the cache)", Ms(ts.perLoad()))
	logRPCs(b, keelRPCs, floorRPCs, len(keelIDs)*turns)
	if testing.Verbose() {
		logTimelines(b, ctx, rig)
	}
}

// mergeRPCs adds the calls of one run to a total.
func mergeRPCs(into, from map[string][]time.Duration) {
	for m, ds := range from {
		into[m] = append(into[m], ds...)
	}
}

// logRPCs logs, per method, the calls a turn makes and their time, Keel beside the floor.
func logRPCs(b *testing.B, keel, floor map[string][]time.Duration, turns int) {
	methods := slices.Sorted(maps.Keys(keel))
	for m := range floor {
		if _, ok := keel[m]; !ok {
			methods = append(methods, m)
		}
	}
	b.Logf("%-34s %14s %14s %14s %14s %9s", "RPC (client and worker, not polls)", "keel calls/turn", "keel ms/turn", "floor calls/turn", "floor ms/turn", "p50 ms")
	for _, m := range methods {
		k, f := keel[m], floor[m]
		b.Logf("%-34s %14.2f %14.2f %14.2f %14.2f %9.2f", m, float64(len(k))/float64(turns), Ms(sum(k))/float64(turns),
			float64(len(f))/float64(turns), Ms(sum(f))/float64(turns), Ms(Percentile(append(slices.Clone(k), f...), 0.5)))
	}
}

func sum(ds []time.Duration) time.Duration {
	var t time.Duration
	for _, d := range ds {
		t += d
	}
	return t
}

// turnPhases gathers, over many turns, where each turn's time went.
type turnPhases struct {
	span, wftWait, wftRun, model, tool, between []time.Duration
	// childBytes and parentBytes are the encoded history of the turn children and the parents.
	childBytes, parentBytes, turns int
}

// add reads every turn child of parent and the parent's gaps between them.
func (tp *turnPhases) add(ctx context.Context, rig *Rig, parent string, childID func(int) string, turns int) error {
	for t := 1; t <= turns; t++ {
		evs, err := History(ctx, rig.Client, childID(t), "")
		if err != nil {
			return err
		}
		p := ChildPhases(evs)
		tp.childBytes += Bytes(evs)
		tp.turns++
		tp.span, tp.wftWait, tp.wftRun = append(tp.span, p.Span), append(tp.wftWait, p.WFTWait), append(tp.wftRun, p.WFTRun)
		if len(p.Activities) > 0 {
			tp.model = append(tp.model, p.Activities[0])
		}
		if len(p.Activities) > 1 {
			tp.tool = append(tp.tool, p.Activities[1])
		}
	}
	evs, err := History(ctx, rig.Client, parent, "")
	if err != nil {
		return err
	}
	tp.between = append(tp.between, BetweenChildren(evs)...)
	tp.parentBytes += Bytes(evs)
	return nil
}

// logBreakdown reads the measured sessions' and floors' histories and logs the median of each
// phase of a turn side by side, so the gap between Keel and the floor has a place.
func logBreakdown(b *testing.B, ctx context.Context, rig *Rig, keelIDs, floorIDs []string, turns int) {
	var k, f turnPhases
	for _, id := range keelIDs {
		if err := k.add(ctx, rig, id, func(t int) string { return contract.TurnWorkflowID(id, t) }, turns); err != nil {
			b.Fatal(err)
		}
	}
	for _, id := range floorIDs {
		if err := f.add(ctx, rig, id, func(t int) string { return fmt.Sprintf("%s/turn-%d", id, t) }, turns); err != nil {
			b.Fatal(err)
		}
	}
	rows := []struct {
		name string
		k, f []time.Duration
	}{
		{"turn child, first to last event", k.span, f.span},
		{"  workflow tasks waiting (dispatch)", k.wftWait, f.wftWait},
		{"  workflow tasks running (worker)", k.wftRun, f.wftRun},
		{"  CallModel / first no-op", k.model, f.model},
		{"  RunTool / second no-op", k.tool, f.tool},
		{"parent, child completed to next started", k.between, f.between},
	}
	b.Logf("%-42s %9s %9s %9s   (medians over %d turns)", "phase", "keel ms", "floor ms", "diff", len(k.span))
	for _, r := range rows {
		km, fm := Ms(Percentile(r.k, 0.5)), Ms(Percentile(r.f, 0.5))
		b.Logf("%-42s %9.1f %9.1f %+9.1f", r.name, km, fm, km-fm)
	}
	b.Logf("history bytes per turn: keel child %d + parent %d, floor child %d + parent %d",
		k.childBytes/k.turns, k.parentBytes/k.turns, f.childBytes/f.turns, f.parentBytes/f.turns)
}

// plainLoop is a Keel session without Temporal: the same scripted model, the same transcript
// store (file store behind the worker's cache) and the same list_dir tool, called directly,
// toolTurns+1 times.
func plainLoop(b *testing.B, ctx context.Context, workdir string, toolTurns int) time.Duration {
	fs, err := store.OpenFile(filepath.Join(b.TempDir(), "store"))
	if err != nil {
		b.Fatal(err)
	}
	st := store.WithCache(fs, TranscriptCache)
	model := &Scripted{ToolTurns: toolTurns}
	box := &tools.Box{Root: workdir}
	start := time.Now()
	head, err := st.Append(ctx, "", []contract.Message{{Role: contract.RoleUser, Content: "plain"}})
	if err != nil {
		b.Fatal(err)
	}
	for turn := 1; ; turn++ {
		msgs, err := st.Load(ctx, head)
		if err != nil {
			b.Fatal(err)
		}
		resp, err := model.Stream(ctx, gateway.Request{Messages: msgs}, func(string) {})
		if err != nil {
			b.Fatal(err)
		}
		batch := []contract.Message{resp.Message}
		for _, call := range resp.Message.ToolCalls {
			res := box.Run(ctx, call)
			batch = append(batch, contract.Message{Role: contract.RoleTool, ToolCallID: call.ID, Name: call.Name, Content: res.Content})
		}
		if head, err = st.Append(ctx, head, batch); err != nil {
			b.Fatal(err)
		}
		if len(resp.Message.ToolCalls) == 0 {
			if turn != toolTurns+1 {
				b.Fatalf("plain loop answered after %d turns, want %d", turn, toolTurns+1)
			}
			return time.Since(start)
		}
	}
}

// logTimelines prints where one Keel turn's and one floor turn's time goes.
func logTimelines(b *testing.B, ctx context.Context, rig *Rig) {
	id := uniq("timeline-keel")
	if _, _, err := rig.RunSession(ctx, id, uniq("timeline")); err != nil {
		b.Fatal(err)
	}
	for _, wid := range []string{contract.TurnWorkflowID(id, 2), id} {
		evs, err := History(ctx, rig.Client, wid, "")
		if err != nil {
			b.Fatal(err)
		}
		if wid == id && len(evs) > 40 {
			evs = evs[:40]
		}
		b.Logf("%s:\n%s", wid, Timeline(evs))
	}
	fid := uniq("timeline-floor")
	if _, err := rig.RunFloor(ctx, fid, 3); err != nil {
		b.Fatal(err)
	}
	evs, err := History(ctx, rig.Client, fid+"/turn-2", "")
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("floor turn 2:\n%s", Timeline(evs))
}
