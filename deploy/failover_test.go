package deploy

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/demo"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/metrics/record"
)

// failoverSessions is how many demo sessions the drill runs; every other one first runs a 15-second
// command, so some tool is always in flight when the worker dies.
const failoverSessions = 10

// failoverCommand is how to run the drill; the skip message and docs/deployment.md show it.
// -count=1 because go test would otherwise replay a cached pass without starting a cluster.
const failoverCommand = "KEEL_CLUSTER_TEST=1 go test -count=1 ./deploy -run TestClusterFailover -v"

// TestClusterFailover is the failover drill of the production topology: run-cluster.sh starts
// Temporal on PostgreSQL, the fake gateway and two workers that share one side-effect log; demo
// sessions start, worker-1 is killed (SIGKILL from its pid file) once every session has run a
// tool, and every session must still complete, on worker-2, with no tool activity executed
// twice. The surviving worker's /metrics and the sessions' KeelStatus search attribute are checked
// too. The cluster is stopped and its databases dropped at the end, whatever happened.
func TestClusterFailover(t *testing.T) {
	if os.Getenv("KEEL_CLUSTER_TEST") != "1" {
		t.Skip("the failover drill needs PostgreSQL and starts a Temporal cluster (building the server takes minutes on a fresh machine); run it with: " + failoverCommand)
	}
	dir := t.TempDir()
	effects := filepath.Join(dir, "effects.jsonl")
	cl := newTestCluster(t, dir, "KEEL_CLUSTER_EFFECT_LOG="+effects)
	t.Cleanup(cl.down)
	cl.up()
	names := workerNames{strconv.Itoa(cl.pid("worker-1")): "worker-1", strconv.Itoa(cl.pid("worker-2")): "worker-2"}

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	c, err := client.Dial(client.Options{HostPort: cl.address(), Namespace: "default",
		Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
	if err != nil {
		t.Fatalf("connecting to the cluster: %v", err)
	}
	defer c.Close()

	start := time.Now()
	sessions := startFailoverSessions(ctx, t, c)
	var done atomic.Int32
	results := awaitSessions(ctx, sessions, &done)

	if err := waitFor(ctx, 3*time.Minute, func() (bool, error) { return countEffects(effects) >= len(sessions), nil }); err != nil {
		t.Fatalf("waiting for every session to run a tool: %v (%d tool runs)", err, countEffects(effects))
	}
	killAt := time.Now()
	toolsAtKill, doneAtKill := countEffects(effects), done.Load()
	killedPid := cl.kill(ctx, "worker-1")

	lastDone := checkSessionsComplete(ctx, t, sessions, results)
	all, err := readEffects(effects)
	if err != nil {
		t.Fatal(err)
	}
	dups := duplicates(all)
	if len(dups) > 0 {
		t.Errorf("tool activities executed more than once: %v", dups)
	}
	p := checkWhereToolsRan(ctx, t, c, sessions, all, names, killAt)
	checkSurvivorMetrics(ctx, t, cl, p)
	listed := checkSearchAttributes(ctx, t, cl, sessions)

	t.Logf("%d sessions; worker-1 (pid %d) killed %.1fs in, after %d tool runs with %d sessions done; "+
		"all completed %.1fs after the kill (%.1fs in all); %d tool executions, %d duplicates; "+
		"tools on worker-1 before the kill %d (%d of them cut short by it, never rerun), on worker-2 before %d and after %d; "+
		"%d sessions moved from worker-1 to worker-2; KeelStatus=\"completed\" lists %d workflows, KeelStatus=\"running\" none",
		len(sessions), killedPid, killAt.Sub(start).Seconds(), toolsAtKill, doneAtKill,
		lastDone.Sub(killAt).Seconds(), lastDone.Sub(start).Seconds(), len(all), len(dups),
		p.workers["worker-1"].before, len(p.lost), p.workers["worker-2"].before, p.workers["worker-2"].after, p.moved, listed)
}

// failoverSession is one session of the drill.
type failoverSession struct {
	id, workdir string
	run         client.WorkflowRun
}

// startFailoverSessions starts the demo sessions on the task queue the cluster's workers poll.
func startFailoverSessions(ctx context.Context, t *testing.T, c client.Client) []failoverSession {
	t.Helper()
	out := make([]failoverSession, failoverSessions)
	for i := range out {
		s := &out[i]
		s.id, s.workdir = fmt.Sprintf("failover-%02d", i), t.TempDir()
		if err := demo.CopyWorkspace(s.workdir); err != nil {
			t.Fatal(err)
		}
		in := contract.SessionInput{Task: fmt.Sprintf("failover session %d: fix the failing test", i), Limits: contract.Limits{MaxTurns: 30}}
		in.Workdir = s.workdir
		if i%2 == 0 {
			in.Task = fakegw.WithMode(in.Task, fakegw.ModeLongCommand)
		}
		var err error
		s.run, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: s.id, TaskQueue: contract.TaskQueue},
			contract.SessionWorkflow, in)
		if err != nil {
			t.Fatalf("starting session %s: %v", s.id, err)
		}
	}
	return out
}

