//go:build linux

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// init turns this process into a sandbox's init when the worker started it as one. It runs
// before main (and before a test binary's tests), so every binary that links the package serves.
func init() {
	switch os.Getenv(initEnv) {
	case "":
		return
	case "park":
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	case "init":
		os.Exit(runInit())
	}
}

// Files the worker hands to the init.
const (
	specFD   = 3
	reportFD = 4
)

// runInit sets up the view, runs the command, reaps everything and reports. Its exit ends the
// PID namespace, and the kernel kills whatever is left in it.
func runInit() int {
	report := os.NewFile(reportFD, "report")
	var s spec
	say := func(r Report) int {
		_ = json.NewEncoder(report).Encode(signedReport{Nonce: s.Nonce, Report: r})
		return 0
	}
	reserveThreads(spareThreads) // first: moving a process into a cgroup counts the threads it has without refusing them
	if err := defaultSignals(); err != nil {
		return say(Report{Problem: err.Error()})
	}
	// Not dumpable: /proc/1/fd, /proc/1/mem and ptrace of the init then need a capability the
	// command does not have, so its descriptors (the report pipe) and memory (the nonce) are
	// out of reach.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return say(Report{Problem: fmt.Sprintf("making the sandbox's init undumpable: %v", err)})
	}
	specFile := os.NewFile(specFD, "spec")
	if err := json.NewDecoder(specFile).Decode(&s); err != nil {
		return say(Report{Problem: "reading the sandbox's spec: " + err.Error()})
	}
	stop := stopRequested(specFile)
	filter, err := buildFilter()
	if err != nil {
		return say(Report{Problem: err.Error()})
	}
	if err := setup(s); err != nil {
		return say(Report{Problem: err.Error()})
	}
	if s.Probe {
		if err := probeConfinement(filter); err != nil {
			return say(Report{Problem: err.Error()})
		}
		return say(Report{Started: true})
	}
	pid, keyring, err := startConfined(s, filter)
	if err != nil {
		if errors.Is(err, errNotFound) {
			return say(Report{Problem: ProblemNotFound})
		}
		if errors.Is(err, errNotExecutable) {
			return say(Report{Problem: ProblemNotExecutable})
		}
		return say(Report{Problem: err.Error()})
	}
	go forward(stop, time.Duration(s.GraceMS)*time.Millisecond)
	rep := reap(pid)
	rep.Keyring = keyring
	return say(rep)
}

// spareThreads is how many idle threads the init keeps for its runtime: more than it needs at
// once after the command starts (GOMAXPROCS running Go code, the spec read and the reaper's wait
// blocked in the kernel), with room to spare.
const spareThreads = 6

// reserveThreads makes the Go runtime start n threads now and keep them idle. The command's
// processes count against the same limit as the init's threads (the user's RLIMIT_NPROC, the
// cgroup's pids.max); once a fork bomb has filled it, a thread the runtime had to create then
// would fail, and the runtime would abort the init before it could stop the command and report.
// Each goroutine holds its thread until all n hold one, so the n are distinct; unlocked, they go
// back to the runtime's idle list rather than exiting.
func reserveThreads(n int) {
	var held sync.WaitGroup
	release := make(chan struct{})
	for i := 0; i < n; i++ {
		held.Add(1)
		go func() {
			runtime.LockOSThread()
			held.Done()
			<-release
			runtime.UnlockOSThread()
		}()
	}
	held.Wait()
	close(release)
}

// The kernel's struct sigaction on amd64 and arm64 is four words (handler, flags, restorer,
// mask); all zero, it is SIG_DFL with no flags and an empty mask. sigsetSize is the mask's size.
const (
	sigactionWords = 4
	sigsetSize     = 8
)

// defaultSignals gives every signal its default disposition, replacing the Go runtime's handlers.
// The kernel delivers a signal to a PID namespace's init only if the init handles it (from
// outside the namespace, SIGKILL and SIGSTOP too), so with no handler no signal the command
// sends (SIGQUIT, SIGTERM, SIGSEGV by kill, SIGSTOP, ...) reaches the init at all: it cannot end
// it, make the runtime print a dump, or wake a goroutine that would need a thread the command's
// processes have used up. Default, not ignored: an ignored signal would stay ignored in the
// command across exec. The worker stops the init through the spec pipe (stopRequested) and kills
// it with SIGKILL; a fault in the init's own code ends it without a trace.
func defaultSignals() error {
	var act [sigactionWords]uint64
	for sig := 1; sig <= 64; sig++ {
		if sig == int(unix.SIGKILL) || sig == int(unix.SIGSTOP) {
			continue
		}
		_, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, sigsetSize, 0, 0)
		if e != 0 {
			return fmt.Errorf("restoring the default action of signal %d in the sandbox's init: %w", sig, e)
		}
	}
	return nil
}

