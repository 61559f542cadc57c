//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// shmProgram maps its argument's worth of bytes MAP_SHARED|MAP_ANONYMOUS and touches every
// page: memory RLIMIT_DATA does not count, which only a cgroup bounds.
const shmProgram = `package main

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
)

func main() {
	n, _ := strconv.Atoi(os.Args[1])
	m, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED|syscall.MAP_ANON)
	if err != nil {
		fmt.Println("mmap:", err)
		os.Exit(3)
	}
	for i := 0; i < n; i += 4096 {
		m[i] = 1
	}
	fmt.Println("touched", n)
}
`

// TestSharedMemoryIsBoundedPerCommand maps shared memory under and over the command's memory
// limit: over it, the kernel kills the program, the report says so, and the cgroup is gone after.
func TestSharedMemoryIsBoundedPerCommand(t *testing.T) {
	requireCgroup(t)
	const limit = 256 << 20
	dir := t.TempDir()
	build := exec.Command(filepath.Join(GoBin(), "go"), "build", "-o", filepath.Join(dir, "shm"), filepath.Join(dir, "main.go"))
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(shmProgram), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the test program: %v\n%s", err, out)
	}
	tests := []struct {
		name  string
		bytes int
		check func(t *testing.T, out string, rep Report)
	}{
		{"under the limit", limit / 4, func(t *testing.T, out string, rep Report) {
			if rep.Code != 0 || rep.Signal != 0 || rep.OutOfMemory || !strings.Contains(out, "touched") {
				t.Fatalf("report %+v, output %q", rep, out)
			}
		}},
		{"three times the limit", 3 * limit, func(t *testing.T, out string, rep Report) {
			if rep.Signal != int(syscall.SIGKILL) || !rep.OutOfMemory || strings.Contains(out, "touched") {
				t.Fatalf("report %+v, output %q", rep, out)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Limits: Limits{Memory: limit}}
			out, rep, c := runCmd(t, cfg, dir, "./shm", strconv.Itoa(tt.bytes))
			tt.check(t, out, rep)
			// The kernel charges a cgroup in batches of up to 64 pages per CPU before it enforces
			// memory.max, so memory.peak may pass the limit by that much (seen: one page); a
			// command that was not bounded peaks at three times the limit.
			slack := int64(64*os.Getpagesize()) * int64(runtime.NumCPU())
			if peak := c.lease.used.peakMemory; peak > int64(limit)+slack {
				t.Fatalf("peak memory %d above the limit %d and the kernel's charge batch %d", peak, limit, slack)
			}
			t.Logf("mapped %d MiB: peak memory %d MiB of %d, out-of-memory kills %d, report %+v",
				tt.bytes>>20, c.lease.used.peakMemory>>20, limit>>20, c.lease.used.oomKills, rep)
			assertCgroupGone(t, c)
		})
	}
}

