package bench

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/devkit/testenv"
	"github.com/keelrun/keel/internal/tools/sandbox"
)

// BenchmarkTurnCost's flags, so a quick run is possible:
//
//	go test ./internal/devkit/bench -run '^$' -bench 'TurnCost/list_dir' -benchtime 1x -turncost.turns 20 -turncost.rounds 1 -v
var (
	turnCostTurns  = flag.Int("turncost.turns", 100, "BenchmarkTurnCost: tool turns of each session, before its answer")
	turnCostRounds = flag.Int("turncost.rounds", 3, "BenchmarkTurnCost: Keel and loop sessions, alternating, per variant")
	turnCostLevels = flag.String("turncost.levels", "5,20,40", "BenchmarkTurnCost/concurrency: sessions at once, per level")
	turnCostSlow   = flag.Int("turncost.slow-turns", 5, "BenchmarkTurnCost/concurrency: tool turns of each session")
)

// The concurrency mode's turn: a 3 s streamed model call and a 2 s command.
const (
	slowModel   = 3 * time.Second
	slowCommand = "sleep 2"
	// fastCommand takes about a millisecond: Keel runs it in its sandbox, the loop sleeps.
	fastCommand = "sleep 0.001"
)

// turnCostTimeout caps one sub-benchmark, server and processes included.
const turnCostTimeout = 25 * time.Minute

// turnCostRunTimeout caps one session, or one level's sessions.
const turnCostRunTimeout = 8 * time.Minute

// BenchmarkTurnCost runs Keel's shipped binaries (the worker, and `starter run` attached as a
// person runs a task) and the plain Go agent loop (internal/devkit/goloop, a worker process of its
// own, its workflows started by client) on one dev server and one scripted model gateway
// (fakegw.ModeBench, over HTTP for both), alternating, and reports where a turn's milliseconds
// go. Sub-benchmarks: list_dir (one list_dir call a turn, a zero-latency model), command (a
// command of about 1 ms a turn: Keel's in its sandbox, the loop's a bare sleep) and concurrency
// (N sessions at once, each turn a 3 s streamed model call and a 2 s command).
//
//	go test ./internal/devkit/bench -run '^$' -bench TurnCost -benchtime 1x -timeout 60m -v
func BenchmarkTurnCost(b *testing.B) {
	b.Run("list_dir", func(b *testing.B) { turnCostSequential(b, "") })
	b.Run("command", func(b *testing.B) {
		turnCostSequential(b, fastCommand)
		sandboxP50(b)
	})
	b.Run("concurrency", turnCostConcurrency)
}

// costRig is one dev server, one fake gateway, Keel's worker process and the loop's worker
// process, each on a task queue of its own.
type costRig struct {
	srv     *Server
	gw      *fakegw.Server
	starter string
	// keelEnv is the environment of Keel's worker and starters.
	keelEnv   []string
	workdir   string
	keel      *proc
	loop      *proc
	loopQueue string
}

// startCostRig builds the binaries, then starts the server, the gateway and both workers, and
// waits until both poll.
func startCostRig(b *testing.B, ctx context.Context) *costRig {
	b.Helper()
	bin := b.TempDir()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin+string(filepath.Separator), "./starter", "./worker", "./internal/devkit/goloop")
	cmd.Dir = testenv.RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("building the starter, the worker and the loop: %v\n%s", err, out)
	}
	r := &costRig{srv: startServer(b, ctx, KeelDynamicConfig(nil)), gw: fakegw.New(fakegw.Options{}), starter: filepath.Join(bin, "starter")}
	if err := r.gw.Start("127.0.0.1:0"); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = r.gw.Close() })
	r.workdir = filepath.Join(b.TempDir(), "work")
	if err := seedWorkdir(r.workdir); err != nil {
		b.Fatal(err)
	}
	r.keelEnv = append(os.Environ(),
		"KEEL_TEMPORAL_ADDRESS="+r.srv.Address(),
		"KEEL_TEMPORAL_TASK_QUEUE=bench-turncost-keel",
		"KEEL_DEV_STATE_DIR="+b.TempDir(),
		"KEEL_GATEWAY_FAKE=true",
		"KEEL_GATEWAY_BASE_URL="+r.gw.BaseURL()+"/v1",
		"KEEL_LIMITS_MAX_TOKENS=1000000000",
	)
	r.loopQueue = "bench-turncost-loop"
	r.keel = startProc(b, "keel worker", filepath.Join(bin, "worker"), nil, r.keelEnv, "worker ready")
	r.loop = startProc(b, "loop worker", filepath.Join(bin, "goloop"), []string{"-address", r.srv.Address(), "-task-queue", r.loopQueue,
		"-gateway", r.gw.BaseURL() + "/v1", "-workdir", r.workdir}, os.Environ(), "goloop ready")
	return r
}

