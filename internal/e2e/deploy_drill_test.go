package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/demo"
	"github.com/keelrun/keel/internal/devkit/devserver"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/devkit/testenv"
	"github.com/keelrun/keel/internal/jsondur"
)

// The deploy drill's deployment, its two builds, and its bounds: deployEarly sessions are
// mid-turn on build A when build B is released, deployLate start after it; deployBudget bounds
// the whole drill.
const (
	deployName   = "keel-drill"
	deployBuildA = "a"
	deployBuildB = "b"
	deployEarly  = 4
	deployLate   = 2
	deployBudget = 4 * time.Minute
	// deployMemo is the memo key build B's session change sets (internal/devkit/recworker's
	// nextbuild.go, which only a build with its tag compiles).
	deployMemo = "keel-drill-build"
)

// TestDeployDrill follows docs/operations.md's release procedure with two real builds of the
// worker: sessions mid-turn on build A (a command held until B is current), build B deployed (every tool
// reworded, a session change behind workflow.GetVersion), ramped, made current, build A drained
// and stopped. Every session completes, no workflow task failed in any history (a
// nondeterminism error is one), no tool ran twice (the tools' own side-effect logs), the early
// sessions' first commands ran on A and their later tools on B, and only the sessions started
// on B took its versioned change.
func TestDeployDrill(t *testing.T) {
	if testing.Short() {
		t.Skip("the deploy drill takes about a minute")
	}
	ctx, cancel := context.WithTimeout(context.Background(), deployBudget)
	defer cancel()
	started := time.Now()
	d := startDeployDrill(ctx, t)

	// Step 0: build A serves the deployment. Its first worker made itself current.
	a := d.worker(deployBuildA, "-hold", d.hold)
	a.waitFor(ctx, "worker version current")
	d.release(ctx, "status").contains("current " + deployBuildA)
	var early []string
	for i := range deployEarly {
		early = append(early, d.startSession(ctx, fmt.Sprintf("early-%d", i)))
	}
	for _, id := range early {
		waitEffect(ctx, t, a.effects, id)
	}

	// Steps 1-4 of the release: deploy B (it takes nothing yet), ramp it, make it current, wait
	// until no turn runs on A, stop A.
	b := d.worker(deployBuildB)
	b.waitFor(ctx, "worker version not current")
	t.Logf("%.1fs: %d sessions mid-turn on build A", time.Since(started).Seconds(), len(early))
	d.release(ctx, "ramp", deployBuildB, "50").contains("ramps at 50%")
	d.release(ctx, "status").contains("ramping " + deployBuildB + " at 50%")
	d.release(ctx, "current", deployBuildB).contains("is current")
	d.releaseExit(ctx, 1, "drain", deployBuildA).contains(fmt.Sprintf("%d turns still run on it", deployEarly))
	// The commands on A may run now: their turns end there, and their sessions move to B.
	if err := os.WriteFile(d.hold, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var late []string
	for i := range deployLate {
		late = append(late, d.startSession(ctx, fmt.Sprintf("late-%d", i)))
	}
	d.release(ctx, "drain", deployBuildA, "--wait", "2m").contains("is drained")
	t.Logf("%.1fs: build A drained", time.Since(started).Seconds())
	a.stop()
	d.release(ctx, "status").contains("current " + deployBuildB)

	for _, id := range append(append([]string{}, early...), late...) {
		d.finish(ctx, id)
	}

	combined := filepath.Join(t.TempDir(), "effects.jsonl")
	concatFiles(t, combined, a.effects, b.effects)
	dups, total := duplicateExecutions(t, combined)
	if len(dups) > 0 {
		t.Errorf("tool activities executed more than once: %v", dups)
	}
	for _, id := range early {
		if !fileHas(a.effects, `"`+id+`/turn-1"`) {
			t.Errorf("%s: its first command did not run on build A", id)
		}
		if !fileHas(b.effects, `"`+id+`/turn-`) {
			t.Errorf("%s: none of its later tools ran on build B: the session did not move", id)
		}
		if d.memo(ctx, id) != "" {
			t.Errorf("%s, started on A, took build B's versioned change on replay", id)
		}
	}
	for _, id := range late {
		if fileHas(a.effects, `"`+id+`/`) {
			t.Errorf("%s, started after the release, ran a tool on build A", id)
		}
		if got := d.memo(ctx, id); got != "b" {
			t.Errorf("%s, started on B, has memo %s %q, want b (the versioned change)", id, deployMemo, got)
		}
	}
	t.Logf("%d sessions, %d tool executions (%d on A, %d on B), %d duplicates, %.1fs",
		len(early)+len(late), total, countLines(a.effects), countLines(b.effects), len(dups), time.Since(started).Seconds())
}

// deployDrill is one run of the drill: its own Temporal server, gateway and the two builds.
type deployDrill struct {
	t      *testing.T
	srv    *devserver.Server
	addr   string
	env    []string
	queue  string
	bins   map[string]string
	procs  []*buildWorker
	prefix string
	// hold is the file build A's tools wait for: the drill keeps the early sessions mid-turn
	// on A until B is current.
	hold string
}

func startDeployDrill(ctx context.Context, t *testing.T) *deployDrill {
	t.Helper()
	binA, err := env.Build("./internal/devkit/recworker")
	if err != nil {
		t.Fatal(err)
	}
	binB := buildNext(ctx, t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	srv, err := devserver.Start(ctx, devserver.Options{Address: addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	gw := fakegw.New(fakegw.Options{})
	if err := gw.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	e := env.StarterEnv(t, "KEEL_GATEWAY_FAKE=true", "KEEL_GATEWAY_BASE_URL="+gw.BaseURL()+"/v1",
		"KEEL_TEMPORAL_ADDRESS="+addr, "KEEL_STORE_PATH="+filepath.Join(t.TempDir(), "store"), "KEEL_TEMPORAL_DEPLOYMENT="+deployName)
	d := &deployDrill{t: t, srv: srv, addr: addr, env: e, queue: envValue(e, "KEEL_TEMPORAL_TASK_QUEUE"),
		bins: map[string]string{deployBuildA: binA, deployBuildB: binB}, prefix: fmt.Sprintf("deploy-%d", time.Now().UnixNano()),
		hold: filepath.Join(t.TempDir(), "release-done")}
	t.Cleanup(func() {
		for _, p := range d.procs {
			p.kill()
		}
	})
	return d
}

// buildNext compiles build B: the recording worker with the drill's next-build tag.
func buildNext(ctx context.Context, t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "recworker-b")
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", "keel_drill_b", "-o", out, "./internal/devkit/recworker")
	cmd.Dir = testenv.RepoRoot()
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building build B: %v\n%s", err, b)
	}
	return out
}

// worker starts a worker process of build, as deploying that build would.
func (d *deployDrill) worker(build string, args ...string) *buildWorker {
	d.t.Helper()
	w := &buildWorker{t: d.t, build: build, effects: filepath.Join(d.t.TempDir(), "effects-"+build+".jsonl"), stderr: &syncBuffer{}}
	w.cmd = exec.Command(d.bins[build], append([]string{"-effect-log", w.effects}, args...)...)
	w.cmd.Env = append(append([]string{}, d.env...), "KEEL_TEMPORAL_BUILD_ID="+build)
	w.cmd.Stderr = w.stderr
	if err := w.cmd.Start(); err != nil {
		d.t.Fatalf("starting build %s: %v", build, err)
	}
	w.exited = make(chan struct{})
	go func() { _ = w.cmd.Wait(); close(w.exited) }()
	d.procs = append(d.procs, w)
	return w
}

// release runs `starter release ARGS` as a person following docs/operations.md would.
func (d *deployDrill) release(ctx context.Context, args ...string) releaseOut {
	d.t.Helper()
	return d.releaseExit(ctx, 0, args...)
}

// releaseExit is release for a command that must exit with code.
func (d *deployDrill) releaseExit(ctx context.Context, code int, args ...string) releaseOut {
	d.t.Helper()
	cmd := exec.CommandContext(ctx, starter, append([]string{"release"}, args...)...)
	cmd.Env = d.env
	out, err := cmd.CombinedOutput()
	if got := cmd.ProcessState.ExitCode(); got != code {
		d.t.Fatalf("starter release %s: exit %d (%v), want %d\n%s", strings.Join(args, " "), got, err, code, out)
	}
	d.t.Logf("starter release %s:\n%s", strings.Join(args, " "), out)
	return releaseOut{t: d.t, args: args, out: string(out)}
}

type releaseOut struct {
	t    *testing.T
	args []string
	out  string
}

func (r releaseOut) contains(want string) {
	r.t.Helper()
	if !strings.Contains(r.out, want) {
		r.t.Fatalf("starter release %s does not say %q:\n%s", strings.Join(r.args, " "), want, r.out)
	}
}

// startSession starts a session whose first turn runs a six-second command, then follows the
// demo script's turns, each with tools (on build A, every tool waits for the hold file).
func (d *deployDrill) startSession(ctx context.Context, name string) string {
	d.t.Helper()
	id := d.prefix + "-" + name
	dir := d.t.TempDir()
	if err := demo.CopyWorkspace(dir); err != nil {
		d.t.Fatal(err)
	}
	_, err := d.srv.Client().ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: d.queue}, contract.SessionWorkflow, contract.SessionInput{
		Task:     fakegw.WithMode("deploy drill: fix the failing test", fakegw.ModeChattyCommand),
		Limits:   contract.Limits{MaxTurns: 30},
		Settings: contract.Settings{ToolSettings: contract.ToolSettings{Workdir: dir}, HeartbeatTimeout: jsondur.Duration(testHeartbeatTimeout)},
	})
	if err != nil {
		d.t.Fatalf("starting session %s: %v", id, err)
	}
	return id
}

