package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/keelrun/keel/internal/app"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/demo"
	"github.com/keelrun/keel/internal/devkit/devserver"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/jsondur"
)

// TestGoalCheck: with --until, every final answer of the demo's model runs the check. A check
// that fails twice and then passes is run three times, its two failures are fed back and the
// session completes; one that fails the same way every time escalates after the third run.
func TestGoalCheck(t *testing.T) {
	for _, tc := range []struct {
		name, check string
		status      string
		checks      int
		failed      int
		// fed is how many failures a later model call was given: the last one before an
		// escalation goes to a person instead.
		fed int
	}{
		{"fails twice then passes", fakegw.GoalCheck(2), contract.StatusCompleted, 3, 2, 2},
		{"same failure three times", fakegw.GoalCheckSame, contract.StatusAborted, 3, 3, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runStarter(t, []string{"KEEL_ESCALATION_DEADLINE=2s"}, "demo", "--until", tc.check, "--output", "jsonl")
			if r.Summary.Status != tc.status {
				t.Fatalf("status %q (reason %q), want %q\nstderr: %s", r.Summary.Status, r.Summary.Reason, tc.status, r.Stderr)
			}
			var checks, failed, fedBack int
			var esc *contract.Escalation
			for _, e := range r.Events {
				switch e.Event {
				case contract.EventCheck:
					checks++
					if e.IsError {
						failed++
						if !strings.Contains(e.Text, "FAIL: TestGoal") || !strings.Contains(e.Text, "exit status 1") {
							t.Errorf("a failed check's event does not show its status and output: %q", e.Text)
						}
					}
				case contract.EventEscalation:
					esc = e.Escalation
				}
			}
			if checks != tc.checks || failed != tc.failed || r.Summary.Checks != tc.checks {
				t.Fatalf("%d check events (%d failed), summary checks %d; want %d (%d failed)", checks, failed, r.Summary.Checks, tc.checks, tc.failed)
			}
			for _, in := range turnInputs(t, r.Summary.WorkflowID) {
				for _, m := range in.Pending {
					if m.Role == contract.RoleUser && m.Note == "check" && strings.Contains(m.Content, "FAIL: TestGoal") {
						fedBack++
					}
				}
			}
			if fedBack != tc.fed {
				t.Errorf("%d check failures fed back to the model, want %d", fedBack, tc.fed)
			}
			if tc.status == contract.StatusAborted {
				if esc == nil || esc.Reason != contract.ReasonGoalCheck || !strings.Contains(esc.Summary, "3 times in a row") || !strings.Contains(esc.Summary, "sh -c") {
					t.Fatalf("escalation %+v, want one naming the repeated check failure", esc)
				}
			}
		})
	}
}

