//go:build linux

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/demo"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/store"
)

// workerPeakRSS is the most resident memory (VmHWM) a worker process may have reached after
// hostile sessions that tried 3 GiB of shared memory and the file tools on a 200 MiB file: the
// bound docs/benchmarks.md states for a worker process (section 9).
const workerPeakRSS = 160 << 20

// Of the worker the escape classes run on.
const (
	// nobody is the user an unprivileged worker runs as when the suite runs as root.
	nobody = 65534
	// workerProcLimit is the unprivileged worker's own process limit (RLIMIT_NPROC), which the
	// kernel counts its sandboxes' processes against.
	workerProcLimit = 2048
	// inheritedFD is a directory the worker is started with and never asked for: it must not
	// reach any command.
	inheritedFD = 10
	// fileToolAtOnce bounds a file tool's call on the big file or the named pipe, model reply and
	// workflow included: refused before anything is opened, where a blocked open used to hold the
	// call 90 s until it timed out.
	fileToolAtOnce = 5 * time.Second
)

// TestEscapeClasses drives the scripted hostile model through every class of hole a confined
// command might find (fakegw.ModeEscapeClasses: another session's data, a configuration that unconfines later
// commands, setuid files, keys, inherited descriptors, a forged report, a fork loop, 3 GiB of
// shared memory, the file tools on a 200 MiB file and a named pipe, signals to init), over real
// HTTP through a real worker process, as root and as nobody with a process limit of its own, each
// in the default flow (`starter run` in the directory it works on, no flags) and with --workdir.
// Before the hostile sessions an innocent one ran with a secret in its task; during the fork loop
// another session runs a command. Every attempt fails and the model is told what happened, no
// result holds the secret, no setuid file is left, nothing outside the work directory changes,
// the next `starter run` in the directory refuses the planted keel.yaml, the worker and the other
// sessions carry on, and the worker's peak memory stays under workerPeakRSS.
func TestEscapeClasses(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the escape classes start a root worker and one as nobody, so they need to run as root")
	}
	kinds := []struct {
		name string
		uid  int
	}{{"root worker", 0}, {"unprivileged worker", nobody}}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			r := newClassRig(t, k.uid)
			r.innocentSession()
			for _, f := range []string{"default flow", "workdir flow"} {
				t.Run(f, func(t *testing.T) { r.hostileSession(t, f == "default flow") })
			}
			peak := r.peakRSS()
			t.Logf("%s: peak RSS %d MiB after the hostile sessions (bound %d MiB)", k.name, peak>>20, workerPeakRSS>>20)
			if peak > workerPeakRSS {
				t.Errorf("the worker's peak RSS %d MiB is above the bound of %d MiB", peak>>20, workerPeakRSS>>20)
			}
		})
	}
}

// classRig is one worker process and the folders of its sessions. box holds everything whose
// change the suite looks for; bin, the worker's home and its temporary folder are beside it.
type classRig struct {
	t       *testing.T
	uid     int
	ctx     context.Context
	root    string // world-traversable, so that nobody reaches what is below
	box     string
	home    string
	state   string
	store   string
	cache   string
	tmp     string
	outside string
	env     []string
	queue   string
	worker  *exec.Cmd
	stderr  *syncBuffer
	starter string
	gw      *fakegw.Server
	client  client.Client
	marker  string
	// innocent is the first session's work directory; its task holds the secret.
	innocent string
}

// newClassRig makes the folders, starts the fake gateway and the worker (as uid, in cgroups of its
// own for an unprivileged worker), and dials a client that reads the worker's store.
func newClassRig(t *testing.T, uid int) *classRig {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	root, err := os.MkdirTemp("", "keel-escape-classes-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if root, err = filepath.EvalSymlinks(root); err != nil {
		t.Fatal(err)
	}
	r := &classRig{t: t, uid: uid, ctx: ctx, root: root, box: filepath.Join(root, "box"), home: filepath.Join(root, "home"),
		tmp: filepath.Join(root, "tmp"), stderr: &syncBuffer{}, marker: strconv.FormatInt(time.Now().UnixNano(), 36)}
	r.outside = filepath.Join(r.box, "outside")
	r.state = filepath.Join(r.home, ".local", "state", "keel") // config.DefaultStateDir for this HOME
	r.store = filepath.Join(r.state, "store")
	r.cache = filepath.Join(r.home, ".cache", "keel", "sandbox")
	r.innocent = filepath.Join(r.box, "innocent")
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{r.box, r.home, r.tmp, r.outside, filepath.Join(root, "bin")} {
		r.mkdir(d)
	}
	if err := os.WriteFile(filepath.Join(r.outside, "target"), []byte("untouched\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	workerBin := r.binary("./worker")
	r.starter = r.binary("./starter")
	r.gw = fakegw.New(fakegw.Options{})
	if err := r.gw.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.gw.Close() })
	r.queue = "q-escape-classes-" + strconv.Itoa(uid) + "-" + r.marker
	r.env = r.environ(r.gw.BaseURL())
	r.startWorker(workerBin)
	st, err := store.OpenFile(r.store)
	if err != nil {
		t.Fatal(err)
	}
	if r.client, err = client.Dial(client.Options{HostPort: env.Address(), ExternalStorage: store.ExternalStorage(st)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.client.Close)
	return r
}

// mkdir makes a folder owned by the rig's user.
func (r *classRig) mkdir(dir string) {
	r.t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.t.Fatal(err)
	}
	r.chown(dir)
}