// stopRequested is closed when the worker closes its end of the spec pipe after the spec (or
// writes more), which is how it asks the init to stop the command; a worker that dies closes it
// too.
func stopRequested(spec *os.File) <-chan struct{} {
	stop := make(chan struct{})
	go func() {
		var b [1]byte
		_, _ = spec.Read(b[:])
		close(stop)
	}()
	return stop
}

// forward passes a stop request to every process in the namespace: SIGTERM, then SIGKILL after
// the grace period.
func forward(stop <-chan struct{}, grace time.Duration) {
	<-stop
	_ = syscall.Kill(-1, syscall.SIGTERM)
	time.Sleep(grace) // the grace period itself, not a wait for a condition
	_ = syscall.Kill(-1, syscall.SIGKILL)
}

// reap waits for the command, collecting every orphan that the PID namespace hands to its init,
// then stops whatever the command left behind.
func reap(pid int) Report {
	rep := Report{Started: true}
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			break
		}
		if got != pid {
			continue
		}
		if ws.Signaled() {
			rep.Signal = int(ws.Signal())
		} else {
			rep.Code = ws.ExitStatus()
		}
		break
	}
	for {
		got, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
		if err != nil || got <= 0 {
			break
		}
	}
	// Kill until nothing is left: a fork bomb forks between one pass and the next.
	for syscall.Kill(-1, syscall.SIGKILL) == nil {
		rep.Leftovers = true
		if _, err := syscall.Wait4(-1, nil, 0, nil); err != nil && !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	return rep
}

var (
	errNotFound      = errors.New("program not found")
	errNotExecutable = errors.New("program not executable")
)

// startConfined starts the command from a confined thread (see confine), with the limits set,
// and returns its PID and the serial of its session keyring. The thread stays locked and is
// never reused.
func startConfined(s spec, filter []unix.SockFilter) (pid, keyring int, err error) {
	if err := setLimits(s.Limits); err != nil {
		return 0, 0, err
	}
	path, err := lookPath(s.Args[0], s.Env, s.Workdir)
	if err != nil {
		return 0, 0, err
	}
	type started struct {
		pid, keyring int
		err          error
	}
	done := make(chan started, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with its credentials
		keyring, err := confine(filter)
		if err != nil {
			done <- started{err: err}
			return
		}
		null, err := os.Open("/dev/null")
		if err != nil {
			done <- started{err: fmt.Errorf("opening /dev/null: %w", err)}
			return
		}
		defer null.Close()
		var p *os.Process
		var startErr error
		err = firstToDie(func() {
			p, startErr = os.StartProcess(path, s.Args, &os.ProcAttr{
				Dir: s.Workdir, Env: s.Env, Files: []*os.File{null, os.Stdout, os.Stderr},
				Sys: &syscall.SysProcAttr{Setsid: true},
			})
		})
		switch {
		case err != nil:
			if p != nil {
				_ = p.Kill() // it would run beside an init the kernel picks as soon as the command
			}
			done <- started{err: err}
		case startErr != nil:
			done <- started{err: errNotExecutable}
		default:
			done <- started{pid: p.Pid, keyring: keyring}
		}
	}()
	r := <-done
	return r.pid, r.keyring, r.err
}

// confine readies the calling, locked thread to start the command: a session keyring of its
// own, a cgroup namespace rooted at its own cgroup, no capabilities and no new privileges, the
// syscall filter, and every descriptor but the standard three closed on exec. It returns the
// keyring's serial.
func confine(filter []unix.SockFilter) (int, error) {
	keyring, err := freshSessionKeyring()
	if err != nil {
		return 0, err
	}
	if err := ownCgroupRoot(); err != nil {
		return 0, err
	}
	if err := dropPrivileges(); err != nil {
		return 0, err
	}
	if err := installFilter(filter); err != nil {
		return 0, err
	}
	if err := closeOnExec(); err != nil {
		return 0, err
	}
	return keyring, nil
}

