package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/session"
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
	sw, run, children := twoChildrenSleeping(ctx, t)
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

// TestSayToOneSubAgent: `starter say` to one of two sub-agents while both run a command reaches
// that sub-agent's next model call only: no model call of its sibling or of the parent carries
// the message.
func TestSayToOneSubAgent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	sw, run, children := twoChildrenSleeping(ctx, t)
	text := "keep the fix to one line"
	sent := len(sw.gw.Stats().Records)
	if out, err := starterIn(sw.env, "say", children[0], text); err != nil || !strings.Contains(out, "queued for the next model call") {
		t.Fatalf("starter say %s: %v\n%s", children[0], err, out)
	}
	var sum contract.Summary
	if err := run.Get(ctx, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Status != contract.StatusCompleted {
		t.Fatalf("summary %+v", sum)
	}
	// Each session of the tree has its own task: the parent's, and one per sub-agent.
	carried := map[string]int{}
	after := map[string]int{}
	for _, r := range sw.gw.Stats().Records[sent:] {
		after[r.Task]++
		if slices.Contains(r.Persons, contract.PersonPrefix+text) {
			carried[r.Task]++
		}
	}
	if len(carried) != 1 {
		t.Fatalf("the message reached the model calls of %d sessions, want 1: %v", len(carried), carried)
	}
	for task, n := range carried {
		if !strings.Contains(task, "Sub-task") {
			t.Errorf("the message reached the parent's model calls (%q), not a sub-agent's", task)
		}
		if n != after[task] {
			t.Errorf("%d of the sub-agent's %d model calls after the message carry it, want all", n, after[task])
		}
	}
	if len(after) != 3 {
		t.Errorf("after the message, model calls came from %d sessions, want 3 (the parent and both sub-agents): %v", len(after), after)
	}
	t.Logf("model calls after the message, by task: %v; carrying it: %v", after, carried)
}

// runningChildren lists a session's running sub-agents, sorted.
func runningChildren(ctx context.Context, t *testing.T, parent string) []string {
	t.Helper()
	resp, err := env.Client().ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query: fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running'", contract.SessionWorkflow)})
	if err != nil {
		t.Fatal(err)
	}
	var children []string
	for _, e := range resp.GetExecutions() {
		if id := e.GetExecution().GetWorkflowId(); contract.ParentSessionID(id) == parent {
			children = append(children, id)
		}
	}
	slices.Sort(children)
	return children
}

// TestSubAgentEscalationsAnsweredApart: two sub-agents escalate at once, and each escalation
// reaches Slack under that sub-agent's ID and path. The one answered from the terminal (`starter
// answer` with its ID) goes on and finishes while its sibling stays waiting; the sibling answered
// through Keel's Slack bot (requests signed as Slack signs them) goes on, and the parent completes
// with both results.
func TestSubAgentEscalationsAnsweredApart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	sl := newLocalSlack(t)
	sw := startScripted(t, scriptedOptions{env: []string{
		"KEEL_ESCALATION_CHANNELS=slack",
		"KEEL_ESCALATION_SLACK_BOT_TOKEN=" + e2eSlackToken,
		"KEEL_ESCALATION_SLACK_CHANNEL=" + e2eSlackChannel,
		"KEEL_ESCALATION_SLACK_API_URL=" + sl.srv.GetAPIURL(),
	}})
	// The starter puts the configured channels in a session's input; a client start names them.
	run := sw.start(ctx, fakegw.ModeDelegateEscalate, contract.Limits{MaxTurns: 60, DelegationDepth: 1, MaxChildren: 4},
		func(in *contract.SessionInput) { in.Escalation.Channels = []string{contract.ChannelSlack} })

	// A sub-agent on broken arguments escalates after its repair attempts run out.
	if !waitFor(120*time.Second, func() bool {
		waiting := 0
		for _, id := range runningChildren(ctx, t, run.GetID()) {
			if st, err := (session.TemporalAnswerer{Client: env.Client()}).Status(ctx, id); err == nil && st.Escalation != nil {
				waiting++
			}
		}
		return waiting == 2
	}) {
		t.Fatal("the two sub-agents never both waited on an escalation")
	}
	notices := map[string]postedNotice{}
	for i := range 2 {
		post := waitNth(t, sl, "chat.postMessage", &sl.posts, i)
		texts, buttons := walkBlocks(t, post.Get("blocks"))
		var v struct {
			WorkflowID string `json:"workflow_id"`
		}
		if err := json.Unmarshal([]byte(buttons["keel_edit"]), &v); err != nil || contract.ParentSessionID(v.WorkflowID) != run.GetID() {
			t.Fatalf("notice %d's edit button carries %q, want a sub-agent of %s", i+1, buttons["keel_edit"], run.GetID())
		}
		if !anyContains(texts, "sub-agent") || !anyContains(texts, "Sub-task") {
			t.Errorf("notice %d does not name the sub-agent's path: %q", i+1, texts)
		}
		notices[v.WorkflowID] = postedNotice{ts: sl.tsOf(i), blocks: post.Get("blocks"), buttons: buttons}
	}
	children := slices.Sorted(maps.Keys(notices))
	if len(children) != 2 {
		t.Fatalf("the notices name the sub-agents %v, want 2", children)
	}
	fromTerminal, fromSlack := children[0], children[1]
	if out, err := starterIn(sw.env, "escalations"); err != nil || !strings.Contains(out, fromTerminal) || !strings.Contains(out, fromSlack) {
		t.Errorf("starter escalations does not list both sub-agents: %v\n%s", err, out)
	}

	text := `use {"path":"calc.go"} and send complete JSON arguments`
	if out, err := starterIn(sw.env, "answer", fromTerminal, "edit", "--text", text); err != nil {
		t.Fatalf("starter answer %s: %v\n%s", fromTerminal, err, out)
	}
	var child contract.Summary
	if err := env.Client().GetWorkflow(ctx, fromTerminal, "").Get(ctx, &child); err != nil || child.Status != contract.StatusCompleted {
		t.Fatalf("the sub-agent answered from the terminal: %v, %+v", err, child)
	}
	st, err := session.TemporalAnswerer{Client: env.Client()}.Status(ctx, fromSlack)
	if err != nil || st.Escalation == nil {
		t.Fatalf("the sibling no longer waits on its escalation after the other's answer: %v, %+v", err, st)
	}
	waiting := len(sw.gw.Stats().Records)

	bot := startBot(t, sl.srv.GetAPIURL())
	s := &slackSession{slack: sl, notice: notices[fromSlack]}
	if code, body := bot.send(t, s.click("U2", e2eSlackTeam, "edit")); code != http.StatusOK {
		t.Fatalf("edit click: %d %q", code, body)
	}
	view := sl.waitView(t)
	if code, body := bot.send(t, s.submit("U2", view.View.PrivateMetadata, text)); code != http.StatusOK {
		t.Fatalf("view_submission: %d %q", code, body)
	}
	var sum contract.Summary
	if err := run.Get(ctx, &sum); err != nil || sum.Status != contract.StatusCompleted {
		t.Fatalf("the parent: %v, %+v", err, sum)
	}
	if err := env.Client().GetWorkflow(ctx, fromSlack, "").Get(ctx, &child); err != nil || child.Status != contract.StatusCompleted {
		t.Fatalf("the sub-agent answered from Slack: %v, %+v", err, child)
	}
	if len(sw.gw.Stats().Records) <= waiting {
		t.Errorf("no model call came after the Slack answer")
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
}