// sessionResult is how a session ended and when the test learned of it.
type sessionResult struct {
	summary contract.Summary
	at      time.Time
}

// awaitSessions waits for every session's result in the background, counting those done.
func awaitSessions(ctx context.Context, sessions []failoverSession, done *atomic.Int32) map[string]chan sessionResult {
	out := map[string]chan sessionResult{}
	for _, s := range sessions {
		ch := make(chan sessionResult, 1)
		out[s.id] = ch
		go func() {
			var r sessionResult
			if err := s.run.Get(ctx, &r.summary); err != nil {
				r.summary.Status, r.summary.Reason = "error", err.Error()
			}
			r.at = time.Now()
			done.Add(1)
			ch <- r
		}()
	}
	return out
}

// checkSessionsComplete requires every session to complete with its workspace fixed, and returns
// when the last one finished.
func checkSessionsComplete(ctx context.Context, t *testing.T, sessions []failoverSession, results map[string]chan sessionResult) time.Time {
	t.Helper()
	var last time.Time
	for _, s := range sessions {
		var r sessionResult
		select {
		case r = <-results[s.id]:
		case <-ctx.Done():
			t.Fatalf("session %s did not finish in time", s.id)
		}
		if r.at.After(last) {
			last = r.at
		}
		if r.summary.Status != contract.StatusCompleted {
			t.Errorf("session %s: %s (%s)", s.id, r.summary.Status, r.summary.Reason)
			continue
		}
		b, err := os.ReadFile(filepath.Join(s.workdir, demo.SourceFile))
		if err != nil || string(b) != demo.FixedSource {
			t.Errorf("session %s completed but %s is not fixed (%v)", s.id, demo.SourceFile, err)
		}
	}
	return last
}

// toolCounts counts a worker's tool executions before and after the kill.
type toolCounts struct{ before, after int }

// placement is where tools ran, by worker name, and which tool activities the kill cut short.
type placement struct {
	workers map[string]*toolCounts
	lost    map[string]string // tool activity → timeout type
	moved   int               // sessions that ran on worker-1 before the kill and on worker-2 after it
}

