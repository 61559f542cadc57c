//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Limits per command. Resource limits (setrlimit) bound each process, and the kernel counts
// RLIMIT_NPROC per user: they cannot bound what a command's processes use together, shared memory
// and tmpfs pages are not counted at all, and a worker that is not root shares its process count
// with its sandboxes. So each sandbox also gets a cgroup of its own, under the worker's cgroup,
// where the machine lets the worker create one, and every command holds a share of the worker
// user's process limit.

// cgroupMode is how this machine lets the worker bound commands as a whole.
type cgroupMode string

const (
	cgroupNone cgroupMode = "none"
	cgroupV1   cgroupMode = "v1" // the memory and pids hierarchies of cgroup v1
	cgroupV2   cgroupMode = "v2" // a cgroup v2 subtree with the memory and pids controllers
)

// Names under the worker's cgroup.
const (
	// cgroupPrefix starts the name of a sandbox's cgroup, followed by the worker's PID and a
	// counter, so a later worker can tell the leftovers of a dead one.
	cgroupPrefix = "keel-sandbox-"
	// workerLeaf is the cgroup v2 leaf the worker's processes move to when their cgroup must
	// hand controllers to the sandboxes (a cgroup with processes cannot).
	workerLeaf = "keel-worker"
	// rlimitSlack is how far above a cgroup's process limit the command's RLIMIT_NPROC is set.
	rlimitSlack = 16
	// shmBytes is the size of the sandbox's /dev/shm.
	shmBytes = 64 << 20
	// initHeadroom is the part of a command's memory limit that its tmpfs folders cannot fill,
	// left for the init and the command's own processes: a full /tmp then fails writes with "no
	// space left" rather than making the kernel kill processes at the limit, the init among them.
	initHeadroom = 32 << 20
	// cgroupGone bounds the wait for a sandbox's cgroup to empty once its init has been reaped.
	cgroupGone = 5 * time.Second
)

// hostLimits is what the machine offers for bounding commands, found once per process.
type hostLimits struct {
	mode cgroupMode
	// parents are the folders the sandboxes' cgroups are created in: the worker's cgroup for
	// v2; its memory and its pids cgroups for v1.
	parents []string
	// why says why there is no cgroup, for mode none.
	why   string
	procs *procBudget
}

var (
	machineOnce sync.Once
	machine     *hostLimits
)

// limitsHere finds once what this machine offers, raising the worker's own process limit to its
// ceiling on the way.
func limitsHere() *hostLimits {
	machineOnce.Do(func() { machine = detectLimits() })
	return machine
}

// Enforcement says in one line how commands' limits are enforced on this machine, for the
// worker to print when it starts, and what is weaker when no cgroup is available.
func Enforcement() string {
	h := limitsHere()
	var line string
	switch h.mode {
	case cgroupV2:
		line = "sandbox limits: one cgroup v2 per command under " + h.parents[0] +
			" bounds its memory (shared memory and /tmp included, no swap) and its processes as a whole"
	case cgroupV1:
		line = "sandbox limits: one cgroup per command in the v1 memory and pids hierarchies (" +
			strings.Join(h.parents, ", ") + ") bounds its memory (shared memory and /tmp included) and its processes as a whole"
	default:
		line = "sandbox limits: no cgroup for commands (" + h.why + "), so only per-process limits hold, which is weaker: " +
			"shared memory and /tmp are not bounded per command (its processes together may use the process limit times the memory limit), " +
			"and processes are counted per user (each sandbox's own, and the worker's for a worker that is not root)"
	}
	if !h.procs.unlimited {
		line += fmt.Sprintf("; running commands share at most %d of the worker user's %d processes, the rest is kept for the worker", h.procs.total, h.procs.limit)
	}
	return line
}

// Bounded reports whether each command gets a cgroup of its own on this machine, which bounds its
// memory (shared memory and /tmp included) and its processes as a whole. Without one the sandbox
// runs in the weaker mode Enforcement describes, which the operator should be shown.
func Bounded() bool { return limitsHere().mode != cgroupNone }

// detectLimits sizes the process budget and picks the cgroup mode, trying one cgroup for real.
func detectLimits() *hostLimits {
	h := &hostLimits{mode: cgroupNone}
	h.procs = workerBudget()
	mode, parents, err := findCgroups()
	if err == nil {
		sweepCgroups(parents)
		var g *cgroup
		if g, err = newCgroup(mode, parents, Limits{}.WithDefaults()); err == nil {
			err = g.remove()
		}
	}
	if err != nil {
		h.why = err.Error()
		return h
	}
	h.mode, h.parents = mode, parents
	return h
}

