package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegw"
)

// TestDelegateThreeInParallel: a session whose model delegates three sub-agents in one reply runs
// them as child sessions at the same time (each one's first model call arrives before any of them
// has done its whole script), and its next model call gets the three results.
func TestDelegateThreeInParallel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	sw := startScripted(t, scriptedOptions{})
	run := sw.start(ctx, fakegw.ModeDelegate, contract.Limits{MaxTurns: 60, DelegationDepth: 1, MaxChildren: 4})
	var sum contract.Summary
	if err := run.Get(ctx, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Status != contract.StatusCompleted || !strings.Contains(sum.Answer, "All 3 sub-agents reported back") {
		t.Fatalf("summary %+v", sum)
	}

	recs := sw.gw.Stats().Records
	var firsts []time.Time
	for _, r := range recs {
		if r.Mode == "" && r.First {
			firsts = append(firsts, r.At)
		}
	}
	if len(firsts) != fakegw.DelegateCount {
		t.Fatalf("%d sub-agent conversations began, want %d", len(firsts), fakegw.DelegateCount)
	}
	// Run one after another, two whole sub-agents (six model calls each on the demo script) would
	// come before the third one's first call; run at once, hardly any does.
	third := slices.MaxFunc(firsts, time.Time.Compare)
	before := 0
	for _, r := range recs {
		if r.Mode == "" && !r.First && r.At.Before(third) {
			before++
		}
	}
	if before >= 6 {
		t.Errorf("%d sub-agent model calls came before the third sub-agent's first: they ran one after another", before)
	}
	finished := 0
	for _, e := range sum.Events {
		if e.Event == contract.EventToolResult && e.Tool == "delegate" && !e.IsError && strings.Contains(e.Text, "finished") {
			finished++
		}
	}
	var parent []fakegw.Record
	for _, r := range recs {
		if r.Mode == fakegw.ModeDelegate {
			parent = append(parent, r)
		}
	}
	if len(parent) != 2 {
		t.Fatalf("the parent made %d model calls, want 2 (delegate, then answer)", len(parent))
	}
	if n := len(parent[1].Calls); n != fakegw.DelegateCount {
		t.Errorf("the parent's second call was shown %d calls, want the %d delegations", n, fakegw.DelegateCount)
	}
	if finished != fakegw.DelegateCount {
		t.Errorf("%d delegations reported a finished sub-agent, want %d; events %+v", finished, fakegw.DelegateCount, sum.Events)
	}
}

// TestDelegateTreeTokenLimit: three sub-agents that each stay within their own slice together
// cross their parent's token limit; the whole tree stops within about one model call per
// sub-agent of crossing it, and the parent's summary names the limit and the node.
func TestDelegateTreeTokenLimit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	sw := startScripted(t, scriptedOptions{})
	const limit = 5000 // the parent's call and three or four of its sub-agents' (each over 1,000 tokens)
	run := sw.start(ctx, fakegw.ModeDelegate, contract.Limits{MaxTurns: 60, MaxTokens: limit, DelegationDepth: 1, MaxChildren: 4})
	err := run.Get(ctx, nil)
	sum, ok := contract.EndedSummary(err)
	if !ok || sum.Status != contract.StatusLimit || sum.Limit != contract.LimitTokens {
		t.Fatalf("want the tree stopped on its token limit; got %v, %+v", err, sum)
	}
	if !strings.Contains(sum.Reason, run.GetID()+"/sub-") {
		t.Errorf("the summary %q does not name the sub-agent whose charge crossed the limit", sum.Reason)
	}
	child := 0
	for _, r := range sw.gw.Stats().Records {
		if r.Mode == "" {
			child++
		}
	}
	// Unstopped, the three sub-agents would make 18 model calls (6 each on the demo script);
	// stopped at the limit, each has at most one more in flight when the charge lands.
	if child > 9 {
		t.Errorf("the sub-agents made %d model calls: the tree ran on after crossing its limit", child)
	}
}