// finish waits for a session to complete and checks that no workflow task of it or of its
// turns failed.
func (d *deployDrill) finish(ctx context.Context, id string) {
	d.t.Helper()
	var sum contract.Summary
	if err := d.srv.Client().GetWorkflow(ctx, id, "").Get(ctx, &sum); err != nil {
		d.t.Fatalf("session %s: %v\nworker stderr:\n%s", id, err, d.stderrs())
	}
	if sum.Status != contract.StatusCompleted {
		d.t.Errorf("session %s ended %s (%s)", id, sum.Status, sum.Reason)
	}
	d.noFailedTasks(ctx, id)
	for n := 1; n <= sum.Turns; n++ {
		d.noFailedTasks(ctx, contract.TurnWorkflowID(id, n))
	}
}

// noFailedTasks fails the test for every failed workflow task in the workflow's runs: a
// nondeterminism error (a build that cannot replay what another recorded) shows as one.
func (d *deployDrill) noFailedTasks(ctx context.Context, wid string) {
	d.t.Helper()
	it := d.srv.Client().GetWorkflowHistory(ctx, wid, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			var nf *serviceerror.NotFound
			if errors.As(err, &nf) {
				return
			}
			d.t.Fatalf("reading the history of %s: %v", wid, err)
		}
		if a := ev.GetWorkflowTaskFailedEventAttributes(); a != nil {
			d.t.Errorf("%s: workflow task failed (%s): %s", wid, a.GetCause(), a.GetFailure().GetMessage())
		}
	}
}