// chown gives a file or folder tree to the rig's user.
func (r *classRig) chown(path string) {
	r.t.Helper()
	err := filepath.WalkDir(path, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, r.uid, r.uid)
	})
	if err != nil {
		r.t.Fatal(err)
	}
}

// binary copies one of Keel's commands where the rig's user may run it.
func (r *classRig) binary(pkg string) string {
	r.t.Helper()
	built, err := env.Build(pkg)
	if err != nil {
		r.t.Fatal(err)
	}
	data, err := os.ReadFile(built)
	if err != nil {
		r.t.Fatal(err)
	}
	dst := filepath.Join(r.root, "bin", filepath.Base(built))
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		r.t.Fatal(err)
	}
	return dst
}

// environ is the worker's and the starters' environment: the test's own without Keel's settings
// and the user's folders, then a home of the rig's (so the state directory, the store, the
// configuration file and the cache are their defaults below it), the server, the fake gateway,
// small limits and secrets no command may see. Nothing sets dev.state_dir.
func (r *classRig) environ(gwURL string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "KEEL_") || strings.HasPrefix(k, "XDG_") || k == "HOME" || k == "TMPDIR" {
			continue
		}
		out = append(out, kv)
	}
	return append(append(out, "HOME="+r.home, "TMPDIR="+r.tmp,
		"KEEL_TEMPORAL_ADDRESS="+env.Address(), "KEEL_TEMPORAL_TASK_QUEUE="+r.queue,
		"KEEL_GATEWAY_FAKE=true", "KEEL_GATEWAY_BASE_URL="+gwURL+"/v1", "KEEL_GATEWAY_RETRY_BASE=100ms",
		"KEEL_TOOLS_LIMITS_PROCESSES=64", "KEEL_TOOLS_LIMITS_MEMORY_MB=256"), escapeSecrets...)
}

// credential runs a process as the rig's user; nil for root.
func (r *classRig) credential() *syscall.SysProcAttr {
	if r.uid == 0 {
		return nil
	}
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(r.uid), Gid: uint32(r.uid)}}
}

// startWorker starts the worker with a directory it never asked for as descriptor inheritedFD. An
// unprivileged worker starts through a shell that waits until the test has put it into cgroups
// delegated to its user (as a service manager would) and then execs it under a process limit of
// its own.
func (r *classRig) startWorker(bin string) {
	t := r.t
	dirFD, err := os.Open(r.outside)
	if err != nil {
		t.Fatal(err)
	}
	defer dirFD.Close()
	cmd := exec.Command(bin)
	var release io.WriteCloser
	var cgroups []string
	if r.uid != 0 {
		cgroups = delegatedCgroups(t, r.uid) // first, so that it is removed after the worker is gone
		cmd = exec.Command("sh", "-c", `read go && exec prlimit --nproc=`+strconv.Itoa(workerProcLimit)+` -- "$0"`, bin)
		if release, err = cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
	}
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = r.home, r.env, r.stderr, r.stderr
	cmd.ExtraFiles = make([]*os.File, inheritedFD-2)
	cmd.ExtraFiles[inheritedFD-3] = dirFD
	cmd.SysProcAttr = r.credential()
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the worker: %v", err)
	}
	r.worker = cmd
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("the worker's output:\n%s", r.stderr.String())
		}
	})
	if release != nil {
		for _, d := range cgroups {
			if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0); err != nil {
				t.Fatalf("placing the worker in %s: %v", d, err)
			}
		}
		if _, err := io.WriteString(release, "go\n"); err != nil {
			t.Fatal(err)
		}
	}
	if !waitFor(30*time.Second, func() bool { return strings.Contains(r.stderr.String(), "sandbox limits:") }) {
		t.Fatalf("the worker did not say how it limits commands:\n%s", r.stderr.String())
	}
	if line := r.stderr.String(); !strings.Contains(line, "one cgroup") {
		t.Fatalf("the worker has no cgroup for commands, so shared memory would not be bounded:\n%s", line)
	}
	if target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", cmd.Process.Pid, inheritedFD)); err != nil || target != r.outside {
		t.Fatalf("the worker does not hold the inherited directory as descriptor %d: %q, %v", inheritedFD, target, err)
	}
}