// probeConfinement confines a thread of its own, which then ends, so the probe learns whether
// this kernel allows what every command needs.
func probeConfinement(filter []unix.SockFilter) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the confined thread ends with the goroutine
		_, err := confine(filter)
		done <- err
	}()
	return <-done
}

// freshSessionKeyring gives the calling thread, and so the command it starts, a new anonymous
// session keyring: the worker's, and every key the worker or an earlier command put in it, is
// out of reach. A kernel without keyrings has none to share.
func freshSessionKeyring() (int, error) {
	id, err := unix.KeyctlInt(unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0, 0, 0)
	if errors.Is(err, unix.ENOSYS) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("creating the command's session keyring: %w", err)
	}
	return id, nil
}

// ownCgroupRoot gives the calling thread, and so the command, a cgroup namespace of its own. The
// init was cloned into one, but rooted where it was born, the worker's cgroup; the worker has
// since moved it into the command's cgroup (before it sent the spec), so a namespace made now is
// rooted there: the command's /proc/self/cgroup reads "/" and the worker's cgroup paths, its own
// cgroup's name among them, are out of sight. It must run on the thread that starts the command,
// since a namespace made by unshare belongs to the calling thread alone.
func ownCgroupRoot() error {
	if err := unix.Unshare(unix.CLONE_NEWCGROUP); err != nil {
		return fmt.Errorf("rooting the command's cgroup namespace at its cgroup: %w", err)
	}
	return nil
}

// oomScoreFile is the process's out-of-memory score adjustment (-1000 to 1000).
const oomScoreFile = "/proc/self/oom_score_adj"

// commandOOMScore is the adjustment the command and everything it starts get: the kernel's first
// choice when the command's cgroup (or the machine) runs out of memory, so it kills a process of
// the command and not the init, which stays at the worker's value and so reports the kill.
const commandOOMScore = "1000"

// firstToDie runs start (which starts the command) with this process's out-of-memory adjustment
// raised to commandOOMScore, so the command inherits it from its first instruction and nothing it
// forks can be born with less, then puts the init's own back. Raising needs no privilege, and
// the kernel lets any process go back down to the lowest value it has held (oom_score_adj_min,
// inherited from the worker), so putting back the value read first works unprivileged too. From
// the command's exec until the value is back (the time of one write, a little more under load)
// both are at commandOOMScore, where the kernel picks the larger process, as it would with both
// at the worker's value. start is not called when the value cannot be raised; an error after it
// ran means the init could not put its own value back.
func firstToDie(start func()) error {
	own, err := os.ReadFile(oomScoreFile)
	if err != nil {
		return fmt.Errorf("reading the init's out-of-memory score: %w", err)
	}
	if err := os.WriteFile(oomScoreFile, []byte(commandOOMScore), 0); err != nil {
		return fmt.Errorf("raising the command's out-of-memory score: %w", err)
	}
	start()
	if err := os.WriteFile(oomScoreFile, own, 0); err != nil {
		return fmt.Errorf("restoring the init's out-of-memory score: %w", err)
	}
	return nil
}

// closeOnExec marks every descriptor above standard error close-on-exec, so the command gets only
// the three the init hands it: not the spec and report pipes, not the idmapped mounts, not
// anything the worker itself inherited. Kernels before 5.11 lack CLOSE_RANGE_CLOEXEC; there each
// open descriptor is marked.
func closeOnExec() error {
	err := unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("closing the init's descriptors for the command: %w", err)
	}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("listing the init's descriptors: %w", err)
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && !errors.Is(err, unix.EBADF) {
			return fmt.Errorf("closing the init's descriptor %d for the command: %w", fd, err)
		}
	}
	return nil
}

// lookPath finds the program on the command's PATH, or in the work directory for a name with a
// slash.
func lookPath(name string, env []string, workdir string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(workdir, p)
		}
		if executable(p) {
			return p, nil
		}
		if _, err := os.Stat(p); err == nil {
			return "", errNotExecutable
		}
		return "", errNotFound
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		if p := filepath.Join(dir, name); executable(p) {
			return p, nil
		}
	}
	return "", errNotFound
}

func executable(p string) bool {
	info, err := os.Stat(p)
	return err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0
}

