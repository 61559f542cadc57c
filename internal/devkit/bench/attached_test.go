package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/testenv"
	"github.com/keelrun/keel/internal/events"
	"github.com/keelrun/keel/internal/jsondur"
	"github.com/keelrun/keel/internal/session"
)

// buildStarter compiles the shipped starter once for a benchmark, before any measurement starts.
func buildStarter(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./starter")
	cmd.Dir = testenv.RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("building the starter: %v\n%s", err, out)
	}
	return filepath.Join(dir, "starter")
}

// runAttached runs one session through the shipped starter binary (`starter run`, attached until
// the session ends, as a person runs a task) against the rig's server and worker, and checks it
// completed after every tool turn.
func runAttached(ctx context.Context, b *testing.B, starter string, srv *Server, rig *Rig, task string) time.Duration {
	b.Helper()
	start := time.Now()
	cmd := exec.CommandContext(ctx, starter, "run", "--workdir", rig.Workdir, "--output", "jsonl", task)
	cmd.Env = append(os.Environ(),
		"KEEL_TEMPORAL_ADDRESS="+srv.Address(),
		"KEEL_TEMPORAL_TASK_QUEUE="+rig.opts.TaskQueue,
		"KEEL_DEV_STATE_DIR="+b.TempDir(),
		// The rig's worker serves the scripted model; the starter only checks its configuration.
		"KEEL_GATEWAY_FAKE=true",
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("starter run: %v\nstderr:\n%s", err, stderr.String())
	}
	_, sum, err := testenv.ParseJSONL(stdout.Bytes())
	if err != nil {
		b.Fatal(err)
	}
	if want := rig.opts.ToolTurns + 1; sum.Turns != want || sum.ToolCalls != rig.opts.ToolTurns {
		b.Fatalf("the attached session ended %s after %d turns and %d tool calls, want %d and %d\n%s",
			sum.Status, sum.Turns, sum.ToolCalls, want, rig.opts.ToolTurns, stderr.String())
	}
	return time.Since(start)
}

// runWatched runs one session watched by n watchers, each a follower in this process reading its
// live events through the rig's Temporal client (events.Follow, as `starter watch` does): the
// first holds the lease in the session's input, as the starter that starts it does, and each
// other one takes its own by the watch signal, as `starter watch` does. It checks that every
// watcher got every piece of every reply, and returns how long the session took.
func runWatched(ctx context.Context, b *testing.B, rig *Rig, n int, task string) time.Duration {
	b.Helper()
	start := time.Now()
	in := contract.SessionInput{Task: task, Limits: contract.Limits{MaxTurns: rig.opts.ToolTurns + 5},
		Watchers: []contract.Watch{{Watcher: "w0", Lease: jsondur.Duration(contract.WatchLease)}}}
	in.Workdir, in.HeartbeatTimeout = rig.Workdir, jsondur.Duration(rig.opts.HeartbeatTimeout)
	run, err := rig.Client.ExecuteWorkflow(ctx, rig.startOptions(uniq("watched")), contract.SessionWorkflow, in)
	if err != nil {
		b.Fatal(err)
	}
	sc := session.Client{Temporal: rig.Client}
	got := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		if i > 0 {
			if err := sc.Watch(ctx, run.GetID(), contract.Watch{Watcher: fmt.Sprintf("w%d", i), Lease: jsondur.Duration(contract.WatchLease)}); err != nil {
				b.Fatal(err)
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for e := range events.Follow(ctx, rig.Client, run.GetID(), events.FollowOptions{}).Events() {
				if e.Event == contract.EventDelta {
					got[i]++
				}
			}
		}()
	}
	if _, err := WaitSession(ctx, run, rig.opts.ToolTurns); err != nil {
		b.Fatal(err)
	}
	wg.Wait()
	for i, g := range got {
		if g != got[0] || g == 0 {
			b.Fatalf("watcher %d got %d pieces, watcher 0 %d", i, g, got[0])
		}
	}
	return time.Since(start)
}