// workerBudget raises this process's soft process limit to its ceiling and sizes the budget the
// running commands share. A root worker's sandboxes run as an ID of their own, and the kernel
// applies no limit of root's to them at the host's level, so its budget is unlimited.
func workerBudget() *procBudget {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NPROC, &lim); err != nil {
		return newProcBudget(0, true)
	}
	if lim.Cur < lim.Max {
		raised := unix.Rlimit{Cur: lim.Max, Max: lim.Max}
		if unix.Setrlimit(unix.RLIMIT_NPROC, &raised) == nil {
			lim = raised
		}
	}
	return newProcBudget(lim.Cur, os.Geteuid() == 0 || lim.Cur == unix.RLIM_INFINITY)
}

// findCgroups finds where this process's cgroups are and which mode they allow: v2 when the
// worker's cgroup v2 offers memory and pids (handing them to sub-cgroups, see delegateV2), else v1
// when the memory and pids hierarchies are mounted.
func findCgroups() (cgroupMode, []string, error) {
	own, err := ownCgroups()
	if err != nil {
		return cgroupNone, nil, err
	}
	if dir, ok := own[""]; ok {
		ctrl, _ := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
		if hasWords(string(ctrl), "memory", "pids") {
			if err := delegateV2(dir, "memory", "pids"); err != nil {
				return cgroupNone, nil, err
			}
			return cgroupV2, []string{dir}, nil
		}
	}
	mem, okm := own["memory"]
	pids, okp := own["pids"]
	if okm && okp {
		return cgroupV1, []string{mem, pids}, nil
	}
	return cgroupNone, nil, errors.New("neither cgroup v2 with the memory and pids controllers nor the v1 memory and pids hierarchies are mounted")
}

// ownCgroups maps each v1 controller, and "" for cgroup v2, to the folder of this process's cgroup
// in its hierarchy, from /proc/self/cgroup and the mounts.
func ownCgroups() (map[string]string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("reading the worker's cgroups: %w", err)
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("reading the mounts: %w", err)
	}
	return cgroupDirs(string(data), string(mounts)), nil
}

// cgroupDirs joins the lines of /proc/self/cgroup with the cgroup mounts of /proc/self/mountinfo:
// a mount shows its hierarchy from the root it names (a container's own cgroup, say).
func cgroupDirs(cgroups, mountinfo string) map[string]string {
	paths := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(cgroups), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			paths[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			paths[c] = parts[2]
		}
	}
	out := map[string]string{}
	for _, line := range strings.Split(mountinfo, "\n") {
		fields := strings.Fields(line)
		sep := indexOf(fields, "-")
		if sep < 5 || sep+3 >= len(fields) {
			continue
		}
		root, point, fstype := fields[3], fields[4], fields[sep+1]
		var keys []string
		switch fstype {
		case "cgroup2":
			keys = []string{""}
		case "cgroup":
			keys = strings.Split(fields[sep+3], ",")
		}
		for _, k := range keys {
			p, ok := paths[k]
			if _, seen := out[k]; !ok || seen {
				continue
			}
			rel, err := filepath.Rel(root, p)
			if err != nil || strings.HasPrefix(rel, "..") {
				continue
			}
			out[k] = filepath.Join(point, rel)
		}
	}
	return out
}

func indexOf(fields []string, s string) int {
	for i, f := range fields {
		if f == s {
			return i
		}
	}
	return -1
}

// hasWords says every word is among the space-separated words of s.
func hasWords(s string, words ...string) bool {
	have := strings.Fields(s)
	for _, w := range words {
		if indexOf(have, w) < 0 {
			return false
		}
	}
	return true
}

// delegateV2 lets sub-cgroups of dir use the controllers. A cgroup v2 that holds processes cannot
// give controllers to its children (the "no internal processes" rule), so when the kernel says
// it is busy the processes of dir (the worker's own, where it runs in a cgroup of its own) move to
// the leaf workerLeaf first.
func delegateV2(dir string, controllers ...string) error {
	control := filepath.Join(dir, "cgroup.subtree_control")
	if cur, err := os.ReadFile(control); err == nil && hasWords(string(cur), controllers...) {
		return nil
	}
	enable := func() error { return writeFile(control, "+"+strings.Join(controllers, " +")) }
	err := enable()
	if !errors.Is(err, unix.EBUSY) {
		if err != nil {
			return fmt.Errorf("handing %s to the sandboxes' cgroups under %s: %w", strings.Join(controllers, " and "), dir, err)
		}
		return nil
	}
	leaf := filepath.Join(dir, workerLeaf)
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("creating a leaf cgroup for the worker: %w", err)
	}
	for pass := 0; pass < 10 && errors.Is(err, unix.EBUSY); pass++ {
		procs, rerr := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if rerr != nil {
			return fmt.Errorf("listing the processes of the worker's cgroup: %w", rerr)
		}
		for _, pid := range strings.Fields(string(procs)) {
			if werr := writeFile(filepath.Join(leaf, "cgroup.procs"), pid); werr != nil && !errors.Is(werr, unix.ESRCH) {
				return fmt.Errorf("moving the worker's processes into a leaf cgroup: %w", werr)
			}
		}
		err = enable()
	}
	if err != nil {
		return fmt.Errorf("handing %s to the sandboxes' cgroups under %s: %w", strings.Join(controllers, " and "), dir, err)
	}
	return nil
}

