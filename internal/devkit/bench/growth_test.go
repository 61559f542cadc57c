package bench

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/proto"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/store"
)

// growthToolTurns is the long session's length: 1,000 list_dir turns, then the answer.
const growthToolTurns = 1000

// growthBuckets are the last turns of the buckets the growth report averages over.
var growthBuckets = []int{10, 100, 250, 500, 750, 1001}

// Largest history a run may reach: Temporal suggests continue-as-new at 4 MiB or 4,096 events.
const (
	maxRunBytes  = 4 << 20
	maxRunEvents = 4096
)

// timedStore times the transcript store calls of the CallModel activity: their cost grows with
// the transcript unless the worker's cache holds it, the orchestration's must not.
type timedStore struct {
	store.Store
	mu      sync.Mutex
	loads   []time.Duration
	appends []time.Duration
}

func (s *timedStore) Load(ctx context.Context, head string) ([]contract.Message, error) {
	start := time.Now()
	msgs, err := s.Store.Load(ctx, head)
	s.mu.Lock()
	s.loads = append(s.loads, time.Since(start))
	s.mu.Unlock()
	return msgs, err
}

func (s *timedStore) Append(ctx context.Context, parent string, msgs []contract.Message) (string, error) {
	start := time.Now()
	head, err := s.Store.Append(ctx, parent, msgs)
	s.mu.Lock()
	s.appends = append(s.appends, time.Since(start))
	s.mu.Unlock()
	return head, err
}

// perLoad is the store's total time divided by its loads: one load per model call, so this is
// the store's share of a CallModel.
func (s *timedStore) perLoad() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.loads) == 0 {
		return 0
	}
	var total time.Duration
	for _, d := range append(slices.Clone(s.loads), s.appends...) {
		total += d
	}
	return total / time.Duration(len(s.loads))
}

// memAt is the memory seen when a turn's model call started.
type memAt struct {
	rss, heap int64
}

// BenchmarkCostGrowth runs one session of 1,000 tool turns and reports, by turn bucket, the time
// per turn, the transcript load inside it, the history bytes per turn (session runs and turn
// children) and memory, on Keel's dev server configuration as it ships. The session continues as
// new before its run reaches 4,096 events; every run's history must stay under 4 MiB and 4,096
// events.
func BenchmarkCostGrowth(b *testing.B) {
	ctx := benchContext(b)
	srv := startServer(b, ctx, KeelDynamicConfig(nil))
	var ts *timedStore
	rig := startRig(b, srv, RigOptions{TaskQueue: "bench-growth", ToolTurns: growthToolTurns, Store: func(s store.Store) store.Store {
		ts = &timedStore{Store: s}
		return ts
	}})
	mem := map[int]memAt{}
	var memMu sync.Mutex
	rig.Model.OnCall = func(task string, turn int, at time.Time) {
		rig.Stamps.Record(task, turn, at)
		for _, t := range growthBuckets {
			if turn == t || turn == 1 {
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				rss, _ := RSS()
				memMu.Lock()
				mem[turn] = memAt{rss: rss, heap: int64(ms.HeapAlloc)}
				memMu.Unlock()
			}
		}
	}
	for i := 0; i < b.N; i++ {
		rig.Stamps.Reset()
		id := uniq("growth")
		sum, wall, err := rig.RunSession(ctx, id, "grow")
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("session %s: %d turns in %s (%.1f ms/turn)", id, sum.Turns, wall.Round(time.Millisecond), Ms(wall)/float64(sum.Turns))
		turnTimes := perTurn(rig.Stamps, "grow")
		reportGrowth(b, ctx, rig, id, turnTimes, ts.loads, mem)
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.Logf("live heap after the session, after GC: %.1f MiB", MiB(int64(ms.HeapAlloc)))
		b.ReportMetric(MiB(int64(ms.HeapAlloc)), "end-live-heap-MiB")
	}
	b.ReportMetric(0, "ns/op")
}

// perTurn returns, for turn t (1-based, except the last), the time from its model call to the next.
func perTurn(s *Stamps, task string) map[int]time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int]time.Duration{}
	m := s.by[task]
	for t, at := range m {
		if next, ok := m[t+1]; ok {
			out[t] = next.Sub(at)
		}
	}
	return out
}

// bucketOf is the index of the bucket that holds turn t.
func bucketOf(t int) int {
	for i, end := range growthBuckets {
		if t <= end {
			return i
		}
	}
	return len(growthBuckets) - 1
}