// memo is the session's memo value of build B's change, "" when it has none.
func (d *deployDrill) memo(ctx context.Context, id string) string {
	d.t.Helper()
	desc, err := d.srv.Client().DescribeWorkflow(ctx, id, "")
	if err != nil {
		d.t.Fatalf("describing %s: %v", id, err)
	}
	p, ok := desc.Memo.GetFields()[deployMemo]
	if !ok {
		return ""
	}
	var s string
	if err := converter.GetDefaultDataConverter().FromPayload(p, &s); err != nil {
		d.t.Fatalf("decoding %s's memo: %v", id, err)
	}
	return s
}

func (d *deployDrill) stderrs() string {
	var b strings.Builder
	for _, p := range d.procs {
		fmt.Fprintf(&b, "--- build %s\n%s", p.build, p.stderr.String())
	}
	return b.String()
}

// buildWorker is one worker process of one build.
type buildWorker struct {
	t       *testing.T
	build   string
	effects string
	stderr  *syncBuffer
	cmd     *exec.Cmd
	exited  chan struct{}
}

// waitFor waits until the worker's standard error says text.
func (w *buildWorker) waitFor(ctx context.Context, text string) {
	w.t.Helper()
	for !strings.Contains(w.stderr.String(), text) {
		select {
		case <-w.exited:
			w.t.Fatalf("build %s exited before saying %q:\n%s", w.build, text, w.stderr.String())
		case <-ctx.Done():
			w.t.Fatalf("build %s did not say %q in time:\n%s", w.build, text, w.stderr.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stop ends the worker as a deploy does: SIGTERM, and it must exit within its grace.
func (w *buildWorker) stop() {
	w.t.Helper()
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.exited:
	case <-time.After(30 * time.Second):
		w.t.Fatalf("build %s did not exit within 30s of SIGTERM:\n%s", w.build, w.stderr.String())
	}
}

func (w *buildWorker) kill() {
	_ = w.cmd.Process.Kill()
	<-w.exited
}

func fileHas(path, s string) bool {
	b, _ := os.ReadFile(path)
	return strings.Contains(string(b), s)
}

// concatFiles writes the files' contents, one after the other, to out; a missing file is empty.
func concatFiles(t *testing.T, out string, paths ...string) {
	t.Helper()
	var all []byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	if err := os.WriteFile(out, all, 0o644); err != nil {
		t.Fatal(err)
	}
}
