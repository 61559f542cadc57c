package bench

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/devkit/testenv"
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