// checkWhereToolsRan attributes each tool execution to a worker through the ActivityTaskStarted
// identities in the sessions' histories: nothing may run on worker-1 after its kill, a tool the
// kill cut short ran once on worker-1 and never again, and at least one session must have worked
// on worker-1 before the kill and on worker-2 after it.
func checkWhereToolsRan(ctx context.Context, t *testing.T, c client.Client, sessions []failoverSession,
	effects []effectLine, names workerNames, kill time.Time) placement {
	t.Helper()
	p := placement{workers: map[string]*toolCounts{"worker-1": {}, "worker-2": {}}, lost: map[string]string{}}
	identities := map[string]string{}
	for _, s := range sessions {
		h, err := readSessionHistory(ctx, c, s.id)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range h.Activities {
			identities[k] = v
		}
		maps.Copy(p.lost, h.LostTools)
		if h.movedAcross(names, kill, "worker-1", "worker-2") {
			p.moved++
		}
	}
	for _, e := range effects {
		id, ok := identities[e.key()]
		if !ok {
			t.Errorf("no ActivityTaskStarted event for tool execution %s", e.key())
			continue
		}
		name := names.of(id)
		counts, ok := p.workers[name]
		if !ok {
			t.Errorf("tool execution %s ran on %s, not on a cluster worker", e.key(), name)
			continue
		}
		if e.Time.Before(kill) {
			counts.before++
		} else {
			counts.after++
		}
	}
	tools := map[string]string{}
	for _, e := range effects {
		tools[e.key()] = e.Tool
	}
	for k, kind := range p.lost {
		if name := names.of(identities[k]); name != "worker-1" {
			t.Errorf("tool activity %s (%s) timed out (%s) on %s, which was not killed", k, tools[k], kind, name)
		}
	}
	if n := p.workers["worker-1"].after; n > 0 {
		t.Errorf("%d tool executions ran on worker-1 after it was killed", n)
	}
	if p.workers["worker-1"].before == 0 {
		t.Errorf("worker-1 ran no tool before the kill, so the drill showed no failover")
	}
	if p.moved == 0 {
		t.Errorf("no session ran on worker-1 before the kill and on worker-2 after it")
	}
	return p
}

// checkSurvivorMetrics scrapes worker-2: Keel's and the SDK's metrics must be there; its count of
// tools that ran (ok or error) must match the executions attributed to it, and its count of tools
// whose outcome is unknown must match the tool activities the kill cut short, since worker-2 ran
// those turns to their end. worker-1's endpoint must be gone.
func checkSurvivorMetrics(ctx context.Context, t *testing.T, cl *testCluster, p placement) {
	t.Helper()
	m, err := scrape(ctx, cl.workerMetricsURL(2))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{record.ToolCalls, record.ModelAttempts, "temporal_activity_execution_latency_seconds_count", "temporal_workflow_completed_total"} {
		if m.sum(name, nil) <= 0 {
			t.Errorf("worker-2's /metrics has no %s", name)
		}
	}
	survivor := p.workers["worker-2"]
	if got, want := m.sum(record.ToolCalls, outcomeIn(record.ToolOK, record.ToolError)), float64(survivor.before+survivor.after); got != want {
		t.Errorf("worker-2 counts %v tools run in %s, but ran %v by the side-effect log", got, record.ToolCalls, want)
	}
	if got, want := m.sum(record.ToolCalls, outcomeIn(record.ToolUnknown)), float64(len(p.lost)); got != want {
		t.Errorf("worker-2 counts %v tools with outcome unknown in %s, but the kill cut %v short", got, record.ToolCalls, want)
	}
	if _, err := scrape(ctx, cl.workerMetricsURL(1)); err == nil {
		t.Errorf("worker-1's /metrics still answers after the kill")
	}
}

// checkSearchAttributes lists sessions by KeelStatus with the temporal CLI: every session is
// completed and none is still running. Visibility lags a little behind the histories, hence the
// wait. It returns how many workflows the completed query listed.
func checkSearchAttributes(ctx context.Context, t *testing.T, cl *testCluster, sessions []failoverSession) int {
	t.Helper()
	var completed, running []string
	err := waitFor(ctx, 30*time.Second, func() (bool, error) {
		var err error
		if completed, err = listByStatus(ctx, cl.temporalCLI(), cl.address(), contract.StatusCompleted); err != nil {
			return false, err
		}
		if running, err = listByStatus(ctx, cl.temporalCLI(), cl.address(), contract.StatusRunning); err != nil {
			return false, err
		}
		for _, s := range sessions {
			if !slices.Contains(completed, s.id) {
				return false, nil
			}
		}
		return len(running) == 0, nil
	})
	if err != nil {
		t.Errorf("KeelStatus=\"completed\" lists %d workflows (%s), KeelStatus=\"running\" lists %v: %v",
			len(completed), strings.Join(completed, " "), running, err)
	}
	return len(completed)
}