// delegatedCgroups makes a cgroup for an unprivileged worker below the test's own and hands it to
// uid, the way systemd's Delegate= does: the memory and pids cgroups of cgroup v1, or one cgroup
// v2 with both controllers. The worker creates its commands' cgroups inside.
func delegatedCgroups(t *testing.T, uid int) []string {
	t.Helper()
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(own)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			paths[c] = parts[2]
		}
	}
	name := fmt.Sprintf("keel-e2e-worker-%d-%d", os.Getpid(), time.Now().UnixNano())
	var parents []string
	files := []string{"cgroup.procs", "tasks"}
	if mem, ok := paths["memory"]; ok && paths["pids"] != "" {
		parents = []string{filepath.Join("/sys/fs/cgroup/memory", mem), filepath.Join("/sys/fs/cgroup/pids", paths["pids"])}
	} else {
		parent := filepath.Join("/sys/fs/cgroup", paths[""])
		control, _ := os.ReadFile(filepath.Join(parent, "cgroup.subtree_control"))
		if !strings.Contains(string(control), "memory") || !strings.Contains(string(control), "pids") {
			t.Fatalf("the test's cgroup v2 %s does not hand memory and pids to its children (%q), so no cgroup can be delegated to the worker", parent, control)
		}
		parents = []string{parent}
		files = []string{"cgroup.procs", "cgroup.threads", "cgroup.subtree_control"}
	}
	var dirs []string
	for _, p := range parents {
		d := filepath.Join(p, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatalf("creating a cgroup for the worker: %v", err)
		}
		dirs = append(dirs, d)
		t.Cleanup(func() { removeCgroupTree(d) })
		for _, f := range append([]string{""}, files...) {
			if err := os.Chown(filepath.Join(d, f), uid, uid); err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("handing the worker's cgroup to uid %d: %v", uid, err)
			}
		}
	}
	return dirs
}

// removeCgroupTree removes a delegated cgroup once the worker is gone, the cgroups it left first.
func removeCgroupTree(d string) {
	subs, _ := filepath.Glob(filepath.Join(d, "*", "cgroup.procs"))
	for _, s := range subs {
		_ = syscall.Rmdir(filepath.Dir(s))
	}
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Rmdir(d) != nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // the kernel frees a cgroup once its last process is reaped
	}
}

// session starts a session on the worker directly, as another starter would.
func (r *classRig) session(task, workdir string) client.WorkflowRun {
	r.t.Helper()
	run, err := r.client.ExecuteWorkflow(r.ctx, client.StartWorkflowOptions{TaskQueue: r.queue},
		contract.SessionWorkflow, contract.SessionInput{Task: task, Settings: contract.Settings{ToolSettings: contract.ToolSettings{Workdir: workdir}}, Limits: contract.Limits{MaxTurns: 40}})
	if err != nil {
		r.t.Fatal(err)
	}
	return run
}

// complete waits for a session to complete.
func (r *classRig) complete(t *testing.T, run client.WorkflowRun, what string) {
	t.Helper()
	var sum contract.Summary
	if err := run.Get(r.ctx, &sum); err != nil || sum.Status != contract.StatusCompleted {
		t.Fatalf("%s did not complete: %v %+v", what, err, sum)
	}
}

// secret is what the innocent session's task holds and no other session may read.
func (r *classRig) secret() string { return fakegw.EscapeSecretPrefix + r.marker }