// proc is a worker process this benchmark started.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *lockedBuffer
}

// lockedBuffer is a process's output, read while the process writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startProc starts a worker process and waits until its output says ready; it is killed when
// the benchmark ends.
func startProc(b *testing.B, name, bin string, args, env []string, ready string) *proc {
	b.Helper()
	p := &proc{name: name, cmd: exec.Command(bin, args...), out: &lockedBuffer{}}
	p.cmd.Env, p.cmd.Stdout, p.cmd.Stderr = env, p.out, p.out
	if err := p.cmd.Start(); err != nil {
		b.Fatalf("starting the %s: %v", name, err)
	}
	b.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	})
	if !testenv.WaitFor(time.Minute, func() bool { return strings.Contains(p.out.String(), ready) }) {
		b.Fatalf("the %s did not say %q within a minute:\n%s", name, ready, p.out.String())
	}
	return p
}

// cpu is the process's CPU time so far (user and system, its children not counted).
func (p *proc) cpu() time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	st, err := ParseProcStat(raw)
	if err != nil {
		return 0
	}
	return st.CPU
}

// runKeel runs one session through `starter run`, attached, and returns its workflow ID and the
// starter's CPU time.
func (r *costRig) runKeel(ctx context.Context, task string, toolTurns int) (string, time.Duration, error) {
	cmd := exec.CommandContext(ctx, r.starter, "run", "--workdir", r.workdir, "--output", "jsonl", task)
	cmd.Env = append(slices.Clone(r.keelEnv), "KEEL_LIMITS_MAX_TURNS="+strconv.Itoa(toolTurns+5))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", 0, fmt.Errorf("starter run: %w\nstderr:\n%s", err, stderr.String())
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	_, sum, err := testenv.ParseJSONL(stdout.Bytes())
	if err != nil {
		return "", 0, err
	}
	if sum.Status != contract.StatusCompleted || sum.Turns != toolTurns+1 || sum.ToolCalls != toolTurns {
		return "", 0, fmt.Errorf("the session ended %s after %d turns and %d tool calls, want completed after %d and %d\n%s",
			sum.Status, sum.Turns, sum.ToolCalls, toolTurns+1, toolTurns, stderr.String())
	}
	return sum.WorkflowID, cpu, nil
}

// The loop's workflow types (goloop's WorkflowName and ChildTurnsWorkflowName): the plain loop,
// and the same loop with each turn a child workflow, Keel's shape with nothing of Keel's in it.
const (
	loopWorkflow      = "AgentWorkflow"
	childLoopWorkflow = "AgentWorkflowChildTurns"
)

// startLoop starts one loop workflow of type wf by client.
func (r *costRig) startLoop(ctx context.Context, wf, id, task string) (client.WorkflowRun, error) {
	run, err := r.srv.Client().ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: r.loopQueue}, wf, task)
	if err != nil {
		return nil, fmt.Errorf("starting loop %s: %w", id, err)
	}
	return run, nil
}