// TestSubAgentGetsOnlyWhatIsLeft: a sub-agent asked for far more turns and tokens than its
// parent has (fakegw.GreedyAsk) is started with what its parent had left after the turn that
// delegated, and still finishes its task within it.
func TestSubAgentGetsOnlyWhatIsLeft(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	sw := startScripted(t, scriptedOptions{})
	parent := contract.Limits{MaxTurns: 30, MaxTokens: 200_000, DelegationDepth: 1, MaxChildren: 4}
	run := sw.start(ctx, fakegw.ModeDelegateGreedy, parent)
	var sum contract.Summary
	if err := run.Get(ctx, &sum); err != nil || sum.Status != contract.StatusCompleted {
		t.Fatalf("the parent: %v, %+v", err, sum)
	}
	var id string
	for _, e := range sum.Events {
		if e.Event == contract.EventToolResult && e.Tool == "delegate" {
			id = regexp.MustCompile(regexp.QuoteMeta(run.GetID()+"/sub-") + `[A-Za-z0-9_-]+`).FindString(e.Text)
		}
	}
	if id == "" {
		t.Fatalf("no delegate result names the sub-agent; events %+v", sum.Events)
	}
	child := sessionInput(ctx, t, id).Limits
	// The parent had at most its 30 turns left, less the one that delegated once it counts.
	if child.MaxTurns < parent.MaxTurns-1 || child.MaxTurns > parent.MaxTurns {
		t.Errorf("the sub-agent was given %d turns, want what its parent had left of %d (it asked for 1,000)", child.MaxTurns, parent.MaxTurns)
	}
	if child.MaxTokens <= 0 || child.MaxTokens >= parent.MaxTokens {
		t.Errorf("the sub-agent was given %d tokens, want less than its parent's %d (it asked for 100 million)", child.MaxTokens, parent.MaxTokens)
	}
	t.Logf("asked %s; given %d turns and %d tokens", fakegw.GreedyAsk, child.MaxTurns, child.MaxTokens)
}

// twoChildrenSleeping starts a parent that delegates two sub-agents running `sleep 15` each and
// returns once both commands run, with the two children's IDs.
func twoChildrenSleeping(ctx context.Context, t *testing.T) (*scriptedWorker, client.WorkflowRun, []string) {
	t.Helper()
	sw := startScripted(t, scriptedOptions{})
	run := sw.start(ctx, fakegw.ModeDelegateLong, contract.Limits{MaxTurns: 60, DelegationDepth: 1, MaxChildren: 4})
	if !waitFor(90*time.Second, func() bool { return len(processesIn(sw.ws, "sleep", "15")) == 2 }) {
		t.Fatal("the two sub-agents never ran their commands at the same time")
	}
	children := runningChildren(ctx, t, run.GetID())
	if len(children) != 2 {
		t.Fatalf("running sub-agents %v, want 2", children)
	}
	return sw, run, children
}
