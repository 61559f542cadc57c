package e2e

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/keelrun/keel/internal/app"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/devkit/testenv"
)

// cancelWays are the ways a person stops a session, each with one behaviour. A way may run beside
// the test's goroutine (`starter cancel` returns only once the session ended), so it reports a
// failure with Error, not Fatal.
var cancelWays = []struct {
	name   string
	cancel func(t testing.TB, l *liveRun, wid string)
}{
	{"SIGINT to the starter", func(t testing.TB, l *liveRun, _ string) {
		if err := l.cmd.Process.Signal(os.Interrupt); err != nil {
			t.Error(err)
		}
	}},
	{"starter cancel", func(t testing.TB, _ *liveRun, wid string) {
		cmd := exec.Command(starter, "cancel", wid)
		cmd.Env = env.StarterEnv(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("starter cancel: %v\n%s", err, out)
		}
	}},
	{"cancel signal", func(t testing.TB, _ *liveRun, wid string) {
		err := env.Client().SignalWorkflow(context.Background(), wid, "", contract.SignalCancel, contract.CancelRequest{Reason: "test", By: "slack:U1"})
		if err != nil {
			t.Error(err)
		}
	}},
	{"Web UI cancel (native cancellation)", func(t testing.TB, _ *liveRun, wid string) {
		if err := env.Client().CancelWorkflow(context.Background(), wid, ""); err != nil {
			t.Error(err)
		}
	}},
}

// TestCancelLongCommand: a running `sleep 15` is gone within a second of the cancel reaching the
// session, whichever way it came, the session ends cancelled and the starter exits 130. The
// second counts from the cancel in the session's history: before it, a `starter cancel` process
// starts and connects, which takes what the machine gives it (over a second with two CPU burners
// beside the suite); that time is logged.
func TestCancelLongCommand(t *testing.T) {
	for _, way := range cancelWays {
		t.Run(way.name, func(t *testing.T) {
			t.Parallel()
			l := startLive(t, nil, "demo", "--inject", "long_command", "--output", "jsonl")
			ws := strings.TrimPrefix(l.waitEvent(30*time.Second, "workspace", func(e contract.Event) bool {
				return strings.HasPrefix(e.Text, "workspace: ")
			}).Text, "workspace: ")
			wid := l.workflowID()
			l.waitEvent(30*time.Second, "sleep tool call", func(e contract.Event) bool {
				return e.Event == contract.EventToolCall && strings.Contains(e.Arguments, "sleep 15")
			})
			if !waitFor(10*time.Second, func() bool { return len(processesIn(ws, "sleep", "15")) == 1 }) {
				t.Fatal("the sleep command never ran")
			}
			cancelled := time.Now()
			sent := make(chan struct{})
			go func() {
				defer close(sent)
				way.cancel(t, l, wid)
			}()
			gone := waitFor(5*time.Second, func() bool { return len(processesIn(ws, "sleep", "15")) == 0 })
			reaped := time.Now()
			<-sent
			if !gone {
				t.Fatalf("sleep 15 still alive 5 s after the cancel: %v", processesIn(ws, "sleep", "15"))
			}
			r := l.finish()
			arrived := cancelArrived(t, wid)
			t.Logf("cancel to reaped: %s, %s of it before the cancel reached the session",
				reaped.Sub(cancelled).Round(time.Millisecond), arrived.Sub(cancelled).Round(time.Millisecond))
			if d := reaped.Sub(arrived); d > time.Second {
				t.Errorf("the command outlived the cancel by %s after it reached the session, want at most 1 s", d)
			}
			if r.Code != 130 || r.Summary.Status != contract.StatusCancelled {
				t.Fatalf("exit %d, status %q; want 130 and cancelled\nstderr: %s", r.Code, r.Summary.Status, r.Stderr)
			}
			requireTemporalEnd(t, r.Summary)
			requireStamped(t, r)
			// The long command ran in a turn whose model call had completed: the summary says so.
			if s := r.Summary; s.Turns < 1 || s.ToolCalls < 1 || s.GatewayCalls < 1 || s.Tokens <= 0 {
				t.Fatalf("the cancelled session's summary hides what happened: %+v", s)
			}
		})
	}
}

// cancelArrived is when the session's history recorded its cancel: the cancel signal or
// Temporal's own cancel request.
func cancelArrived(t *testing.T, wid string) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	it := env.Client().GetWorkflowHistory(ctx, wid, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatalf("reading the history of %s: %v", wid, err)
		}
		if ev.GetWorkflowExecutionCancelRequestedEventAttributes() != nil ||
			ev.GetWorkflowExecutionSignaledEventAttributes().GetSignalName() == contract.SignalCancel {
			return ev.GetEventTime().AsTime()
		}
	}
	t.Fatalf("the history of %s records no cancel", wid)
	return time.Time{}
}