// waitLoop waits for a loop workflow's answer.
func waitLoop(ctx context.Context, run client.WorkflowRun) error {
	var answer string
	if err := run.Get(ctx, &answer); err != nil {
		return fmt.Errorf("waiting for loop %s: %w", run.GetID(), err)
	}
	if !strings.HasSuffix(answer, fakegw.BenchAnswer) {
		return fmt.Errorf("loop %s answered %q", run.GetID(), answer)
	}
	return nil
}

// requestTimes is, for the session whose task's first line ends with key, the arrival time of the first model
// request of each turn (index 0 is turn 1), as the gateway saw them.
func (r *costRig) requestTimes(key string) []time.Time {
	first := map[int]time.Time{}
	for _, rec := range r.gw.Stats().Records {
		if !strings.Contains(rec.Task, key+"\n") {
			continue
		}
		turn := len(rec.Calls) + 1
		if _, ok := first[turn]; !ok {
			first[turn] = rec.At
		}
	}
	out := make([]time.Time, 0, len(first))
	for t := 1; ; t++ {
		at, ok := first[t]
		if !ok {
			return out
		}
		out = append(out, at)
	}
}

// intervals are the times between consecutive model requests: index i is turn i+1.
func intervals(at []time.Time) []time.Duration {
	var out []time.Duration
	for i := 1; i < len(at); i++ {
		out = append(out, at[i].Sub(at[i-1]))
	}
	return out
}

// window is the median of the ten turns ending at turn+5 (turns 6-15 for turn 10), or of the last
// ten when that runs past the end.
func window(iv []time.Duration, turn int) time.Duration {
	end := min(turn+5, len(iv))
	start := max(end-10, 0)
	return Percentile(iv[start:end], 0.5)
}

// usage is what one run cost beyond its wall time.
type usage struct {
	actions   Actions
	serverCPU time.Duration
	workerCPU time.Duration
	// starterCPU is the starter processes' CPU time (Keel only).
	starterCPU time.Duration
}

// measure runs f between two readings of the action counter, the server's CPU and the worker's.
func measure(ctx context.Context, r *costRig, w *proc, f func() (time.Duration, error)) (usage, error) {
	a0, err := SettledActions(ctx, r.srv.MetricsURL())
	if err != nil {
		return usage{}, err
	}
	_, s0, err := CPUTimes()
	if err != nil {
		return usage{}, err
	}
	w0 := w.cpu()
	starter, err := f()
	if err != nil {
		return usage{}, err
	}
	w1 := w.cpu()
	_, s1, err := CPUTimes()
	if err != nil {
		return usage{}, err
	}
	a1, err := SettledActions(ctx, r.srv.MetricsURL())
	if err != nil {
		return usage{}, err
	}
	return usage{actions: a1.Sub(a0), serverCPU: s1 - s0, workerCPU: w1 - w0, starterCPU: starter}, nil
}

// seqRun is one sequential session's figures.
type seqRun struct {
	at10, atEnd time.Duration
	use         usage
	iv          []time.Duration
	// bytes is the whole history (Keel: the session's runs and every turn child); lastBytes the
	// events of the last tool turn.
	bytes, lastBytes int
	id               string
	times            []time.Time
}

