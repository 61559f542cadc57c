package e2e

import (
	"context"
	"os"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegw"
)

// retryLateness is how much later than announced a retry may reach the gateway: the failed
// attempt's report, the server's retry timer, the task's dispatch to the worker and the new
// request. On a quiet machine that is about 10 ms; the bound is a quarter of the wait, and at least
// 250 ms, so a machine busy with the rest of the suite stays inside it while the coarse server
// timer this guards against (which made the 300 and 600 ms waits about 1 s, 700 and 400 ms late)
// does not.
func retryLateness(wait time.Duration) time.Duration {
	return max(250*time.Millisecond, wait/4)
}

// TestRetryWaitsLandWhenAnnounced: a gateway that hangs up on the first three attempts, with the
// jitter fixed at its middle, gets the retries 300, 600 and 1,200 ms after the attempts before
// them, as the retry events announce, in every wire format, on the dev server Keel starts. The
// waits are the ones under a second that a coarse server timer used to stretch to about 1 s.
func TestRetryWaitsLandWhenAnnounced(t *testing.T) {
	gw := fakegw.New(fakegw.Options{})
	if err := gw.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	want := []time.Duration{300 * time.Millisecond, 600 * time.Millisecond, 1200 * time.Millisecond}
	for _, format := range allFormats {
		t.Run(format, func(t *testing.T) {
			r := runStarter(t, []string{
				"KEEL_GATEWAY_PROVIDER=" + format, "KEEL_GATEWAY_BASE_URL=" + gw.BaseURLFor(format),
				"KEEL_GATEWAY_RETRY_BASE=400ms", "KEEL_GATEWAY_RETRY_CAP=8s", "KEEL_GATEWAY_RETRY_FIXED_JITTER=0.5",
			}, "demo", "--inject", fakegw.ModeNetwork, "--output", "jsonl")
			if r.Summary.Status != contract.StatusCompleted {
				t.Fatalf("status %q, want %q (reason %q)\nstderr: %s", r.Summary.Status, contract.StatusCompleted, r.Summary.Reason, r.Stderr)
			}
			announced := map[int]time.Duration{}
			for _, e := range r.Events {
				if e.Event == contract.EventRetry {
					announced[e.Attempt] = time.Duration(e.WaitMS) * time.Millisecond
				}
			}
			var recs []fakegw.Record
			for _, rec := range gw.Stats().ForMode(fakegw.ModeNetwork) {
				if rec.Format == format && rec.First {
					recs = append(recs, rec)
				}
			}
			if len(recs) != len(want)+1 || len(announced) != len(want) {
				t.Fatalf("the gateway saw %d attempts and the user %d retry events, want %d and %d", len(recs), len(announced), len(want)+1, len(want))
			}
			for i, w := range want {
				next := i + 2
				wait, ok := announced[next]
				if !ok || wait != w {
					t.Errorf("attempt %d: announced wait %v, want %v (jitter fixed at 0.5)", next, wait, w)
					continue
				}
				gap := recs[i+1].At.Sub(recs[i].At)
				late := gap - wait
				t.Logf("attempt %d: announced %v, arrived %v after attempt %d (%+v)", next, wait, gap, next-1, late)
				if late < 0 || late > retryLateness(wait) {
					t.Errorf("attempt %d arrived %v after attempt %d, announced %v: %v off, want within 0 to %v", next, gap, next-1, wait, late, retryLateness(wait))
				}
			}
		})
	}
}

// TestCancelDuringRetryWait: a cancel while a model call waits for its next attempt ends the session
// at once, not when the wait is over, and the gateway never sees the attempt that was due.
func TestCancelDuringRetryWait(t *testing.T) {
	gw := fakegw.New(fakegw.Options{})
	if err := gw.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	// The jitter fixed at 1 makes the first wait the whole window: 8 s.
	l := startLive(t, []string{
		"KEEL_GATEWAY_BASE_URL=" + gw.BaseURL() + "/v1",
		"KEEL_GATEWAY_RETRY_BASE=8s", "KEEL_GATEWAY_RETRY_CAP=8s", "KEEL_GATEWAY_RETRY_FIXED_JITTER=1",
	}, "demo", "--inject", fakegw.ModeNetwork, "--output", "jsonl")
	retry := l.waitEvent(30*time.Second, "the retry event", func(e contract.Event) bool { return e.Event == contract.EventRetry })
	wid := l.workflowID()
	if retry.WaitMS != 8000 {
		t.Fatalf("announced wait %d ms, want 8000", retry.WaitMS)
	}
	cancelled := time.Now()
	if err := l.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	r := l.finish()
	took := time.Since(cancelled)
	t.Logf("cancel to the starter's exit, with %d ms of the wait to go: %s", retry.WaitMS, took.Round(time.Millisecond))
	if r.Code != 130 || r.Summary.Status != contract.StatusCancelled {
		t.Fatalf("exit %d, status %q; want 130 and cancelled\nstderr: %s", r.Code, r.Summary.Status, r.Stderr)
	}
	if due := time.Duration(retry.WaitMS) * time.Millisecond; took >= due {
		t.Errorf("the session ended %s after the cancel: it waited out the %s backoff", took, due)
	}
	// The turn is closed with no activity pending, so no attempt is left to reach the gateway.
	desc, err := env.Client().DescribeWorkflow(context.Background(), contract.TurnWorkflowID(wid, retry.Turn), "")
	if err != nil {
		t.Fatal(err)
	}
	d := desc.RawResponse
	if d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING || len(d.GetPendingActivities()) > 0 {
		t.Errorf("turn %d is %v with %d pending activities after the cancel, want closed with none", retry.Turn, d.GetWorkflowExecutionInfo().GetStatus(), len(d.GetPendingActivities()))
	}
	if n := len(gw.Stats().ForMode(fakegw.ModeNetwork)); n != 1 {
		t.Errorf("the gateway saw %d attempts, want 1", n)
	}
}