// sweepCgroups removes the cgroups of sandboxes whose worker has died; their processes died with
// their init (the parent-death signal).
func sweepCgroups(parents []string) {
	for _, p := range parents {
		dirs, _ := filepath.Glob(filepath.Join(p, cgroupPrefix+"*"))
		for _, d := range dirs {
			owner, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(d), cgroupPrefix), "-")
			pid, err := strconv.Atoi(owner)
			if err == nil && pid != os.Getpid() && errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
				_ = unix.Rmdir(d)
			}
		}
	}
}

// cgroup is one sandbox's cgroup: one folder for v2, a memory and a pids folder for v1.
type cgroup struct {
	mode cgroupMode
	dirs []string
}

// cgroupSeq numbers the sandboxes' cgroups of this process.
var cgroupSeq atomic.Int64

// newCgroup creates a sandbox's cgroup under parents with the command's memory and process limits.
func newCgroup(mode cgroupMode, parents []string, l Limits) (*cgroup, error) {
	name := fmt.Sprintf("%s%d-%d", cgroupPrefix, os.Getpid(), cgroupSeq.Add(1))
	g := &cgroup{mode: mode}
	for _, p := range parents {
		d := filepath.Join(p, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			_ = g.remove()
			return nil, fmt.Errorf("creating a cgroup for the sandbox under %s: %w", p, err)
		}
		g.dirs = append(g.dirs, d)
	}
	mem, procs := strconv.FormatInt(l.Memory, 10), strconv.Itoa(l.Processes)
	settings := []cgroupSetting{
		{0, "memory.max", mem, false},
		{0, "memory.swap.max", "0", true},
		{0, "pids.max", procs, false},
	}
	if mode == cgroupV1 {
		settings = []cgroupSetting{
			{0, "memory.limit_in_bytes", mem, false},
			{0, "memory.memsw.limit_in_bytes", mem, true},
			{1, "pids.max", procs, false},
		}
	}
	for _, s := range settings {
		err := writeFile(filepath.Join(g.dirs[s.dir], s.file), s.value)
		if err != nil && !(s.optional && errors.Is(err, os.ErrNotExist)) {
			_ = g.remove()
			return nil, fmt.Errorf("setting %s of the sandbox's cgroup: %w", s.file, err)
		}
	}
	return g, nil
}

// cgroupSetting is one limit written into a sandbox's cgroup.
type cgroupSetting struct {
	dir      int // which of the cgroup's folders: 0 memory, 1 pids (the same folder for v2)
	file     string
	value    string
	optional bool // absent where the kernel does not account swap
}

// place moves a process (the init, before it starts anything) into the cgroup.
func (g *cgroup) place(pid int) error {
	for _, d := range g.dirs {
		if err := writeFile(filepath.Join(d, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("placing the sandbox in its cgroup: %w", err)
		}
	}
	return nil
}

// cgroupUsage is what a sandbox's cgroup counted over the command's life.
type cgroupUsage struct {
	// oomKills counts processes the kernel killed at the memory limit.
	oomKills int64
	// forkRefusals counts forks refused at the process limit.
	forkRefusals int64
	// peakMemory is the most memory the command used at once, in bytes.
	peakMemory int64
	// peakProcs is the most processes and threads alive at once.
	peakProcs int64
}

// usage reads the cgroup's counters; a counter the kernel does not offer stays zero.
func (g *cgroup) usage() cgroupUsage {
	var u cgroupUsage
	memDir, pidsDir := g.dirs[0], g.dirs[len(g.dirs)-1]
	counters := []struct {
		to   *int64
		path string
		key  string // the line's key in a flat keyed file, "" for a single value
	}{
		{&u.oomKills, filepath.Join(memDir, "memory.events"), "oom_kill"},
		{&u.peakMemory, filepath.Join(memDir, "memory.peak"), ""},
		{&u.forkRefusals, filepath.Join(pidsDir, "pids.events"), "max"},
		{&u.peakProcs, filepath.Join(pidsDir, "pids.peak"), ""},
	}
	if g.mode == cgroupV1 {
		counters[0].path = filepath.Join(memDir, "memory.oom_control")
		counters[1].path = filepath.Join(memDir, "memory.max_usage_in_bytes")
	}
	for _, c := range counters {
		*c.to = readCounter(c.path, c.key)
	}
	return u
}

// readCounter reads one number from a cgroup file: the whole file, or the value of key.
func readCounter(path, key string) int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		var v string
		switch {
		case key == "" && len(f) == 1:
			v = f[0]
		case key != "" && len(f) == 2 && f[0] == key:
			v = f[1]
		default:
			continue
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		return n
	}
	return 0
}