// turnCostSequential alternates a Keel session and a loop session of *turnCostTurns tool turns
// (list_dir, or command when set) *turnCostRounds times, and reports both and their ratio.
func turnCostSequential(b *testing.B, command string) {
	ctx, cancel := context.WithTimeout(context.Background(), turnCostTimeout)
	defer cancel()
	r := startCostRig(b, ctx)
	toolTurns := *turnCostTurns
	script := fakegw.BenchScript{Turns: toolTurns, Command: command}
	// Warm both paths (worker caches, task queue partitions, the gateway's connections), unmeasured.
	if _, _, err := r.runKeel(ctx, fakegw.BenchTask(uniq("warm-keel"), fakegw.BenchScript{Turns: 3, Command: command}), 3); err != nil {
		b.Fatal(err)
	}
	for _, wf := range []string{loopWorkflow, childLoopWorkflow} {
		if err := r.loopOnce(ctx, wf, uniq("warm-loop"), fakegw.BenchScript{Turns: 3, Command: command}); err != nil {
			b.Fatal(err)
		}
	}
	var keels, loops, childLoops []seqRun
	for i := 0; i < b.N; i++ {
		for round := 1; round <= *turnCostRounds; round++ {
			k := r.keelRound(b, ctx, script)
			l := r.loopRound(b, ctx, loopWorkflow, script)
			c := r.loopRound(b, ctx, childLoopWorkflow, script)
			keels, loops, childLoops = append(keels, k), append(loops, l), append(childLoops, c)
			b.Logf("round %d (load %s): ms per turn at turn 10: keel %.1f, loop %.1f, ratio %.2f; at turn %d: keel %.1f, loop %.1f, ratio %.2f",
				round, loadAvg(), Ms(k.at10), Ms(l.at10), ratio(k.at10, l.at10), toolTurns, Ms(k.atEnd), Ms(l.atEnd), ratio(k.atEnd, l.atEnd))
			b.Logf("round %d: the loop with a child workflow per turn: ms per turn at turn 10 %.1f (%.2f the loop's, keel %.2f of it); at turn %d %.1f (%.2f the loop's, keel %.2f of it)",
				round, Ms(c.at10), ratio(c.at10, l.at10), ratio(k.at10, c.at10), toolTurns, Ms(c.atEnd), ratio(c.atEnd, l.atEnd), ratio(k.atEnd, c.atEnd))
			turns := float64(toolTurns + 1)
			b.Logf("round %d: actions per turn keel %.2f %v, loop %.2f %v, child-per-turn loop %.2f %v", round, k.use.actions.Total/turns, actionsPerTurn(k.use.actions, turns),
				l.use.actions.Total/turns, actionsPerTurn(l.use.actions, turns), c.use.actions.Total/turns, actionsPerTurn(c.use.actions, turns))
			b.Logf("round %d: history bytes per turn keel %.0f (last tool turn %d), loop %.0f (last tool turn %d), child-per-turn loop %.0f (last tool turn %d)", round,
				float64(k.bytes)/turns, k.lastBytes, float64(l.bytes)/turns, l.lastBytes, float64(c.bytes)/turns, c.lastBytes)
			b.Logf("round %d: CPU ms per turn: server keel %.1f, loop %.1f, child-per-turn loop %.1f; worker keel %.1f, loop %.1f, child-per-turn loop %.1f; keel's starter %.1f", round,
				Ms(k.use.serverCPU)/turns, Ms(l.use.serverCPU)/turns, Ms(c.use.serverCPU)/turns, Ms(k.use.workerCPU)/turns, Ms(l.use.workerCPU)/turns, Ms(c.use.workerCPU)/turns, Ms(k.use.starterCPU)/turns)
		}
	}
	last := func(rs []seqRun, f func(seqRun) time.Duration) time.Duration { return f(rs[len(rs)-1]) }
	at10 := func(s seqRun) time.Duration { return s.at10 }
	atEnd := func(s seqRun) time.Duration { return s.atEnd }
	b.ReportMetric(Ms(last(keels, at10)), "keel-ms/turn@10")
	b.ReportMetric(Ms(last(loops, at10)), "loop-ms/turn@10")
	b.ReportMetric(Ms(last(keels, atEnd)), "keel-ms/turn@end")
	b.ReportMetric(Ms(last(loops, atEnd)), "loop-ms/turn@end")
	b.ReportMetric(ratio(last(keels, atEnd), last(loops, atEnd)), "keel/loop@end")
	b.ReportMetric(ratio(last(childLoops, atEnd), last(loops, atEnd)), "childloop/loop@end")
	b.ReportMetric(0, "ns/op")
	logTurnSteps(b, ctx, r, keels, loops)
}

// ratio is a/b.
func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

// actionsPerTurn is each action type's count per turn, rounded for a log line.
func actionsPerTurn(a Actions, turns float64) map[string]float64 {
	return countsPerTurn(a.ByType, turns)
}