// TestCgroupNamespaceIsRootedAtTheCommand checks the command sees its own cgroup as the root of
// every hierarchy: the init joined the command's cgroup after it was cloned, and the namespace it
// gives the command is made there, so no path of the worker's cgroups shows.
func TestCgroupNamespaceIsRootedAtTheCommand(t *testing.T) {
	requireCgroup(t)
	out, rep, c := runCmd(t, Config{}, t.TempDir(), "cat", "/proc/self/cgroup")
	if rep.Code != 0 {
		t.Fatalf("report %+v, output %q", rep, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		if !strings.HasSuffix(l, ":/") {
			t.Errorf("the command sees a path above its own cgroup: %q", l)
		}
	}
	if len(lines) < len(c.lease.cg.dirs) {
		t.Fatalf("%d cgroup lines for %d hierarchies of the command: %q", len(lines), len(c.lease.cg.dirs), out)
	}
}

// TestForkBombIsBoundedPerCommand runs a fork bomb under the cgroup's process limit: it is held
// there, a second sandbox started meanwhile runs, and the bomb ends when stopped.
func TestForkBombIsBoundedPerCommand(t *testing.T) {
	requireCgroup(t)
	const procs = 64
	cfg := Config{Limits: Limits{Processes: procs}, Grace: 200 * time.Millisecond}
	bomb, out := startCmd(t, cfg, t.TempDir(), "bash", "-c", "f() { f | f & }; f; sleep 600")
	waitUntil(t, "the bomb to reach its process limit", func() bool { return bomb.lease.cg.usage().forkRefusals > 0 })

	second, rep := run(t, cfg, t.TempDir(), testEnv, "sh", "-c", "echo alive")
	if rep.Code != 0 || strings.TrimSpace(second) != "alive" {
		t.Fatalf("the second sandbox: report %+v, output %q", rep, second)
	}
	pidsDir := bomb.lease.cg.dirs[len(bomb.lease.cg.dirs)-1]
	if n := readCounter(filepath.Join(pidsDir, "pids.current"), ""); n < procs/2 {
		t.Fatalf("the bomb was not running while the second sandbox ran: %d processes", n)
	}

	bomb.Stop()
	_ = bomb.Exec.Wait()
	rep, ok := bomb.Report()
	if !ok || !rep.Started || !rep.ProcessLimit {
		t.Fatalf("the bomb's report %+v (said %v), output %q", rep, ok, out.String())
	}
	if peak := bomb.lease.used.peakProcs; peak > procs {
		t.Fatalf("peak %d processes above the limit %d", peak, procs)
	}
	t.Logf("fork bomb: peak %d processes and threads of %d, %d forks refused, report %+v",
		bomb.lease.used.peakProcs, procs, bomb.lease.used.forkRefusals, rep)
	assertCgroupGone(t, bomb)
}

// TestUnprivilegedWorkerKeepsItsProcesses runs the worker's side in a child process that stands
// for a worker that is not root, with a process limit of its own (the sandboxes run as its
// user, so the kernel counts their processes against it too): a fork bomb in one command leaves
// the child able to start threads and processes, and to run another sandbox once it ended.
func TestUnprivilegedWorkerKeepsItsProcesses(t *testing.T) {
	uid := os.Getuid()
	if uid == 0 {
		uid = 65534
	}
	limit := userTasks(uid) + DefaultProcesses // one default command could take them all; the user's other processes count too
	bin := filepath.Join(sharedDir(t), "sandbox.test")
	copyFile(t, "/proc/self/exe", bin)
	work := filepath.Join(sharedDir(t), "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	child := exec.CommandContext(ctx, bin, "-test.run=^TestStandInWorker$", "-test.v", "-test.count=1")
	child.Env = append(testEnv, standInEnv+"="+strconv.Itoa(limit), standInDirEnv+"="+work)
	if os.Getuid() == 0 {
		if err := os.Chown(work, uid, uid); err != nil {
			t.Fatal(err)
		}
		child.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	}
	out, err := child.CombinedOutput()
	t.Logf("the stand-in worker (uid %d, %d processes):\n%s", uid, limit, out)
	if err != nil || !bytes.Contains(out, []byte("--- PASS: TestStandInWorker")) {
		t.Fatalf("the stand-in worker failed: %v", err)
	}
}

// Environment of the stand-in worker: its process limit and its work directory.
const (
	standInEnv    = "KEEL_SANDBOX_TEST_STANDIN"
	standInDirEnv = "KEEL_SANDBOX_TEST_STANDIN_DIR"
)

// TestStandInWorker is the body of the stand-in worker of TestUnprivilegedWorkerKeepsItsProcesses;
// it does nothing unless that test started it.
func TestStandInWorker(t *testing.T) {
	limit, _ := strconv.ParseUint(os.Getenv(standInEnv), 10, 64)
	if limit == 0 {
		return
	}
	dir := os.Getenv(standInDirEnv)
	if err := unix.Setrlimit(unix.RLIMIT_NPROC, &unix.Rlimit{Cur: limit / 2, Max: limit}); err != nil {
		t.Fatal(err)
	}
	t.Log(Enforcement())
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NPROC, &lim); err != nil || lim.Cur != limit {
		t.Fatalf("the soft process limit is %d, want it raised to %d (%v)", lim.Cur, limit, err)
	}

	bomb, out := startCmd(t, Config{Grace: 200 * time.Millisecond}, dir, "bash", "-c", "while :; do sleep 600 & done")
	waitUntil(t, "the fork loop to reach its process limit", func() bool { return strings.Contains(out.String(), "fork") })
	peak := userTasks(os.Getuid())

	release := make(chan struct{})
	var started sync.WaitGroup
	for i := 0; i < 64; i++ {
		started.Add(1)
		go func() {
			runtime.LockOSThread() // a thread of its own, as the Go runtime starts them
			started.Done()
			<-release
			// Unlocked, the thread goes back to the runtime: one that exited could be the one
			// that forked the bomb's init, whose parent-death signal would then kill it.
			runtime.UnlockOSThread()
		}()
	}
	started.Wait()
	for i := 0; i < 5; i++ {
		if err := exec.Command("true").Run(); err != nil {
			t.Fatalf("the worker could not start a process during the bomb: %v", err)
		}
	}
	if _, err := Command(Config{}, dir, []string{"true"}, testEnv); !errors.Is(err, ErrBusy) {
		t.Fatalf("a second command during the bomb: %v, want it refused as busy", err)
	}
	t.Logf("during the bomb: %d tasks of uid %d (limit %d) before and %d after 64 more threads and 5 processes started; the bomb's share %d",
		peak, os.Getuid(), limit, userTasks(os.Getuid()), bomb.Limits().Processes)
	close(release)

	bomb.Stop()
	werr := bomb.Exec.Wait()
	if rep, ok := bomb.Report(); !ok || !rep.Started {
		t.Fatalf("the bomb's report %+v (said %v); its init ended %v (%v) and printed:\n%s", rep, ok, bomb.Exec.ProcessState, werr, out)
	}
	after, rep := run(t, Config{}, dir, testEnv, "sh", "-c", "echo after")
	if rep.Code != 0 || strings.TrimSpace(after) != "after" {
		t.Fatalf("the sandbox after the bomb: report %+v, output %q", rep, after)
	}
}

// TestCgroupDirs reads where the worker's cgroups are from /proc/self/cgroup and the mounts.
func TestCgroupDirs(t *testing.T) {
	tests := []struct {
		name      string
		cgroups   string
		mountinfo string
		want      map[string]string
	}{
		{"pure v2", "0::/system.slice/keel.service\n",
			"30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n",
			map[string]string{"": "/sys/fs/cgroup/system.slice/keel.service"}},
		{"hybrid", "4:memory:/worker\n8:pids:/\n0::/\n",
			"35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n" +
				"39 31 0:36 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n" +
				"41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n",
			map[string]string{"memory": "/sys/fs/cgroup/memory/worker", "pids": "/sys/fs/cgroup/pids", "": "/sys/fs/cgroup/unified"}},
		{"a container's own cgroup mounted as the root", "0::/docker/abc/sub\n",
			"30 23 0:26 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
			map[string]string{"": "/sys/fs/cgroup/sub"}},
		{"a cgroup outside the mount is not reachable", "0::/other\n",
			"30 23 0:26 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
			map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cgroupDirs(tt.cgroups, tt.mountinfo)
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Fatalf("got %v, want %v", got, tt.want)
				}
			}
		})
	}
}

