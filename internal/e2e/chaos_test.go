package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/demo"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/jsondur"
	"github.com/keelrun/keel/internal/tools/toolspec"
)

// chaosSessions and chaosKills bound the chaos test; chaosBudget bounds its time.
const (
	chaosSessions = 50
	chaosKills    = 12
	chaosBudget   = 6 * time.Minute
)

// TestChaosWorkerKills runs 50 demo sessions on a worker process that is killed (SIGKILL) and
// restarted at random moments, and checks that every session completes and that the side-effect
// log, written by the tools before each execution, shows no tool that may write ran twice.
func TestChaosWorkerKills(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos test takes a few minutes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), chaosBudget)
	defer cancel()
	worker, err := env.Build("./internal/devkit/recworker")
	if err != nil {
		t.Fatal(err)
	}
	gw := fakegw.New(fakegw.Options{})
	if err := gw.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	effects := filepath.Join(t.TempDir(), "effects.jsonl")
	workerEnv := env.StarterEnv(t, "KEEL_GATEWAY_FAKE=true", "KEEL_GATEWAY_BASE_URL="+gw.BaseURL()+"/v1")
	queue := envValue(workerEnv, "KEEL_TEMPORAL_TASK_QUEUE")

	w := &workerProc{bin: worker, args: []string{"-effect-log", effects}, env: workerEnv, t: t}
	w.start()
	defer w.kill()

	runs := startChaosSessions(ctx, t, queue)
	var done atomic.Int32
	finished := make(chan contract.Summary, len(runs))
	for _, r := range runs {
		go func() {
			var s contract.Summary
			if err := r.Get(ctx, &s); err != nil {
				s.Status, s.Reason, s.WorkflowID = "error", err.Error(), r.GetID()
			}
			done.Add(1)
			finished <- s
		}()
	}

	var points []string
	start := time.Now()
	for k := 0; k < chaosKills && int(done.Load()) < len(runs); k++ {
		pause := time.Duration(300+rand.IntN(1500)) * time.Millisecond
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			t.Fatal("time ran out while killing workers")
		}
		points = append(points, fmt.Sprintf("%.1fs (%d tool runs so far, %d sessions done)", time.Since(start).Seconds(), countLines(effects), done.Load()))
		w.kill()
		w.start()
	}
	var failed []string
	for range runs {
		select {
		case s := <-finished:
			if s.Status != contract.StatusCompleted {
				failed = append(failed, fmt.Sprintf("%s: %s (%s)", s.WorkflowID, s.Status, s.Reason))
			}
		case <-ctx.Done():
			t.Fatalf("only %d of %d sessions finished in time", done.Load(), len(runs))
		}
	}
	dups, total := duplicateExecutions(t, effects)
	t.Logf("%d sessions, %d worker kills at %s; %d tool executions logged, %d duplicates; %.0fs",
		len(runs), len(points), strings.Join(points, ", "), total, len(dups), time.Since(start).Seconds())
	if len(failed) > 0 {
		t.Errorf("%d sessions did not complete:\n%s", len(failed), strings.Join(failed, "\n"))
	}
	if len(dups) > 0 {
		t.Errorf("tool activities executed more than once: %v", dups)
	}
}

func startChaosSessions(ctx context.Context, t *testing.T, queue string) []client.WorkflowRun {
	t.Helper()
	runs := make([]client.WorkflowRun, chaosSessions)
	for i := range runs {
		dir := t.TempDir()
		if err := demo.CopyWorkspace(dir); err != nil {
			t.Fatal(err)
		}
		var err error
		runs[i], err = env.Client().ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: queue},
			contract.SessionWorkflow, contract.SessionInput{
				Task:     fmt.Sprintf("chaos session %d: fix the failing test", i),
				Limits:   contract.Limits{MaxTurns: 30},
				Settings: contract.Settings{ToolSettings: contract.ToolSettings{Workdir: dir}, HeartbeatTimeout: jsondur.Duration(testHeartbeatTimeout)},
			})
		if err != nil {
			t.Fatal(err)
		}
	}
	return runs
}

// workerProc is a worker process the test kills and restarts.
type workerProc struct {
	t    *testing.T
	bin  string
	args []string
	env  []string
	cmd  *exec.Cmd
}

func (w *workerProc) start() {
	w.cmd = exec.Command(w.bin, w.args...)
	w.cmd.Env = w.env
	if err := w.cmd.Start(); err != nil {
		w.t.Fatalf("starting the worker: %v", err)
	}
}

func (w *workerProc) kill() {
	if w.cmd != nil && w.cmd.Process != nil {
		_ = w.cmd.Process.Kill()
		_ = w.cmd.Wait()
	}
}

// duplicateExecutions reads the side-effect log: a tool activity (workflow and activity ID) that
// appears twice ran twice. Only tools that may write count: a read runs as a local activity,
// which a worker lost mid-task runs again on purpose (it changed nothing).
func duplicateExecutions(t *testing.T, path string) ([]string, int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("the side-effect log: %v", err)
	}
	defer f.Close()
	seen := map[string]int{}
	var dups []string
	total := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e struct{ Workflow, Activity, Tool string }
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("a torn line in the side-effect log: %q", sc.Text())
		}
		total++
		if spec, ok := toolspec.Lookup(toolspec.Builtin(), e.Tool); ok && toolspec.OnlyReads(spec) {
			continue
		}
		key := e.Workflow + "#" + e.Activity
		if seen[key]++; seen[key] == 2 {
			dups = append(dups, key)
		}
	}
	return dups, total
}

func countLines(path string) int {
	b, _ := os.ReadFile(path)
	return strings.Count(string(b), "\n")
}

func envValue(env []string, key string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}