// countsPerTurn is each count per turn, rounded for a log line.
func countsPerTurn(counts map[string]float64, turns float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range counts {
		out[k] = float64(int(v/turns*100+0.5)) / 100
	}
	return out
}

// loadAvg is the machine's load averages, for the log beside each number.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// loopOnce runs one loop session of type wf to its answer.
func (r *costRig) loopOnce(ctx context.Context, wf, id string, s fakegw.BenchScript) error {
	run, err := r.startLoop(ctx, wf, id, fakegw.BenchTask(id, s))
	if err != nil {
		return err
	}
	return waitLoop(ctx, run)
}

// keelRound runs and reads one Keel session.
func (r *costRig) keelRound(b *testing.B, ctx context.Context, s fakegw.BenchScript) seqRun {
	ctx, cancel := context.WithTimeout(ctx, turnCostRunTimeout)
	defer cancel()
	key := uniq("keel")
	var id string
	use, err := measure(ctx, r, r.keel, func() (time.Duration, error) {
		var cpu time.Duration
		var err error
		id, cpu, err = r.runKeel(ctx, fakegw.BenchTask(key, s), s.Turns)
		return cpu, err
	})
	if err != nil {
		b.Fatal(err)
	}
	run := r.timedRun(b, use, id, key, s.Turns)
	parent, children, err := keelHistories(ctx, r.srv.Client(), id)
	if err != nil {
		b.Fatal(err)
	}
	run.bytes, run.lastBytes = treeBytes(parent, children, s.Turns)
	return run
}

// loopRound runs and reads one loop session of type wf.
func (r *costRig) loopRound(b *testing.B, ctx context.Context, wf string, s fakegw.BenchScript) seqRun {
	ctx, cancel := context.WithTimeout(ctx, turnCostRunTimeout)
	defer cancel()
	id := uniq("loop")
	use, err := measure(ctx, r, r.loop, func() (time.Duration, error) { return 0, r.loopOnce(ctx, wf, id, s) })
	if err != nil {
		b.Fatal(err)
	}
	run := r.timedRun(b, use, id, id, s.Turns)
	evs, err := History(ctx, r.srv.Client(), id, "")
	if err != nil {
		b.Fatal(err)
	}
	if wf == childLoopWorkflow {
		children, err := childHistories(ctx, r.srv.Client(), evs)
		if err != nil {
			b.Fatal(err)
		}
		run.bytes, run.lastBytes = treeBytes(evs, children, s.Turns)
		return run
	}
	run.bytes = Bytes(evs)
	turns := cut(evs, isModelScheduled)
	if n := s.Turns; len(turns) > n {
		run.lastBytes = Bytes(turns[n-1])
	}
	return run
}

// isModelScheduled: the event schedules a model call (Keel's CallModel, the loop's CallModel).
func isModelScheduled(e *historypb.HistoryEvent) bool {
	return e.GetEventType() == enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED &&
		e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() == "CallModel"
}

// cut splits a history at every event start says begins a turn: element i holds turn i+1's
// events, up to the next turn's first.
func cut(evs []*historypb.HistoryEvent, start func(*historypb.HistoryEvent) bool) [][]*historypb.HistoryEvent {
	var out [][]*historypb.HistoryEvent
	for _, e := range evs {
		if start(e) {
			out = append(out, nil)
		}
		if len(out) > 0 {
			out[len(out)-1] = append(out[len(out)-1], e)
		}
	}
	return out
}

// isChildStart: the event starts a child workflow (a Keel turn, a child-per-turn loop's turn).
func isChildStart(e *historypb.HistoryEvent) bool {
	return e.GetEventType() == enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED
}

// keelHistories reads a session's runs, as one history, and its turn children, in turn order.
func keelHistories(ctx context.Context, c client.Client, id string) ([]*historypb.HistoryEvent, [][]*historypb.HistoryEvent, error) {
	runs, err := Runs(ctx, c, id)
	if err != nil {
		return nil, nil, err
	}
	var parent []*historypb.HistoryEvent
	for _, r := range runs {
		parent = append(parent, r.Events...)
	}
	children, err := childHistories(ctx, c, parent)
	return parent, children, err
}