// innocentSession runs the first session, whose task holds the secret, and checks the secret is
// in the worker's state afterwards, so that a result without it means the hostile session could
// not read it.
func (r *classRig) innocentSession() {
	t := r.t
	if err := demo.CopyWorkspace(r.innocent); err != nil {
		t.Fatal(err)
	}
	r.chown(r.innocent)
	task := fakegw.WithMode("Fix the failing test. The deployment password is "+r.secret()+"; never show it.", fakegw.ModeLoop)
	r.complete(t, r.session(task, r.innocent), "the innocent session")
	found := false
	_ = filepath.WalkDir(r.state, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			data, _ := os.ReadFile(p)
			found = found || bytes.Contains(data, []byte(r.secret()))
		}
		return nil
	})
	if !found {
		t.Fatalf("the innocent session's secret is nowhere in the worker's state %s, so the hostile session's reading proves nothing", r.state)
	}
}

// hostileSession runs fakegw.ModeEscapeClasses through the real starter, in the work directory
// (defaultFlow) or with --workdir, with another session started while the fork loop runs, and
// checks everything the suite promises.
func (r *classRig) hostileSession(t *testing.T, defaultFlow bool) {
	ws, other := filepath.Join(r.box, "ws-"+folderName(t)), filepath.Join(r.box, "other-"+folderName(t))
	r.mkdir(ws)
	if err := demo.CopyWorkspace(other); err != nil {
		t.Fatal(err)
	}
	r.chown(other)
	// The worker writes its state, its cache folder (which commands share at /cache) and its
	// temporary files; the other session works in its own folder.
	skip := []string{ws, other, r.state, filepath.Dir(filepath.Dir(r.cache)), r.tmp, filepath.Join(r.root, "bin")}
	before, nodes := snapshotOutside(t, r.root, skip...), storeNodes(t, r.store)
	task := fakegw.EscapeClassTask(fakegw.ModeEscapeClasses, r.state, r.store, r.marker)
	args, dir := []string{"run", task}, ws
	if !defaultFlow {
		args, dir = []string{"run", "--workdir", ws, task}, r.home
	}
	start := time.Now()
	hostile, stdout, stderr := r.startStarter(dir, args...)
	overlap := r.runAlongsideForkLoop(t, ws, other, hostile)
	if err := hostile.Wait(); err != nil {
		t.Fatalf("the hostile session's starter: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	t.Logf("the hostile session took %s", time.Since(start).Round(100*time.Millisecond))
	if !strings.Contains(stdout.String(), "\n"+contract.StatusCompleted+" · ") {
		t.Fatalf("the hostile session did not complete:\n%s", stdout)
	}
	if !overlap.sawBoth {
		t.Errorf("the other session's command never ran while the fork loop did")
	}
	r.complete(t, overlap.run, "the session that ran during the fork loop")
	if !waitFor(5*time.Second, func() bool { return len(survivors(ws)) == 0 }) {
		t.Errorf("processes survived: %v", survivors(ws))
	}
	r.checkResults(t, sessionID(t, stdout.String()))
	r.checkHost(t, ws)
	assertOutsideUnchanged(t, before, snapshotOutside(t, r.root, skip...))
	assertNodesKept(t, nodes, storeNodes(t, r.store))
	r.checkPlantedConfig(t, ws)
	r.checkWorkerAlive(t)
}

// folderName is the last part of a subtest's name, for folder names.
func folderName(t *testing.T) string {
	return strings.ReplaceAll(filepath.Base(t.Name()), " ", "-")
}

// startStarter starts the starter as the rig's user in dir.
func (r *classRig) startStarter(dir string, args ...string) (*exec.Cmd, *syncBuffer, *syncBuffer) {
	r.t.Helper()
	cmd := exec.Command(r.starter, args...)
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr, cmd.SysProcAttr = dir, r.env, stdout, stderr, r.credential()
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("starting the starter: %v", err)
	}
	r.t.Cleanup(func() { _ = cmd.Process.Kill() }) // one a failed check left running
	return cmd, stdout, stderr
}

// overlap is what runAlongsideForkLoop saw: the session it started, and whether that session's
// command ran while the fork loop's processes were alive.
type overlap struct {
	run     client.WorkflowRun
	sawBoth bool
}

// runAlongsideForkLoop waits for the hostile session's fork loop, then starts another session in
// other, whose first command prints a line a second for six seconds, and watches both until the
// hostile starter ends.
func (r *classRig) runAlongsideForkLoop(t *testing.T, ws, other string, hostile *exec.Cmd) overlap {
	t.Helper()
	var o overlap
	loop := func() bool { return len(processesWith(ws, "sleep", "1006")) > 0 }
	for deadline := time.Now().Add(4 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if exited(hostile) {
			break
		}
		if o.run == nil && loop() {
			o.run = r.session(fakegw.WithMode("Fix the failing test.", fakegw.ModeChattyCommand), other)
		}
		if o.run != nil && len(processesWith(other, "sleep", "1")) > 0 && loop() {
			o.sawBoth = true
			t.Logf("the other session's command runs beside %d processes of the fork loop", len(processesWith(ws, "sleep", "1006")))
			return o
		}
	}
	if o.run == nil {
		t.Fatal("the hostile session's fork loop never ran")
	}
	return o
}

// exited says the process has ended, without reaping it.
func exited(cmd *exec.Cmd) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || len(stat) < i+3 || stat[i+2] == 'Z'
}