// TestDelegateMovesProcessesToALeaf checks the cgroup v2 rule the worker works around: a cgroup
// with processes cannot hand controllers to its children, so they move to a leaf first. It needs
// a cgroup v2 that hands a controller to its children: the sandboxes' parent where the worker
// uses v2, else the worker's own cgroup v2 (the root of the hierarchy on a hybrid machine), which
// is given one of the controllers it offers for the test's length.
func TestDelegateMovesProcessesToALeaf(t *testing.T) {
	parent, ctrl := v2Parent(t)
	dir := filepath.Join(parent, cgroupPrefix+"leaf-test-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sleeper := exec.Command("sleep", "600")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sleeper.Process.Kill()
		_ = sleeper.Wait()
		_ = unix.Rmdir(filepath.Join(dir, workerLeaf))
		_ = unix.Rmdir(dir)
	})
	if err := writeFile(filepath.Join(dir, "cgroup.procs"), strconv.Itoa(sleeper.Process.Pid)); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(filepath.Join(dir, "cgroup.subtree_control"), "+"+ctrl); !errors.Is(err, unix.EBUSY) {
		t.Fatalf("handing %s on from a cgroup with a process: %v, want the kernel to refuse it as busy", ctrl, err)
	}
	if err := delegateV2(dir, ctrl); err != nil {
		t.Fatal(err)
	}
	procs, _ := os.ReadFile(filepath.Join(dir, workerLeaf, "cgroup.procs"))
	control, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if strings.TrimSpace(string(procs)) != strconv.Itoa(sleeper.Process.Pid) || !hasWords(string(control), ctrl) {
		t.Fatalf("leaf holds %q, subtree_control %q", procs, control)
	}
}

// v2Parent finds a cgroup v2 folder that hands a controller to its children, and the controller.
func v2Parent(t *testing.T) (string, string) {
	t.Helper()
	if h := limitsHere(); h.mode == cgroupV2 {
		return h.parents[0], "pids"
	}
	own, err := ownCgroups()
	if err != nil {
		t.Fatal(err)
	}
	dir, ok := own[""]
	if !ok {
		t.Fatal("no cgroup v2 is mounted")
	}
	offered, _ := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	ctrls := strings.Fields(string(offered))
	if len(ctrls) == 0 {
		t.Fatalf("the cgroup v2 %s offers no controller", dir)
	}
	control := filepath.Join(dir, "cgroup.subtree_control")
	if on, _ := os.ReadFile(control); !hasWords(string(on), ctrls[0]) {
		if err := writeFile(control, "+"+ctrls[0]); err != nil {
			t.Fatalf("handing %s to the children of %s: %v", ctrls[0], dir, err)
		}
		t.Cleanup(func() { _ = writeFile(control, "-"+ctrls[0]) })
	}
	return dir, ctrls[0]
}