// childHistories reads the history of every child the parent's events started, in the order
// they were started, by the workflow ID each start names.
func childHistories(ctx context.Context, c client.Client, parent []*historypb.HistoryEvent) ([][]*historypb.HistoryEvent, error) {
	var out [][]*historypb.HistoryEvent
	for _, e := range parent {
		if !isChildStart(e) {
			continue
		}
		evs, err := History(ctx, c, e.GetStartChildWorkflowExecutionInitiatedEventAttributes().GetWorkflowId(), "")
		if err != nil {
			return nil, err
		}
		out = append(out, evs)
	}
	return out, nil
}

// treeBytes is the history bytes of a parent and its turn children, and those of tool turn n:
// the parent's events from that turn's child start to the next one's, and the child's.
func treeBytes(parent []*historypb.HistoryEvent, children [][]*historypb.HistoryEvent, n int) (total, last int) {
	total = Bytes(parent)
	for _, c := range children {
		total += Bytes(c)
	}
	if starts := cut(parent, isChildStart); len(starts) > n && len(children) >= n {
		last = Bytes(starts[n-1]) + Bytes(children[n-1])
	}
	return total, last
}

// logTurnSteps logs where the turns of the last round's sessions spent their time, Keel's and the
// loop's, over the turns of the windows at turn 10 and at the end: each gap between consecutive
// events of the session's, its turns' and the model requests' merged timeline, summed per kind
// within a turn, the median over the turns.
func logTurnSteps(b *testing.B, ctx context.Context, r *costRig, keels, loops []seqRun) {
	k, l := keels[len(keels)-1], loops[len(loops)-1]
	parent, children, err := keelHistories(ctx, r.srv.Client(), k.id)
	if err != nil {
		b.Fatal(err)
	}
	lists := [][]Labelled{Label("session", parent), gatewayEvents(k.times)}
	for _, c := range children {
		lists = append(lists, Label("turn", c))
	}
	keelTL := Merge(lists...)
	evs, err := History(ctx, r.srv.Client(), l.id, "")
	if err != nil {
		b.Fatal(err)
	}
	loopTL := Merge(Label("loop", evs), gatewayEvents(l.times))
	isRequest := func(e Labelled) bool { return e.Who == "gateway" }
	for _, side := range []struct {
		name string
		tl   []Labelled
		iv   []time.Duration
	}{{"keel", keelTL, k.iv}, {"loop", loopTL, l.iv}} {
		segs := windowed(Segments(side.tl, isRequest), len(side.iv))
		rows := StepTable(segs)
		var total time.Duration
		for _, s := range segs {
			for _, st := range s {
				total += st.D
			}
		}
		b.Logf("%s: where a turn goes (model request to the next; %d turns around turn 10 and at the end; mean %.1f ms):", side.name, len(segs), Ms(total)/float64(len(segs)))
		b.Logf("  %-100s %8s %9s", "step (from -> to)", "per turn", "median ms")
		for _, row := range rows {
			if row.Median < 100*time.Microsecond && row.PerTurn < 1 {
				continue
			}
			b.Logf("  %-100s %8.2f %9.2f", row.Label, row.PerTurn, Ms(row.Median))
		}
	}
}

// windowed keeps the segments of the turns in the windows at turn 10 and at the end (see window).
func windowed(segs [][]Step, turns int) [][]Step {
	var out [][]Step
	for i, s := range segs {
		t := i + 1
		if (t >= 6 && t <= 15) || t > turns-10 {
			out = append(out, s)
		}
	}
	return out
}

// gatewayEvents are the model requests' arrivals as timeline events.
func gatewayEvents(times []time.Time) []Labelled {
	out := make([]Labelled, len(times))
	for i, at := range times {
		out[i] = Labelled{Who: "gateway", Name: "model request", At: at}
	}
	return out
}