// sessionID reads the session's workflow ID from the starter's text output.
func sessionID(t *testing.T, out string) string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "keel: session "); ok {
			return strings.Fields(rest)[0]
		}
	}
	t.Fatalf("the starter did not name its session:\n%s", out)
	return ""
}

// toolResults are the tool results of a session's transcript, in order, read as a starter reads
// them (large ones from the store).
func (r *classRig) toolResults(t *testing.T, wid string) []string {
	t.Helper()
	var out []string
	for turn := 1; ; turn++ {
		var res contract.TurnResult
		err := r.client.GetWorkflow(r.ctx, contract.TurnWorkflowID(wid, turn), "").Get(r.ctx, &res)
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			return out
		}
		if err != nil {
			t.Fatalf("reading turn %d of %s: %v", turn, wid, err)
		}
		for _, m := range res.Pending {
			if m.Role == contract.RoleTool {
				out = append(out, m.Content)
			}
		}
	}
}

// checkResults holds every result the model got to what happened: one per attempt, each passing
// the attempt's check, none showing the innocent session's secret or the worker's.
func (r *classRig) checkResults(t *testing.T, wid string) {
	t.Helper()
	results := r.toolResults(t, wid)
	steps := fakegw.EscapeClassSteps(fakegw.ModeEscapeClasses, fakegw.EscapeClassTask(fakegw.ModeEscapeClasses, r.state, r.store, r.marker))
	if len(results) != len(steps) {
		t.Fatalf("%d results for %d attempts:\n%s", len(results), len(steps), strings.Join(results, "\n---\n"))
	}
	took := r.callTimes(t, len(steps))
	var slowest time.Duration
	for i, s := range steps {
		if s.Tool != "" {
			slowest = max(slowest, took[i])
		}
		if s.Tool != "" && took[i] > fileToolAtOnce {
			t.Errorf("%s took %s, more than %s", s.Name, took[i].Round(time.Millisecond), fileToolAtOnce)
		}
		res := results[i]
		if why := s.Check(res); why != "" {
			t.Errorf("%s: %s:\n%s", s.Name, why, clipped(res))
		}
		if strings.Contains(res, r.secret()) {
			t.Errorf("%s: the result shows the innocent session's secret:\n%s", s.Name, clipped(res))
		}
		for _, secret := range escapeSecrets {
			if _, val, _ := strings.Cut(secret, "="); strings.Contains(res, val) {
				t.Errorf("%s: the result shows a worker secret:\n%s", s.Name, clipped(res))
			}
		}
		switch s.Name {
		case "state directory by path":
			if n := strings.Count(res, "No such file or directory"); n != 2 {
				t.Errorf("%s: %d of the state directory and the store are missing, want both:\n%s", s.Name, n, res)
			}
		case "work directory listing":
			if strings.Contains(res, ".keel") || strings.Contains(res, "store") {
				t.Errorf("%s: Keel's files are in the work directory:\n%s", s.Name, res)
			}
		}
	}
	t.Logf("%d attempts, each result true; the slowest file tool call took %s", len(steps), slowest.Round(time.Millisecond))
}

// callTimes reads, from the model calls the fake gateway answered, how long each of the last
// hostile session's n tool calls took: from the model call that asked for it to the next one,
// which carried its result.
func (r *classRig) callTimes(t *testing.T, n int) []time.Duration {
	t.Helper()
	recs := r.gw.Stats().ForMode(fakegw.ModeEscapeClasses)
	if len(recs) < n+1 {
		t.Fatalf("%d model calls of the hostile session, want %d", len(recs), n+1)
	}
	recs = recs[len(recs)-n-1:]
	took := make([]time.Duration, n)
	for i := range took {
		if recs[i+1].Attempt != 1 {
			t.Fatalf("model call %d was attempted again, so its time is not the tool's", i+2)
		}
		took[i] = recs[i+1].At.Sub(recs[i].At)
	}
	return took
}