// setLimits sets the resource limits, which the command inherits.
func setLimits(l Limits) error {
	cpu := uint64(l.CPUTime / time.Second)
	if cpu == 0 {
		cpu = 1
	}
	limits := []struct {
		res        int
		soft, hard uint64
	}{
		{unix.RLIMIT_NPROC, uint64(l.Processes), uint64(l.Processes)},
		{unix.RLIMIT_DATA, uint64(l.Memory), uint64(l.Memory)},
		{unix.RLIMIT_CPU, cpu, cpu + 5},
		{unix.RLIMIT_FSIZE, uint64(l.FileSize), uint64(l.FileSize)},
		{unix.RLIMIT_CORE, 0, 0},
	}
	for _, lim := range limits {
		if err := unix.Setrlimit(lim.res, &unix.Rlimit{Cur: lim.soft, Max: lim.hard}); err != nil {
			return fmt.Errorf("setting resource limit %d: %w", lim.res, err)
		}
	}
	return nil
}

// Securebits that keep root without capabilities across exec, locked.
const lockedNoRoot = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<5 | 1<<6 | 1<<7

// dropPrivileges empties this thread's capability sets (bounding set included), locks the
// securebits so that exec as root gains none, and sets no_new_privs.
func dropPrivileges() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("setting no_new_privs: %w", err)
	}
	for c := 0; c < 64; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			if errors.Is(err, unix.EINVAL) {
				break
			}
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, lockedNoRoot, 0, 0, 0); err != nil {
		return fmt.Errorf("locking the securebits: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("dropping capabilities: %w", err)
	}
	return nil
}

// setup builds the sandbox's view and switches into it.
func setup(s spec) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making the mounts private: %w", err)
	}
	trees, err := collect(s)
	if err != nil {
		return err
	}
	stage, err := stagingDir()
	if err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", stage, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=1m"); err != nil {
		return fmt.Errorf("mounting the sandbox's root: %w", err)
	}
	for _, l := range s.Links {
		if err := os.Symlink(l.Target, filepath.Join(stage, l.Name)); err != nil {
			return fmt.Errorf("linking /%s: %w", l.Name, err)
		}
	}
	if err := specialFS(stage, s.TmpBytes); err != nil {
		return err
	}
	for _, t := range trees {
		if err := place(stage, t); err != nil {
			return err
		}
	}
	for _, p := range s.Pins {
		if err := bindOver(stage, p, false); err != nil {
			return err
		}
	}
	for _, p := range s.Locks {
		if err := bindOver(stage, p, true); err != nil {
			return err
		}
	}
	if err := pivot(stage); err != nil {
		return err
	}
	if !s.Network {
		if err := loopbackUp(); err != nil {
			return err
		}
	}
	_ = unix.Sethostname([]byte("sandbox"))
	// No user namespaces inside: a nested one could not unlock these mounts, but there is no
	// reason to allow it. Best effort; the kernel may not offer the knob.
	_ = os.WriteFile("/proc/sys/user/max_user_namespaces", []byte("0\n"), 0)
	if err := unix.Mount("", "/", "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return fmt.Errorf("making the sandbox's root read-only: %w", err)
	}
	if err := os.Chdir(s.Workdir); err != nil {
		return fmt.Errorf("entering the work directory: %w", err)
	}
	return nil
}

// tree is a detached mount ready to be placed.
type tree struct {
	fd     int
	target string
	file   bool
}

// devices are the host's device nodes bound into the sandbox's /dev, the only mounts of the view
// whose devices work (each is a single node, with nothing to create in it).
var devices = []string{"null", "zero", "full", "random", "urandom"}

// collect clones every source before anything is covered, so the order of placing cannot hide a
// source under an earlier mount. Every tree is nosuid and nodev, the writable ones included, so
// no setuid, setgid or device file in the view works inside; the device nodes are nosuid and
// noexec instead.
func collect(s spec) ([]tree, error) {
	var out []tree
	type source struct {
		mount
		device bool
	}
	var sources []source
	for _, m := range s.Mounts {
		sources = append(sources, source{mount: m})
	}
	for _, dev := range devices {
		sources = append(sources, source{mount: mount{Source: "/dev/" + dev, Target: "/dev/" + dev}, device: true})
	}
	for _, src := range sources {
		m := src.mount
		fd := m.FD
		if fd == 0 {
			var err error
			fd, err = unix.OpenTree(unix.AT_FDCWD, m.Source, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
			if err != nil {
				return nil, fmt.Errorf("cloning %s: %w", m.Source, err)
			}
		}
		set := uint64(unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV)
		if src.device {
			set = unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NOEXEC
		}
		if m.ReadOnly {
			set |= unix.MOUNT_ATTR_RDONLY
		}
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: set}); err != nil {
			return nil, fmt.Errorf("restricting %s: %w", m.Target, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return nil, fmt.Errorf("reading %s: %w", m.Target, err)
		}
		out = append(out, tree{fd: fd, target: m.Target, file: st.Mode&unix.S_IFMT != unix.S_IFDIR})
	}
	sort.SliceStable(out, func(i, j int) bool { return depth(out[i].target) < depth(out[j].target) })
	return out, nil
}