func reportGrowth(b *testing.B, ctx context.Context, rig *Rig, id string, turnTimes map[int]time.Duration, loads []time.Duration, mem map[int]memAt) {
	runs, err := Runs(ctx, rig.Client, id)
	if err != nil {
		b.Fatal(err)
	}
	nb := len(growthBuckets)
	parentBytes, parentTurns := make([]int, nb), make([]int, nb)
	largestBytes, largestEvents := 0, 0
	sessionBytesOf := map[int]int{}
	for i, r := range runs {
		size := Bytes(r.Events)
		largestBytes, largestEvents = max(largestBytes, size), max(largestEvents, len(r.Events))
		byTurn := parentBytesByTurn(r.Events)
		maps.Copy(sessionBytesOf, byTurn)
		first, last := 0, 0
		for t, n := range byTurn {
			if first == 0 || t < first {
				first = t
			}
			last = max(last, t)
			parentBytes[bucketOf(t)] += n
			parentTurns[bucketOf(t)]++
		}
		b.Logf("run %d: turns %d-%d, %d events, %d bytes (%.2f MiB)", i+1, first, last, len(r.Events), size, MiB(int64(size)))
	}
	b.ReportMetric(float64(largestBytes), "largest-run-bytes")
	b.ReportMetric(float64(largestEvents), "largest-run-events")
	b.ReportMetric(float64(len(runs)), "runs")

	childBytes, childEvents, childN := make([]int, nb), make([]int, nb), make([]int, nb)
	for t := 1; t <= growthToolTurns+1; t++ {
		if t > 10 && t%10 != 0 && t != growthToolTurns+1 {
			continue
		}
		evs, err := History(ctx, rig.Client, contract.TurnWorkflowID(id, t), "")
		if err != nil {
			b.Fatal(err)
		}
		childBytes[bucketOf(t)] += Bytes(evs)
		childEvents[bucketOf(t)] += len(evs)
		childN[bucketOf(t)]++
	}
	// A single turn's history, session share plus its child, at turn 10 and turn 1,000.
	for _, t := range []int{10, growthToolTurns} {
		evs, err := History(ctx, rig.Client, contract.TurnWorkflowID(id, t), "")
		if err != nil {
			b.Fatal(err)
		}
		total := sessionBytesOf[t] + Bytes(evs)
		b.Logf("turn %d: %d B of session history + %d B of turn child = %d B", t, sessionBytesOf[t], Bytes(evs), total)
		b.ReportMetric(float64(total), fmt.Sprintf("turn%d-history-B", t))
	}
	times, loadTimes := make([][]time.Duration, nb), make([][]time.Duration, nb)
	for t, d := range turnTimes {
		times[bucketOf(t)] = append(times[bucketOf(t)], d)
	}
	for i, d := range loads {
		loadTimes[bucketOf(i+1)] = append(loadTimes[bucketOf(i+1)], d)
	}
	b.Logf("%-11s %11s %11s %12s %14s %13s %9s %9s", "turns", "p50 ms/turn", "load p50 ms", "session B/turn", "turn child B", "child events", "RSS MiB", "heap MiB")
	lo := 1
	for i, end := range growthBuckets {
		m := mem[end]
		b.Logf("%-11s %11.1f %11.2f %12d %14d %13d %9.0f %9.1f", fmt.Sprintf("%d-%d", lo, end),
			Ms(Percentile(times[i], 0.5)), Ms(Percentile(loadTimes[i], 0.5)),
			div(parentBytes[i], parentTurns[i]), div(childBytes[i], childN[i]), div(childEvents[i], childN[i]), MiB(m.rss), MiB(m.heap))
		lo = end + 1
	}
	if largestBytes >= maxRunBytes || largestEvents >= maxRunEvents {
		b.Errorf("largest run has %d bytes and %d events; continue-as-new should keep it under %d bytes and %d events", largestBytes, largestEvents, maxRunBytes, maxRunEvents)
	}
}

func div(a, n int) int {
	if n == 0 {
		return 0
	}
	return a / n
}

// parentBytesByTurn attributes a session run's events to turns: each event belongs to the turn
// whose child was initiated last before it (events before the first child go to that child's turn).
func parentBytesByTurn(events []*historypb.HistoryEvent) map[int]int {
	out := map[int]int{}
	turn, pending := 0, 0
	for _, e := range events {
		if e.GetEventType() == enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED {
			wid := e.GetStartChildWorkflowExecutionInitiatedEventAttributes().GetWorkflowId()
			if i := strings.LastIndex(wid, "/turn-"); i >= 0 {
				if t, err := strconv.Atoi(wid[i+len("/turn-"):]); err == nil {
					turn = t
				}
			}
			if pending > 0 {
				out[turn] += pending
				pending = 0
			}
		}
		n := proto.Size(e)
		if turn == 0 {
			pending += n
			continue
		}
		out[turn] += n
	}
	return out
}