// sandboxP50 reports the sandbox's own cost of the command each turn runs: its p50 inside the
// sandbox and outside, as BenchmarkSandboxTrue measures `true`.
func sandboxP50(b *testing.B) {
	if runtime.GOOS != "linux" {
		return
	}
	dir := b.TempDir()
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp"}
	argv := strings.Fields(fastCommand)
	var in, out []time.Duration
	for range 50 {
		start := time.Now()
		if _, err := sandbox.Run(sandbox.Config{}, dir, argv, env, io.Discard); err != nil {
			b.Fatal(err)
		}
		in = append(in, time.Since(start))
		start = time.Now()
		if err := exec.Command(argv[0], argv[1:]...).Run(); err != nil {
			b.Fatal(err)
		}
		out = append(out, time.Since(start))
	}
	pin, pout := Percentile(in, 0.5), Percentile(out, 0.5)
	b.ReportMetric(Ms(pin), "sandbox-p50-ms")
	b.Logf("%q p50 (load %s): in the sandbox %.2f ms, outside %.2f ms, the sandbox's own %.2f ms", fastCommand, loadAvg(), Ms(pin), Ms(pout), Ms(pin-pout))
}

// turnCostConcurrency runs, per level, that many loop sessions at once and then that many Keel
// sessions at once (each through its own attached starter process), each turn a 3 s streamed
// model call and a 2 s command.
func turnCostConcurrency(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), turnCostTimeout)
	defer cancel()
	levels := parseLevels(b, "turncost.levels", *turnCostLevels)
	r := startCostRig(b, ctx)
	script := fakegw.BenchScript{Turns: *turnCostSlow, Command: slowCommand, Stream: slowModel}
	turns := float64(script.Turns + 1)
	for i := 0; i < b.N; i++ {
		for _, n := range levels {
			l := r.concurrentLoops(b, ctx, loopWorkflow, n, script)
			c := r.concurrentLoops(b, ctx, childLoopWorkflow, n, script)
			k := r.concurrentKeels(b, ctx, n, script)
			kp, lp := Percentile(k.iv, 0.5), Percentile(l.iv, 0.5)
			all := turns * float64(n)
			b.Logf("%d at once (load %s): ms per turn median keel %.0f, loop %.0f, ratio %.2f; server CPU s keel %.1f (%.0f ms/turn), loop %.1f (%.0f ms/turn), ratio %.2f; "+
				"actions per turn keel %.2f, loop %.2f; worker CPU ms/turn keel %.0f, loop %.0f; starters' CPU ms/turn %.0f",
				n, loadAvg(), Ms(kp), Ms(lp), ratio(kp, lp), k.use.serverCPU.Seconds(), Ms(k.use.serverCPU)/all, l.use.serverCPU.Seconds(), Ms(l.use.serverCPU)/all,
				ratio(k.use.serverCPU, l.use.serverCPU), k.use.actions.Total/all, l.use.actions.Total/all, Ms(k.use.workerCPU)/all, Ms(l.use.workerCPU)/all, Ms(k.use.starterCPU)/all)
			cp := Percentile(c.iv, 0.5)
			b.Logf("%d at once: the loop with a child workflow per turn: ms per turn median %.0f (%.2f the loop's, keel %.2f of it); server CPU s %.1f (%.0f ms/turn, %.2f the loop's, keel %.2f of it); actions per turn %.2f",
				n, Ms(cp), ratio(cp, lp), ratio(kp, cp), c.use.serverCPU.Seconds(), Ms(c.use.serverCPU)/all, ratio(c.use.serverCPU, l.use.serverCPU),
				ratio(k.use.serverCPU, c.use.serverCPU), c.use.actions.Total/all)
			b.Logf("%d at once: keel actions per turn %v; loop %v", n, actionsPerTurn(k.use.actions, all), actionsPerTurn(l.use.actions, all))
			b.Logf("%d at once: the server's frontend calls per turn, keel %v; child loop %v; loop %v", n,
				countsPerTurn(k.use.actions.Calls, all), countsPerTurn(c.use.actions.Calls, all), countsPerTurn(l.use.actions.Calls, all))
			b.ReportMetric(ratio(kp, lp), fmt.Sprintf("keel/loop@%d", n))
			b.ReportMetric(ratio(k.use.serverCPU, l.use.serverCPU), fmt.Sprintf("keel/loop-server-cpu@%d", n))
			b.ReportMetric(ratio(c.use.serverCPU, l.use.serverCPU), fmt.Sprintf("childloop/loop-server-cpu@%d", n))
		}
	}
	b.ReportMetric(0, "ns/op")
}