// remove deletes the cgroup once its processes are gone, killing any that are left (there should
// be none once the init has been reaped: the end of a PID namespace's init ends every process in
// it). It polls until the kernel lets the folders go, up to cgroupGone.
func (g *cgroup) remove() error {
	deadline := time.Now().Add(cgroupGone)
	var first error
	for _, d := range g.dirs {
		if err := removeDir(d, deadline); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// removeDir removes one folder of a cgroup, killing what is left in it, until deadline.
func removeDir(d string, deadline time.Time) error {
	for {
		err := unix.Rmdir(d)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("removing the sandbox's cgroup %s: %w", d, err)
		}
		killAll(d)
		time.Sleep(5 * time.Millisecond) // the poll interval; the deadline bounds the wait
	}
}

// killAll kills every process in the cgroup at d: at once with cgroup.kill where v2 offers it,
// else one by one.
func killAll(d string) {
	if writeFile(filepath.Join(d, "cgroup.kill"), "1") == nil {
		return
	}
	procs, _ := os.ReadFile(filepath.Join(d, "cgroup.procs"))
	for _, p := range strings.Fields(string(procs)) {
		if pid, err := strconv.Atoi(p); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// writeFile writes a value to a cgroup file, which must exist.
func writeFile(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// lease is what one command holds of the worker's limits: its share of the process budget and
// its cgroup (nil without one). end gives both back; it runs once.
type lease struct {
	limits Limits // the command's, its process limit lowered to its share
	budget *procBudget
	cg     *cgroup
	// placeErr says why the init could not be put into the cgroup; it was killed unstarted.
	placeErr error
	used     cgroupUsage
	once     sync.Once
}

// takeLease takes a command's share of the process budget and creates its cgroup with the
// limits l, its process limit lowered to the share. It returns the limits for the init to set:
// with a cgroup, RLIMIT_NPROC stays a backstop rlimitSlack above the cgroup's limit, so the
// limit a command meets is the one the worker can read back from the kernel.
func takeLease(l Limits) (*lease, Limits, error) {
	h := limitsHere()
	n, err := h.procs.take(l.Processes)
	if err != nil {
		return nil, l, err
	}
	l.Processes = n
	ls := &lease{limits: l, budget: h.procs}
	if h.mode != cgroupNone {
		if ls.cg, err = newCgroup(h.mode, h.parents, l); err != nil {
			ls.end()
			return nil, l, err
		}
		l.Processes += rlimitSlack
	}
	return ls, l, nil
}

// tmpBytes sizes the sandbox's /tmp: the memory limit where nothing bounds the command as a whole;
// with a cgroup, what the limit leaves after /dev/shm and initHeadroom (at least a quarter of it).
func (ls *lease) tmpBytes() int64 {
	m := ls.limits.Memory
	if ls.cg == nil {
		return m
	}
	return max(m-shmBytes-initHeadroom, m/4)
}

// placeInit puts a started init into the command's cgroup while it waits for its spec, so it has
// started nothing yet. An init that cannot be placed is killed before it hears its spec, and
// Report says why; false means so.
func (c *Cmd) placeInit() bool {
	if c.lease == nil || c.lease.cg == nil || c.Exec.Process == nil {
		return true
	}
	if err := c.lease.cg.place(c.Exec.Process.Pid); err != nil {
		c.lease.placeErr = err
		_ = c.Exec.Process.Kill()
		c.Stop()
		return false
	}
	return true
}

// finish ends the command's lease once the init has been reaped and adds to the report what the
// kernel counted: the worker reads it from the cgroup, so nothing inside can forge it.
func (c *Cmd) finish(rep *Report, ok *bool) {
	ls := c.lease
	if ls == nil {
		return
	}
	ls.end()
	if ls.placeErr != nil {
		*rep, *ok = Report{Problem: ls.placeErr.Error()}, true
		return
	}
	rep.OutOfMemory = ls.used.oomKills > 0
	rep.ProcessLimit = ls.used.forkRefusals > 0
}

// Limits are the limits the command runs under: the configured ones, with the process limit
// lowered to the command's share of the worker user's processes.
func (c *Cmd) Limits() Limits {
	if c.lease == nil {
		return Limits{}
	}
	return c.lease.limits
}

// end reads the cgroup's counters, removes it and gives the share back; call it once the init
// has been reaped.
func (ls *lease) end() {
	if ls == nil {
		return
	}
	ls.once.Do(func() {
		if ls.cg != nil {
			ls.used = ls.cg.usage()
			_ = ls.cg.remove() // a leftover is swept by the next worker's start
		}
		ls.budget.give(ls.limits.Processes)
	})
}
