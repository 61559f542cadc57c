package e2e

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/app"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/demo"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/events"
)

// herdSize is how many sessions are rate limited at the same moment.
const herdSize = 50

// TestRateLimitedHerdSpreads starts 50 sessions that are all rate limited on their first model
// call (Retry-After: 1 s) and checks that their retries are spread out above the server's floor
// instead of arriving in lockstep. Bounded: 50 one-turn sessions on loopback, 2 minutes at most.
func TestRateLimitedHerdSpreads(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	gw := fakegw.New(fakegw.Options{})
	if err := gw.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	cfg := env.Config(t, map[string]any{config.LimitsMaxTurns: 1})
	c := env.Client()
	stop, err := app.StartWorker(ctx, c, cfg, gw.BaseURL()+"/v1")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	runs := make([]client.WorkflowRun, herdSize)
	for i := range runs {
		dir := t.TempDir()
		if err := demo.CopyWorkspace(dir); err != nil {
			t.Fatal(err)
		}
		runs[i], err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: cfg.Temporal.TaskQueue},
			contract.SessionWorkflow, scriptedInput(contract.SessionInput{
				// A task of its own per session, so the gateway sees 50 different first calls.
				Task:     fakegw.WithMode(fmt.Sprintf("session %d: fix the failing test", i), fakegw.ModeRateLimit),
				Limits:   cfg.Limits,
				Settings: contract.Settings{ToolSettings: contract.ToolSettings{Workdir: dir}},
			}))
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range runs {
		// One turn each: a session that used it ends as a typed limit stop carrying its summary.
		var sum contract.Summary
		if err := r.Get(ctx, &sum); err != nil {
			ended, ok := contract.EndedSummary(err)
			if !ok {
				t.Fatal(err)
			}
			sum = ended
		}
		if sum.GatewayAttempts != 2 {
			t.Fatalf("session %s: %d attempts, want 2 (ended %s: %s %s)", sum.WorkflowID, sum.GatewayAttempts, sum.Status, sum.Class, sum.Reason)
		}
	}

	var due []float64 // ms after the first retry decision at which each retry was scheduled
	var waits []float64
	var first time.Time
	// Each session's retry event, read from its history as a watcher that came late reads it.
	for _, r := range runs {
		for e := range events.Follow(ctx, c, r.GetID(), events.FollowOptions{}).Events() {
			if e.Event != contract.EventRetry {
				continue
			}
			if first.IsZero() || e.Time.Before(first) {
				first = e.Time
			}
			waits = append(waits, float64(e.WaitMS))
			due = append(due, float64(e.Time.UnixMilli()+e.WaitMS))
		}
	}
	if len(waits) != herdSize {
		t.Fatalf("%d retry events, want one per session (%d)", len(waits), herdSize)
	}
	for i := range due {
		due[i] -= float64(first.UnixMilli())
	}
	slices.Sort(waits)
	slices.Sort(due)
	spread := due[len(due)-1] - due[0]
	t.Logf("%d rate-limited sessions: waits %.0f..%.0f ms (stddev %.0f ms); retries due over %.0f ms, largest group due in one 10 ms slot: %d",
		herdSize, waits[0], waits[len(waits)-1], stddev(waits), spread, largestBucket(due, 10))
	if waits[0] < 1000 {
		t.Fatalf("a wait of %.0f ms is below the Retry-After of 1 s", waits[0])
	}
	if stddev(waits) < 20 || largestBucket(due, 10) > herdSize/5 {
		t.Fatalf("retries arrive in lockstep: stddev %.0f ms, %d due in one 10 ms slot", stddev(waits), largestBucket(due, 10))
	}
}

func stddev(xs []float64) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += x
	}
	mean := sum / float64(len(xs))
	for _, x := range xs {
		sq += (x - mean) * (x - mean)
	}
	return math.Sqrt(sq / float64(len(xs)))
}

func largestBucket(xs []float64, width float64) int {
	counts := map[int]int{}
	best := 0
	for _, x := range xs {
		b := int(x / width)
		counts[b]++
		best = max(best, counts[b])
	}
	return best
}