// loadRun is one level's figures: every interval between consecutive model requests of every
// session, and the usage.
type loadRun struct {
	iv  []time.Duration
	use usage
}

// concurrentLoops runs n loop sessions of type wf at once.
func (r *costRig) concurrentLoops(b *testing.B, ctx context.Context, wf string, n int, s fakegw.BenchScript) loadRun {
	ctx, cancel := context.WithTimeout(ctx, turnCostRunTimeout)
	defer cancel()
	prefix := uniq("loadloop")
	ids := make([]string, n)
	use, err := measure(ctx, r, r.loop, func() (time.Duration, error) {
		runs := make([]client.WorkflowRun, n)
		for i := range runs {
			ids[i] = fmt.Sprintf("%s-%d", prefix, i)
			var err error
			if runs[i], err = r.startLoop(ctx, wf, ids[i], fakegw.BenchTask(ids[i], s)); err != nil {
				return 0, err
			}
		}
		for _, run := range runs {
			if err := waitLoop(ctx, run); err != nil {
				return 0, err
			}
		}
		return 0, nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return r.gather(b, ids, s, use)
}

func (r *costRig) concurrentKeels(b *testing.B, ctx context.Context, n int, s fakegw.BenchScript) loadRun {
	ctx, cancel := context.WithTimeout(ctx, turnCostRunTimeout)
	defer cancel()
	prefix := uniq("loadkeel")
	keys := make([]string, n)
	use, err := measure(ctx, r, r.keel, func() (time.Duration, error) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var cpu time.Duration
		var first error
		for i := range keys {
			keys[i] = fmt.Sprintf("%s-%d", prefix, i)
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, c, err := r.runKeel(ctx, fakegw.BenchTask(keys[i], s), s.Turns)
				mu.Lock()
				defer mu.Unlock()
				cpu += c
				if err != nil && first == nil {
					first = err
				}
			}()
		}
		wg.Wait()
		return cpu, first
	})
	if err != nil {
		b.Fatal(err)
	}
	return r.gather(b, keys, s, use)
}

// gather reads every session's intervals from the gateway.
func (r *costRig) gather(b *testing.B, keys []string, s fakegw.BenchScript, use usage) loadRun {
	out := loadRun{use: use}
	for _, k := range keys {
		iv := intervals(r.requestTimes(k))
		if len(iv) != s.Turns {
			b.Fatalf("the gateway saw %d turns of %q, want %d", len(iv)+1, k, s.Turns+1)
		}
		out.iv = append(out.iv, iv...)
	}
	return out
}

// parseLevels reads a flag's comma-separated numbers of sessions at once.
func parseLevels(b *testing.B, name, value string) []int {
	b.Helper()
	var levels []int
	for f := range strings.SplitSeq(value, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			b.Fatalf("-%s %q: %q is not a count", name, value, f)
		}
		levels = append(levels, n)
	}
	return levels
}

// timedRun is a session's run with its turn times as the gateway saw the requests of key: one
// interval per tool turn, and the medians at turn 10 and at the last.
func (r *costRig) timedRun(b *testing.B, use usage, id, key string, turns int) seqRun {
	b.Helper()
	run := seqRun{use: use, id: id, times: r.requestTimes(key)}
	run.iv = intervals(run.times)
	if len(run.iv) != turns {
		b.Fatalf("the gateway saw %d turns of %s, want %d", len(run.iv)+1, id, turns+1)
	}
	run.at10, run.atEnd = window(run.iv, 10), window(run.iv, turns)
	return run
}