// turnInputs reads the inputs of a session's turns from their histories: what each model call was
// given beyond the stored transcript (the check feedback among it).
func turnInputs(t *testing.T, wid string) []contract.TurnInput {
	t.Helper()
	ctx := context.Background()
	var out []contract.TurnInput
	for turn := 1; ; turn++ {
		it := env.Client().GetWorkflowHistory(ctx, contract.TurnWorkflowID(wid, turn), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		if !it.HasNext() {
			return out
		}
		e, err := it.Next()
		if err != nil {
			return out
		}
		var in contract.TurnInput
		if a := e.GetWorkflowExecutionStartedEventAttributes(); a != nil {
			if err := converter.GetDefaultDataConverter().FromPayloads(a.GetInput(), &in); err != nil {
				t.Fatalf("decoding turn %d's input: %v", turn, err)
			}
		}
		out = append(out, in)
	}
}

// TestUsageLimitAfterDeadline: a reset two hours out, past a session's one-hour limit, escalates
// at once, naming the reset time; the gateway is not asked again.
func TestUsageLimitAfterDeadline(t *testing.T) {
	gw := startUsageGateway(t, 0)
	start := time.Now()
	r := runStarter(t, []string{"KEEL_GATEWAY_BASE_URL=" + gw.BaseURL() + "/v1", "KEEL_ESCALATION_DEADLINE=2s"},
		"demo", "--inject", fakegw.ModeUsageLimit, "--max-duration", "1h", "--output", "jsonl")
	if r.Summary.Status != contract.StatusAborted {
		t.Fatalf("status %q (reason %q), want aborted after the escalation's deadline\nstderr: %s", r.Summary.Status, r.Summary.Reason, r.Stderr)
	}
	var esc contract.Event
	for _, e := range r.Events {
		if e.Event == contract.EventEscalation {
			esc = e
		}
	}
	if esc.Escalation == nil || esc.Escalation.Reason != contract.ReasonUsageLimit {
		t.Fatalf("no usage-limit escalation in %d events:\n%s", len(r.Events), r.Stdout)
	}
	want := []string{start.Add(2 * time.Hour).UTC().Format("15:04"), start.Add(2*time.Hour + time.Minute).UTC().Format("15:04")}
	if !strings.Contains(esc.Escalation.Summary, "resets at "+want[0]) && !strings.Contains(esc.Escalation.Summary, "resets at "+want[1]) {
		t.Errorf("the escalation %q does not name the reset at %s UTC", esc.Escalation.Summary, want[0])
	}
	if after := esc.Time.Sub(start); after > 60*time.Second {
		t.Errorf("the escalation came %s after the start: not at once", after)
	}
	if n := len(gw.Stats().ForMode(fakegw.ModeUsageLimit)); n != 1 {
		t.Errorf("the gateway saw %d requests, want 1", n)
	}
}

// TestCancelDuringUsageWait: Ctrl+C while the session waits two hours for a usage limit ends it
// at once: the starter exits 130 and the gateway is not asked again.
func TestCancelDuringUsageWait(t *testing.T) {
	gw := startUsageGateway(t, 0)
	l := startLive(t, []string{"KEEL_GATEWAY_BASE_URL=" + gw.BaseURL() + "/v1"},
		"demo", "--inject", fakegw.ModeUsageLimit, "--max-duration", "3h", "--output", "jsonl")
	wait := l.waitEvent(60*time.Second, "the wait event", func(e contract.Event) bool { return e.Event == contract.EventWait })
	if wait.WaitMS < (119 * time.Minute).Milliseconds() {
		t.Fatalf("the session waits %d ms, want about 2 h", wait.WaitMS)
	}
	cancelled := time.Now()
	if err := l.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	r := l.finish()
	took := time.Since(cancelled)
	t.Logf("cancel to the starter's exit during a 2 h wait: %s", took.Round(time.Millisecond))
	if r.Code != 130 || r.Summary.Status != contract.StatusCancelled {
		t.Fatalf("exit %d, status %q; want 130 and cancelled\nstderr: %s", r.Code, r.Summary.Status, r.Stderr)
	}
	if took > 10*time.Second {
		t.Errorf("the session ended %s after the cancel, want at once", took)
	}
	if r.Summary.Waits != 1 {
		t.Errorf("summary waits %d, want 1", r.Summary.Waits)
	}
	if n := len(gw.Stats().ForMode(fakegw.ModeUsageLimit)); n != 1 {
		t.Errorf("the gateway saw %d requests, want 1", n)
	}
}

// TestUsageLimitWaitsOnATimer runs on a dev server of its own, whose `action` counter only its
// sessions move. A 429 with a reset two hours ahead: the session waits on a two-hour timer, not
// an activity retry, `starter list` says so, a worker killed and restarted changes nothing, and
// the wait costs under 5 actions over a 10 s window. A reset six seconds ahead (beyond the 1 s
// retry cap) is waited out the same way with the worker killed and restarted during the wait,
// and the call is then made once more and the session completes.
func TestUsageLimitWaitsOnATimer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	metricsPort := freePort(t)
	srv, err := devserver.Start(ctx, devserver.Options{MetricsPort: metricsPort, Progress: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Stop() }()
	c := srv.Client()
	if err := app.EnsureSearchAttributes(ctx, c, "default"); err != nil {
		t.Fatal(err)
	}
	workerBin, err := env.Build("./internal/devkit/recworker")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("two hours", func(t *testing.T) {
		gw := startUsageGateway(t, 0)
		environ := env.StarterEnv(t, "KEEL_TEMPORAL_ADDRESS="+srv.Address(), "KEEL_GATEWAY_FAKE=true", "KEEL_GATEWAY_BASE_URL="+gw.BaseURL()+"/v1")
		w := &workerProc{bin: workerBin, args: []string{"-effect-log", filepath.Join(t.TempDir(), "effects.jsonl")}, env: environ, t: t}
		w.start()
		defer w.kill()
		run := startUsageSession(ctx, t, c, environ, 3*time.Hour)
		timer := waitTimer(ctx, t, c, run.GetID())
		if d := timer.GetStartToFireTimeout().AsDuration(); d < 2*time.Hour-time.Minute || d > 2*time.Hour {
			t.Errorf("the timer waits %s, want about 2 h", d)
		}
		requireOneAttempt(ctx, t, c, contract.TurnWorkflowID(run.GetID(), 1))
		w.kill()
		w.start()

		// The server counts what the start cost a moment after it: measure from when it is still.
		var before map[string]float64
		if !waitFor(20*time.Second, func() bool {
			prev := actions(t, metricsPort)
			time.Sleep(time.Second)
			before = actions(t, metricsPort)
			n, _ := actionsSince(prev, before)
			return n == 0
		}) {
			t.Fatal("the action counter did not settle")
		}
		window := 10 * time.Second
		time.Sleep(window) // a measurement window, not a wait for something to happen
		spent, what := actionsSince(before, actions(t, metricsPort))
		t.Logf("Temporal actions during %s of a 2 h usage-limit wait, the worker restarted before it: %v %v", window, spent, what)
		if spent >= 5 {
			t.Errorf("the wait spent %v actions in %s, want under 5", spent, window)
		}

		list := exec.Command(starter, "list", "--status", contract.StatusWaitingReset)
		list.Env = environ
		out, err := list.CombinedOutput()
		if err != nil {
			t.Fatalf("starter list: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), run.GetID()) || !strings.Contains(string(out), "waiting for the usage limit to reset at") {
			t.Errorf("starter list does not show the wait:\n%s", out)
		}
		if err := c.CancelWorkflow(ctx, run.GetID(), ""); err != nil {
			t.Fatal(err)
		}
		var sum contract.Summary
		if err := run.Get(ctx, &sum); err == nil || !strings.Contains(err.Error(), "cancel") {
			t.Fatalf("the session ended with %v, want cancelled", err)
		}
		if n := len(gw.Stats().ForMode(fakegw.ModeUsageLimit)); n != 1 {
			t.Errorf("the gateway saw %d requests, want 1", n)
		}
	})

	t.Run("six seconds, worker restarted", func(t *testing.T) {
		gw := startUsageGateway(t, 6*time.Second)
		environ := env.StarterEnv(t, "KEEL_TEMPORAL_ADDRESS="+srv.Address(), "KEEL_GATEWAY_FAKE=true", "KEEL_GATEWAY_BASE_URL="+gw.BaseURL()+"/v1")
		w := &workerProc{bin: workerBin, args: []string{"-effect-log", filepath.Join(t.TempDir(), "effects.jsonl")}, env: environ, t: t}
		w.start()
		defer w.kill()
		run := startUsageSession(ctx, t, c, environ, time.Hour)
		timer := waitTimer(ctx, t, c, run.GetID())
		if d := timer.GetStartToFireTimeout().AsDuration(); d < 4*time.Second || d > 6*time.Second {
			t.Errorf("the timer waits %s, want about 6 s", d)
		}
		w.kill()
		w.start()
		var sum contract.Summary
		if err := run.Get(ctx, &sum); err != nil {
			t.Fatal(err)
		}
		if sum.Status != contract.StatusCompleted || sum.Waits != 1 || sum.WaitedMS < 4000 {
			t.Fatalf("summary %+v, want completed after one wait of about 6 s", sum)
		}
		requireOneAttempt(ctx, t, c, contract.TurnWorkflowID(run.GetID(), 1))
		first := 0
		for _, rec := range gw.Stats().ForMode(fakegw.ModeUsageLimit) {
			if rec.First {
				first++
			}
		}
		if first != 2 {
			t.Errorf("the gateway saw the first call %d times, want 2 (refused, then once after the reset)", first)
		}
	})
}

// startUsageGateway starts a fake gateway whose usage_limit mode resets after reset (its default
// of two hours when zero).
func startUsageGateway(t *testing.T, reset time.Duration) *fakegw.Server {
	t.Helper()
	gw := fakegw.New(fakegw.Options{UsageReset: reset})
	if err := gw.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	return gw
}

// startUsageSession starts a demo session in usage_limit mode with a 1 s retry cap.
func startUsageSession(ctx context.Context, t *testing.T, c client.Client, environ []string, limit time.Duration) client.WorkflowRun {
	t.Helper()
	ws := t.TempDir()
	if err := demo.CopyWorkspace(ws); err != nil {
		t.Fatal(err)
	}
	in := contract.SessionInput{Task: fakegw.WithMode("fix the failing test", fakegw.ModeUsageLimit),
		Limits: contract.Limits{MaxTurns: 20, MaxDuration: jsondur.Duration(limit)}}
	in.Workdir = ws
	in.Retry = contract.RetryConfig{Base: jsondur.Duration(100 * time.Millisecond), Cap: jsondur.Duration(time.Second)}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: envValue(environ, "KEEL_TEMPORAL_TASK_QUEUE")}, contract.SessionWorkflow, in)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// waitTimer waits for the session's usage-limit timer to start and returns it.
func waitTimer(ctx context.Context, t *testing.T, c client.Client, wid string) *historypb.TimerStartedEventAttributes {
	t.Helper()
	var found *historypb.TimerStartedEventAttributes
	if !waitFor(60*time.Second, func() bool {
		it := c.GetWorkflowHistory(ctx, wid, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				return false
			}
			if a := e.GetTimerStartedEventAttributes(); a != nil && strings.Contains(string(e.GetUserMetadata().GetSummary().GetData()), "usage limit resets") {
				found = a
			}
		}
		return found != nil
	}) {
		t.Fatal("the session started no usage-limit timer")
	}
	return found
}