// TestCancelSlowStream: a cancel during a slow model stream closes the HTTP connection (the gateway
// sees the disconnect) and the text received so far is kept.
func TestCancelSlowStream(t *testing.T) {
	gw := fakegw.New(fakegw.Options{})
	if err := gw.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	l := startLive(t, []string{"KEEL_GATEWAY_BASE_URL=" + gw.BaseURL() + "/v1"}, "demo", "--inject", "slow_stream", "--output", "jsonl")
	deltas := 0
	l.waitEvent(30*time.Second, "three deltas", func(e contract.Event) bool {
		if e.Event == contract.EventDelta {
			deltas++
		}
		return deltas >= 3
	})
	if err := l.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := gw.WaitStats(ctx, func(s fakegw.Stats) bool { return s.Disconnects > 0 }); err != nil {
		t.Fatalf("the gateway never saw the connection close: %v", err)
	}
	r := l.finish()
	if r.Code != 130 || r.Summary.Status != contract.StatusCancelled {
		t.Fatalf("exit %d, status %q; want 130 and cancelled", r.Code, r.Summary.Status)
	}
	var shown strings.Builder
	for _, e := range r.Events {
		if e.Event == contract.EventDelta {
			shown.WriteString(e.Text)
		}
	}
	if r.Summary.Answer == "" || r.Summary.Answer != shown.String() {
		t.Fatalf("kept %q, but the user saw %q", r.Summary.Answer, shown.String())
	}
}

// TestLimits: each limit stops the demo with status limit naming it, exit 3, and a record of it in
// the transcript.
func TestLimits(t *testing.T) {
	cases := []struct {
		args  []string
		limit string
		text  string
	}{
		{[]string{"--max-turns", "2"}, contract.LimitTurns, "stopped: 2 of 2 turns used"},
		{[]string{"--max-tokens", "500"}, contract.LimitTokens, "of 500 tokens used"},
		// The demo finishes in about 3 s, so the duration case runs a long command, which also
		// shows the timer stopping a turn stuck in a tool.
		{[]string{"--max-duration", "3s", "--inject", "long_command"}, contract.LimitDuration, "of 3s used"},
	}
	for _, c := range cases {
		t.Run(c.limit, func(t *testing.T) {
			t.Parallel()
			r := runStarter(t, nil, append([]string{"demo", "--output", "jsonl"}, c.args...)...)
			s := r.Summary
			if r.Code != 3 || s.Status != contract.StatusLimit || s.Limit != c.limit || !strings.Contains(s.Reason, c.text) {
				t.Fatalf("exit %d, summary %+v; want exit 3, limit %s, reason containing %q", r.Code, s, c.limit, c.text)
			}
			requireTemporalEnd(t, s)
			requireStamped(t, r)
			limitEvent := false
			for _, e := range r.Events {
				limitEvent = limitEvent || (e.Event == contract.EventLimit && e.Limit == c.limit)
			}
			if !limitEvent {
				t.Error("no limit event was printed")
			}
			if tr := transcript(t, s.WorkflowID); !hasNote(tr, "limit", c.text) {
				t.Fatalf("the transcript has no record of the limit: %+v", tr.Pending)
			}
		})
	}
}

// transcript queries a finished session; a worker started on the session's own task queue answers
// the query (the demo's worker polled a queue of its own process, which ended with it).
func transcript(t *testing.T, wid string) contract.Transcript {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	desc, err := env.Client().DescribeWorkflow(ctx, wid, "")
	if err != nil {
		t.Fatal(err)
	}
	cfg := env.Config(t, nil)
	cfg.Temporal.TaskQueue = desc.TaskQueueName
	stop, err := app.StartWorker(ctx, env.Client(), cfg, "http://127.0.0.1:1/v1")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	v, err := env.Client().QueryWorkflow(ctx, wid, "", contract.QueryTranscript)
	if err != nil {
		t.Fatal(err)
	}
	var tr contract.Transcript
	if err := v.Get(&tr); err != nil {
		t.Fatal(err)
	}
	return tr
}

func hasNote(tr contract.Transcript, note, text string) bool {
	for _, m := range tr.Pending {
		if m.Note == note && strings.Contains(m.Content, text) {
			return true
		}
	}
	return false
}

// waitFor polls cond until it holds or the timeout passes.
var waitFor = testenv.WaitFor