// clipped keeps a result short enough to read in a failure.
func clipped(s string) string {
	if len(s) > 2000 {
		return s[:1000] + "\n[...]\n" + s[len(s)-1000:]
	}
	return s
}

// checkHost looks at the work directory and the cache from the host: no setuid, setgid or device
// file; the forged report's command ran; the big file and the pipe are as the command left them.
func (r *classRig) checkHost(t *testing.T, ws string) {
	t.Helper()
	assertNoPrivilegedFiles(t, ws, r.cache)
	if _, err := os.Stat(filepath.Join(ws, fakegw.EscapeForgedRan)); err != nil {
		t.Errorf("the command whose report was forged did not run: %v", err)
	}
	if info, err := os.Stat(filepath.Join(ws, fakegw.EscapeBigFile)); err != nil || info.Size() != fakegw.EscapeBigFileSize {
		t.Errorf("the big file changed: %v %v", info, err)
	}
	if info, err := os.Lstat(filepath.Join(ws, fakegw.EscapeFIFO)); err != nil || info.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("the named pipe changed: %v %v", info, err)
	}
}

// assertNoPrivilegedFiles fails if any file under the folders, seen from the host, is setuid,
// setgid (a directory's setgid bit included) or a device.
func assertNoPrivilegedFiles(t *testing.T, dirs ...string) {
	t.Helper()
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			if m := info.Mode(); m&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeDevice|fs.ModeCharDevice) != 0 {
				t.Errorf("%s is %v on the host", p, m)
			}
			return nil
		})
		if err != nil {
			t.Errorf("walking %s: %v", dir, err)
		}
	}
}

// storeNodes reads the store's transcript nodes, which are written once and never change (ledger
// entries are rewritten as calls settle, so they are left out).
func storeNodes(t *testing.T, dir string) map[string]string {
	t.Helper()
	nodes := map[string]string{}
	files, _ := filepath.Glob(filepath.Join(dir, "??", "*.json"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		nodes[f] = string(data)
	}
	return nodes
}

// assertNodesKept fails if a transcript node that existed before has changed or gone.
func assertNodesKept(t *testing.T, before, after map[string]string) {
	t.Helper()
	if len(before) == 0 {
		t.Fatal("the store held no transcript before the hostile session")
	}
	for p, v := range before {
		if after[p] != v {
			t.Errorf("the transcript node %s changed", p)
		}
	}
}

// checkPlantedConfig runs the next `starter run` in the work directory, where the hostile session
// wrote a keel.yaml with tools.sandbox_cache: /. It must be refused in one line, exit 2, before
// anything starts.
func (r *classRig) checkPlantedConfig(t *testing.T, ws string) {
	t.Helper()
	if data, err := os.ReadFile(filepath.Join(ws, fakegw.EscapeConfig)); err != nil || string(data) != fakegw.EscapeConfigText {
		t.Fatalf("the hostile session did not write %s: %q %v", fakegw.EscapeConfig, data, err)
	}
	cmd, stdout, stderr := r.startStarter(ws, "run", "say hi")
	_ = cmd.Wait()
	lines := nonEmptyLines(stderr.String())
	if code := cmd.ProcessState.ExitCode(); code != 2 || len(lines) != 1 || stdout.String() != "" {
		t.Fatalf("the next starter run in the work directory: exit %d, stderr %q, stdout %q; want exit 2 and one line", code, stderr, stdout)
	}
	if !strings.Contains(lines[0], config.ToolsSandboxCache) && !strings.Contains(lines[0], fakegw.EscapeConfig) {
		t.Errorf("the refusal does not say why: %q", lines[0])
	}
	t.Logf("the planted configuration is refused: %s", lines[0])
}

// checkWorkerAlive fails unless the worker process still runs.
func (r *classRig) checkWorkerAlive(t *testing.T) {
	t.Helper()
	if r.worker.ProcessState != nil || exited(r.worker) {
		t.Fatalf("the worker died:\n%s", r.stderr.String())
	}
}

// peakRSS is the worker process's peak resident memory (VmHWM), in bytes.
func (r *classRig) peakRSS() int64 {
	r.t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", r.worker.Process.Pid))
	if err != nil {
		r.t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				r.t.Fatalf("reading VmHWM %q: %v", line, err)
			}
			return kb << 10
		}
	}
	r.t.Fatalf("no VmHWM in the worker's status:\n%s", status)
	return 0
}