// requireOneAttempt checks that the turn's model call was attempted once: the limit was not
// retried by Temporal.
func requireOneAttempt(ctx context.Context, t *testing.T, c client.Client, turnID string) {
	t.Helper()
	it := c.GetWorkflowHistory(ctx, turnID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	scheduled, maxAttempt := 0, int32(0)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == contract.CallModelActivity {
			scheduled++
		}
		if a := e.GetActivityTaskStartedEventAttributes(); a != nil {
			maxAttempt = max(maxAttempt, a.GetAttempt())
		}
	}
	if scheduled != 1 || maxAttempt != 1 {
		t.Errorf("turn %s: %d model calls scheduled, highest attempt %d; want 1 and 1", turnID, scheduled, maxAttempt)
	}
}

// actions reads the dev server's `action` counter, per label set: the Temporal actions so far.
func actions(t *testing.T, port int) map[string]float64 {
	t.Helper()
	page := scrape(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(page))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "action{") && !strings.HasPrefix(line, "action ") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] += v
		}
	}
	return out
}

// actionsSince sums the actions counted after before, and names them.
func actionsSince(before, after map[string]float64) (float64, []string) {
	var total float64
	var what []string
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			total += d
			what = append(what, fmt.Sprintf("%s +%v", k, d))
		}
	}
	return total, what
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