// TestDelegateSurvivesWorkerKill: the worker is SIGKILLed while two sub-agents each run a command;
// on a new worker every node completes, and no tool ran twice (the side-effect log).
func TestDelegateSurvivesWorkerKill(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	effects := filepath.Join(t.TempDir(), "effects.jsonl")
	sw := startScripted(t, scriptedOptions{worker: "./internal/devkit/recworker", args: []string{"-effect-log", effects}})
	run := sw.start(ctx, fakegw.ModeDelegateLong, contract.Limits{MaxTurns: 60, DelegationDepth: 1, MaxChildren: 4})
	if !waitFor(90*time.Second, func() bool { return len(processesIn(sw.ws, "sleep", "15")) == 2 }) {
		t.Fatal("the two sub-agents never ran their commands at the same time")
	}
	sw.worker.kill()
	sw.worker.start()

	var sum contract.Summary
	if err := run.Get(ctx, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Status != contract.StatusCompleted || !strings.Contains(sum.Answer, "All 2 sub-agents reported back") {
		t.Fatalf("summary %+v", sum)
	}
	finished := 0
	for _, e := range sum.Events {
		if e.Event == contract.EventToolResult && e.Tool == "delegate" && !e.IsError && strings.Contains(e.Text, "finished") {
			finished++
		}
	}
	if finished != 2 {
		t.Errorf("%d sub-agents finished, want 2; events %+v", finished, sum.Events)
	}
	if dups, total := duplicateExecutions(t, effects); len(dups) > 0 {
		t.Errorf("%d of %d tool executions ran twice: %v", len(dups), total, dups)
	}
}

// TestCancelOneSubAgent: `starter cancel` of one sub-agent while both run a command reaps its
// command and ends it alone; its sibling finishes, and the parent's model is told which one was
// cancelled.
func TestCancelOneSubAgent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	sw := startScripted(t, scriptedOptions{})
	run := sw.start(ctx, fakegw.ModeDelegateLong, contract.Limits{MaxTurns: 60, DelegationDepth: 1, MaxChildren: 4})
	if !waitFor(90*time.Second, func() bool { return len(processesIn(sw.ws, "sleep", "15")) == 2 }) {
		t.Fatal("the two sub-agents never ran their commands at the same time")
	}
	resp, err := env.Client().ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query: fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running'", contract.SessionWorkflow)})
	if err != nil {
		t.Fatal(err)
	}
	var children []string
	for _, e := range resp.GetExecutions() {
		if id := e.GetExecution().GetWorkflowId(); contract.ParentSessionID(id) == run.GetID() {
			children = append(children, id)
		}
	}
	slices.Sort(children)
	if len(children) != 2 {
		t.Fatalf("running sub-agents %v, want 2", children)
	}
	victim := children[0]
	if out, err := starterIn(sw.env, "cancel", victim); err != nil {
		t.Fatalf("starter cancel %s: %v\n%s", victim, err, out)
	}
	// The cancelled sub-agent's command is reaped long before its 15 s are up; the sibling's runs on.
	if !waitFor(10*time.Second, func() bool { return len(processesIn(sw.ws, "sleep", "15")) == 1 }) {
		t.Errorf("the cancelled sub-agent's command was not reaped: %d sleeps run", len(processesIn(sw.ws, "sleep", "15")))
	}
	var sum contract.Summary
	if err := run.Get(ctx, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Status != contract.StatusCompleted {
		t.Fatalf("cancelling a sub-agent stopped its parent: %+v", sum)
	}
	var told, finished bool
	for _, e := range sum.Events {
		if e.Event != contract.EventToolResult || e.Tool != "delegate" {
			continue
		}
		told = told || (e.IsError && strings.Contains(e.Text, victim) && strings.Contains(e.Text, "was cancelled"))
		finished = finished || (!e.IsError && strings.Contains(e.Text, children[1]) && strings.Contains(e.Text, "finished"))
	}
	if !told || !finished {
		t.Errorf("want the parent told %s was cancelled (%v) and %s finished (%v); events %+v", victim, told, children[1], finished, sum.Events)
	}
}