func depth(p string) int { return strings.Count(filepath.Clean(p), "/") }

// stagingDir is where the new root is built: any existing folder, covered in this namespace only.
func stagingDir() (string, error) {
	for _, d := range []string{"/tmp", "/mnt", "/var/tmp", "/media"} {
		if info, err := os.Lstat(d); err == nil && info.IsDir() {
			return d, nil
		}
	}
	return "", errors.New("finding a folder to build the sandbox's root in")
}

// specialFS mounts /dev (a few devices and links), the private /tmp and /proc.
func specialFS(stage string, tmpBytes int64) error {
	for _, d := range []string{"dev", "tmp", "proc"} {
		if err := os.Mkdir(filepath.Join(stage, d), 0o755); err != nil {
			return fmt.Errorf("creating /%s: %w", d, err)
		}
	}
	if err := unix.Mount("tmpfs", filepath.Join(stage, "dev"), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755,size=64k"); err != nil {
		return fmt.Errorf("mounting /dev: %w", err)
	}
	for name, target := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
		if err := os.Symlink(target, filepath.Join(stage, "dev", name)); err != nil {
			return fmt.Errorf("linking /dev/%s: %w", name, err)
		}
	}
	shm := filepath.Join(stage, "dev", "shm")
	if err := os.Mkdir(shm, 0o1777); err != nil {
		return fmt.Errorf("creating /dev/shm: %w", err)
	}
	if err := unix.Mount("tmpfs", shm, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("mode=1777,size=%d", shmBytes)); err != nil {
		return fmt.Errorf("mounting /dev/shm: %w", err)
	}
	opts := fmt.Sprintf("mode=1777,size=%d", tmpBytes)
	if err := unix.Mount("tmpfs", filepath.Join(stage, "tmp"), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mounting /tmp: %w", err)
	}
	if err := unix.Mount("proc", filepath.Join(stage, "proc"), "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting /proc: %w", err)
	}
	return nil
}

// place attaches one cloned tree at its target under the new root, creating the mount point.
func place(stage string, t tree) error {
	dst := filepath.Join(stage, t.target)
	if t.file {
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("creating the mount point %s: %w", t.target, err)
		}
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return fmt.Errorf("creating the mount point %s: %w", t.target, err)
		}
		f.Close()
	} else if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("creating the mount point %s: %w", t.target, err)
	}
	if err := unix.MoveMount(t.fd, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("attaching %s: %w", t.target, err)
	}
	unix.Close(t.fd)
	return nil
}

// bindOver binds a path of the work directory over itself, read-only when ro, so that it cannot
// be renamed or removed (it is a mount point) and, read-only, not changed either. Neither the
// path nor the place it is bound at is followed if it is a symbolic link.
func bindOver(stage, p string, ro bool) error {
	at := filepath.Join(stage, p)
	fd, err := unix.OpenTree(unix.AT_FDCWD, at, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		return fmt.Errorf("protecting %s: %w", p, err)
	}
	defer unix.Close(fd)
	set := uint64(unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV)
	if ro {
		set |= unix.MOUNT_ATTR_RDONLY
	}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: set}); err != nil {
		return fmt.Errorf("protecting %s: %w", p, err)
	}
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, at, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("protecting %s: %w", p, err)
	}
	return nil
}

// pivot makes the staged root the root and lets the old one go.
func pivot(stage string) error {
	if err := os.Chdir(stage); err != nil {
		return fmt.Errorf("entering the sandbox's root: %w", err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("switching to the sandbox's root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching the host's root: %w", err)
	}
	return os.Chdir("/")
}

// loopbackUp brings up lo in the sandbox's own network namespace, so local servers a test
// starts work; nothing outside the namespace is reachable through it.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening a socket to bring up loopback: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("naming loopback: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("reading loopback's flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing up loopback: %w", err)
	}
	return nil
}