// requireCgroup fails unless this machine gives the sandboxes cgroups (the CI machines do).
func requireCgroup(t *testing.T) {
	t.Helper()
	if h := limitsHere(); h.mode == cgroupNone {
		t.Fatalf("no cgroup for the sandboxes: %s", h.why)
	}
}

// runCmd runs args in a sandbox to the end and returns the output, the report and the command,
// whose lease holds what its cgroup counted.
func runCmd(t *testing.T, cfg Config, dir string, args ...string) (string, Report, *Cmd) {
	t.Helper()
	c, out := startCmd(t, cfg, dir, args...)
	_ = c.Exec.Wait()
	rep, ok := c.Report()
	if !ok {
		t.Fatalf("the init said nothing; output %q", out.String())
	}
	return out.String(), rep, c
}

// startCmd starts args in a sandbox with its output in a buffer that may be read meanwhile.
func startCmd(t *testing.T, cfg Config, dir string, args ...string) (*Cmd, *syncBuffer) {
	t.Helper()
	c, err := Command(cfg, dir, args, testEnv)
	if err != nil {
		t.Fatal(err)
	}
	out := &syncBuffer{}
	c.Exec.Stdout, c.Exec.Stderr = out, out
	err = c.Exec.Start()
	c.Started()
	if err != nil {
		c.Report()
		t.Fatal(err)
	}
	return c, out
}

// syncBuffer is an output buffer safe to read while the command writes it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitUntil polls cond until it holds, failing after 30 seconds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// assertCgroupGone fails if the command's cgroup is still there after its end.
func assertCgroupGone(t *testing.T, c *Cmd) {
	t.Helper()
	if c.lease.cg == nil {
		t.Fatal("the command had no cgroup")
	}
	for _, d := range c.lease.cg.dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the sandbox's cgroup %s is still there (%v)", d, err)
		}
	}
}

// userTasks counts the processes and threads whose real user is uid, as RLIMIT_NPROC does.
func userTasks(uid int) int {
	statuses, _ := filepath.Glob("/proc/[0-9]*/task/[0-9]*/status")
	want := "Uid:\t" + strconv.Itoa(uid) + "\t"
	n := 0
	for _, s := range statuses {
		data, err := os.ReadFile(s)
		if err == nil && bytes.Contains(data, []byte(want)) {
			n++
		}
	}
	return n
}

// sharedDir is a temporary folder any user may enter, for the stand-in worker's binary.
func sharedDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "keel-sandbox-standin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestFullTmpfsKeepsTheReport fills /tmp and /dev/shm beyond their sizes under a small memory
// limit: the writes fail for want of space, nothing is killed, and the init reports the end.
func TestFullTmpfsKeepsTheReport(t *testing.T) {
	requireCgroup(t)
	const limit = 256 << 20
	out, rep, c := runCmd(t, Config{Limits: Limits{Memory: limit}}, t.TempDir(), "sh", "-c",
		"head -c 300M /dev/zero > /tmp/x; head -c 100M /dev/zero > /dev/shm/y; echo done")
	if rep.Code != 0 || rep.OutOfMemory || strings.Count(out, "No space left on device") != 2 || !strings.Contains(out, "done") {
		t.Fatalf("report %+v, output %q", rep, out)
	}
	t.Logf("/tmp and /dev/shm full: peak memory %d MiB of %d, out-of-memory kills %d", c.lease.used.peakMemory>>20, limit>>20, c.lease.used.oomKills)
	assertCgroupGone(t, c)
}

// TestCgroupRemoveKillsLeftovers removes a sandbox's cgroup that still holds a process: the
// process is killed and the cgroup goes.
func TestCgroupRemoveKillsLeftovers(t *testing.T) {
	requireCgroup(t)
	h := limitsHere()
	g, err := newCgroup(h.mode, h.parents, Limits{}.WithDefaults())
	if err != nil {
		t.Fatal(err)
	}
	sleeper := exec.Command("sleep", "600")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- sleeper.Wait() }()
	if err := g.place(sleeper.Process.Pid); err != nil {
		_ = sleeper.Process.Kill()
		t.Fatal(err)
	}
	if err := g.remove(); err != nil {
		_ = sleeper.Process.Kill()
		t.Fatal(err)
	}
	if err := <-waited; err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the process in the cgroup ended with %v, want killed", err)
	}
	assertCgroupGone(t, &Cmd{lease: &lease{cg: g}})
}
