//go:build linux

package sandbox

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// SandboxID is the host user and group ID the sandbox's root is mapped to when the worker runs as
// root: an ID no account uses, so the host's files are only what any other user may read, and
// the process limit counts the sandbox's processes alone. A worker that is not root maps the
// sandbox's root to its own user, the only ID it may map.
const SandboxID = 2000000000

// selfExe is the init's program: this very binary.
const selfExe = "/proc/self/exe"

// systemDirs are the top-level paths shown read-only (or as the same symbolic link) inside.
var systemDirs = []string{"usr", "etc", "bin", "sbin", "lib", "lib32", "lib64", "libx32"}

// Cmd is a command prepared to run in a sandbox. Start Exec (the init), call Started, wait for
// Exec, then read the Report. Report also gives back what the command held of the worker's
// limits (its cgroup, its share of the processes), so every Cmd needs it once.
type Cmd struct {
	// Exec is the sandbox's init process.
	Exec *exec.Cmd

	spec    []byte
	specW   *os.File
	reportR *os.File
	child   []*os.File
	nonce   string
	grace   time.Duration
	stop    sync.Once
	lease   *lease
	git     *gitGuard
}

// Command prepares args to run in a sandbox whose work directory is workdir (an absolute,
// resolved path), with exactly the environment env. The program args[0] is looked up on env's
// PATH inside the sandbox, or in the work directory when it holds a slash.
func Command(cfg Config, workdir string, args, env []string) (*Cmd, error) {
	return command(cfg, spec{Workdir: workdir, Args: args, Env: env})
}

func command(cfg Config, s spec) (*Cmd, error) {
	s.Network = cfg.Network == NetworkHost
	s.Limits = cfg.Limits.WithDefaults()
	s.TmpBytes = s.Limits.Memory
	grace := cfg.Grace
	if grace <= 0 {
		grace = 2 * time.Second
	}
	s.GraceMS = grace.Milliseconds()
	s.Nonce = rand.Text()
	uid, gid, mapped, err := hostIDs()
	if err != nil {
		return nil, err
	}
	c := &Cmd{nonce: s.Nonce, grace: grace}
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating the sandbox's spec pipe: %w", err)
	}
	reportR, reportW, err := os.Pipe()
	if err != nil {
		specR.Close()
		specW.Close()
		return nil, fmt.Errorf("creating the sandbox's report pipe: %w", err)
	}
	c.specW, c.reportR = specW, reportR
	c.child = []*os.File{specR, reportW}
	s.Links, s.Mounts = systemView()
	if !s.Probe {
		c.git = guardGit(s.Workdir)
		s.Pins, s.Locks = c.git.pins, c.git.locks
	}
	rw := []struct{ src, dst string }{{s.Workdir, s.Workdir}}
	if cfg.CacheDir != "" {
		if err := os.MkdirAll(cfg.CacheDir, 0o700); err != nil {
			c.closeAll()
			return nil, fmt.Errorf("creating the sandbox's cache folder: %w", err)
		}
		rw = append(rw, struct{ src, dst string }{cfg.CacheDir, CachePath})
	}
	for _, m := range rw {
		if !mapped {
			s.Mounts = append(s.Mounts, mount{Source: m.src, Target: m.dst})
			continue
		}
		f, err := idmappedTree(m.src)
		if err != nil {
			c.closeAll()
			return nil, err
		}
		c.child = append(c.child, f)
		s.Mounts = append(s.Mounts, mount{FD: 2 + len(c.child), Target: m.dst})
	}
	if c.lease, s.Limits, err = takeLease(s.Limits); err != nil {
		c.closeAll()
		return nil, err
	}
	s.TmpBytes = c.lease.tmpBytes()
	if c.spec, err = json.Marshal(s); err != nil {
		c.closeAll()
		return nil, fmt.Errorf("encoding the sandbox's spec: %w", err)
	}
	flags := uintptr(syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNS | syscall.CLONE_NEWIPC |
		syscall.CLONE_NEWUTS | unix.CLONE_NEWCGROUP)
	if !s.Network {
		flags |= syscall.CLONE_NEWNET
	}
	c.Exec = &exec.Cmd{
		Path:       selfExe,
		Args:       []string{"keel-sandbox"},
		Env:        []string{initEnv + "=init", "GOMAXPROCS=2"},
		ExtraFiles: c.child,
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags:                 flags,
			UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}},
			GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}},
			GidMappingsEnableSetgroups: false,
			Credential:                 &syscall.Credential{Uid: 0, Gid: 0, NoSetGroups: true},
			Setpgid:                    true,
			Pdeathsig:                  syscall.SIGKILL,
		},
	}
	return c, nil
}

// Started hands the spec to a started init and closes the init's ends of the pipes. Call it
// once Exec has started (or failed to start). The spec pipe stays open after the spec: closing
// it (Stop) is how the worker asks the init to stop the command, a channel the command cannot
// reach, where a signal to the init could come from the command itself.
func (c *Cmd) Started() {
	for _, f := range c.child {
		f.Close()
	}
	c.child = nil
	if !c.placeInit() {
		return
	}
	go func(w *os.File, data []byte) {
		_, _ = w.Write(data) // a dead init closes the pipe; its report says what happened
	}(c.specW, c.spec)
}

// Stop asks the init to stop the command: SIGTERM to all its processes, the grace period, then
// SIGKILL; the init then reports and exits. It may be called more than once.
func (c *Cmd) Stop() {
	c.stop.Do(func() { c.specW.Close() })
}

// Grace is how long the init gives the command's processes between SIGTERM and SIGKILL once it
// is stopped.
func (c *Cmd) Grace() time.Duration { return c.grace }

// Report reads what the init said about the command; call it after Exec has been waited for.
// ok is false when the init said nothing (it was killed before it could). Only a report that
// carries the nonce of this command's spec counts: anything else that reached the pipe is not
// the init's word.
func (c *Cmd) Report() (rep Report, ok bool) {
	c.Stop()
	defer c.reportR.Close()
	defer c.finish(&rep, &ok)
	defer c.restoreGit(&rep)
	dec := json.NewDecoder(io.LimitReader(c.reportR, 1<<16))
	for {
		var sr signedReport
		if dec.Decode(&sr) != nil {
			return Report{}, false
		}
		if subtle.ConstantTimeCompare([]byte(sr.Nonce), []byte(c.nonce)) == 1 {
			return sr.Report, true
		}
	}
}

// restoreGit undoes what the command did to git's control files that the sandbox could not bind
// read-only. Report calls it once the init has been waited for: the init's end ended its PID
// namespace, so nothing of the command can change the work directory any more.
func (c *Cmd) restoreGit(rep *Report) {
	if c.git != nil {
		rep.GitUndone = c.git.restore()
		c.git = nil
	}
}

func (c *Cmd) closeAll() {
	c.lease.end()
	for _, f := range append(c.child, c.specW, c.reportR) {
		if f != nil {
			f.Close()
		}
	}
}

// hostIDs picks the host user and group the sandbox's root maps to; mapped says the worker is
// root and the writable trees need an idmapped mount to be writable by that user.
// A worker that is root only inside a user namespace of its own (a container) can map no other
// ID, and its own is root's: the sandbox would own the files root owns and escape the process
// limit, so it is refused.
func hostIDs() (uid, gid int, mapped bool, err error) {
	if os.Geteuid() != 0 {
		return os.Geteuid(), os.Getegid(), false, nil
	}
	if !initialUserNS() {
		return 0, 0, false, errors.New("the worker runs as root inside a user namespace that cannot map an unprivileged user; run the worker as a user other than root")
	}
	return SandboxID, SandboxID, true, nil
}

// initialUserNS says this process is in the host's user namespace, where every ID can be mapped;
// root inside a container can map only the IDs its own namespace has.
func initialUserNS() bool {
	data, err := os.ReadFile("/proc/self/uid_map")
	return err == nil && strings.Join(strings.Fields(string(data)), " ") == "0 0 4294967295"
}

// systemView lists the read-only system and toolchain paths and the top-level links.
func systemView() ([]link, []mount) {
	var links []link
	var mounts []mount
	for _, name := range systemDirs {
		p := "/" + name
		info, err := os.Lstat(p)
		switch {
		case err != nil:
		case info.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(p); err == nil {
				links = append(links, link{Name: name, Target: target})
			}
		case info.IsDir():
			mounts = append(mounts, mount{Source: p, Target: p, ReadOnly: true})
		}
	}
	if root := goroot(); root != "" && !underSystem(root) {
		mounts = append(mounts, mount{Source: root, Target: root, ReadOnly: true})
	}
	return links, mounts
}

// goroot finds the Go toolchain the worker would run, so `go` works inside.
func goroot() string {
	if r := os.Getenv("GOROOT"); r != "" {
		return r
	}
	p, err := exec.LookPath("go")
	if err != nil {
		return ""
	}
	if p, err = filepath.EvalSymlinks(p); err != nil {
		return ""
	}
	return filepath.Dir(filepath.Dir(p))
}

// GoBin is the toolchain's bin folder as seen inside the sandbox, empty if there is no toolchain.
func GoBin() string {
	if r := goroot(); r != "" {
		return filepath.Join(r, "bin")
	}
	return ""
}

func underSystem(p string) bool {
	for _, name := range systemDirs {
		if p == "/"+name || strings.HasPrefix(p, "/"+name+"/") {
			return true
		}
	}
	return false
}

// idmappedTree clones the mount at path and maps its owner to SandboxID, so the sandbox's root
// can write there while its files stay owned by their owner on disk.
func idmappedTree(path string) (*os.File, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return nil, fmt.Errorf("reading the owner of %s: %w", path, err)
	}
	ns, err := usernsFor(int(st.Uid), int(st.Gid))
	if err != nil {
		return nil, err
	}
	fd, err := unix.OpenTree(unix.AT_FDCWD, path, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("cloning the mount of %s: %w", path, err)
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV, Userns_fd: uint64(ns.Fd())}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("mapping the owner of %s into the sandbox (the filesystem may not support idmapped mounts): %w", path, err)
	}
	return os.NewFile(uintptr(fd), path), nil
}

// usernsMu guards usernsCache, the user namespaces that map an owner to SandboxID, one per
// owner, kept open for the life of the process.
var (
	usernsMu    sync.Mutex
	usernsCache = map[[2]int]*os.File{}
)

// usernsFor returns a user namespace mapping uid and gid to SandboxID: a parked child creates it,
// its namespace file is kept, and the child is let go.
func usernsFor(uid, gid int) (*os.File, error) {
	usernsMu.Lock()
	defer usernsMu.Unlock()
	key := [2]int{uid, gid}
	if f, ok := usernsCache[key]; ok {
		return f, nil
	}
	cmd := &exec.Cmd{
		Path: selfExe, Args: []string{"keel-sandbox-userns"}, Env: []string{initEnv + "=park"},
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags:  syscall.CLONE_NEWUSER,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: SandboxID, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: SandboxID, Size: 1}},
			Pdeathsig:   syscall.SIGKILL,
		},
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("creating a user namespace for idmapped mounts: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, explainStart(err)
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/ns/user", cmd.Process.Pid))
	in.Close()
	_ = cmd.Wait()
	if err != nil {
		return nil, fmt.Errorf("opening the user namespace for idmapped mounts: %w", err)
	}
	usernsCache[key] = f
	return f, nil
}

// probeMu guards probed, the result of the first probe per network mode.
var (
	probeMu sync.Mutex
	probed  = map[bool]error{}
)

// Available starts one sandbox that sets itself up and runs nothing, and says why not if the
// kernel refuses. The answer is remembered for the life of the process.
func Available(cfg Config) error {
	probeMu.Lock()
	defer probeMu.Unlock()
	host := cfg.Network == NetworkHost
	if err, ok := probed[host]; ok {
		return err
	}
	err := probe(cfg)
	probed[host] = err
	return err
}

func probe(cfg Config) error {
	dir, err := os.MkdirTemp("", "keel-sandbox-probe-")
	if err != nil {
		return fmt.Errorf("creating a folder to try the sandbox in: %w", err)
	}
	defer os.RemoveAll(dir)
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		return fmt.Errorf("resolving the folder to try the sandbox in: %w", err)
	}
	cfg.CacheDir = ""
	c, err := command(cfg, spec{Workdir: dir, Probe: true})
	if err != nil {
		return err
	}
	err = c.Exec.Start()
	c.Started()
	if err != nil {
		c.Report() // releases the pipes; there is nothing in them
		return explainStart(err)
	}
	_ = c.Exec.Wait()
	rep, ok := c.Report()
	if !ok {
		return errors.New("the sandbox's init ended without a word")
	}
	if rep.Problem != "" {
		return errors.New(rep.Problem)
	}
	return nil
}

// explainStart turns a failed start into what it means.
func explainStart(err error) error {
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC) {
		return fmt.Errorf("the kernel refused to create user namespaces (%w)", err)
	}
	return fmt.Errorf("starting the sandbox: %w", err)
}

// Run runs args in a sandbox to the end, with output to out, and returns the init's report.
func Run(cfg Config, workdir string, args, env []string, out io.Writer) (Report, error) {
	c, err := Command(cfg, workdir, args, env)
	if err != nil {
		return Report{}, err
	}
	c.Exec.Stdout, c.Exec.Stderr = out, out
	err = c.Exec.Start()
	c.Started()
	if err != nil {
		c.Report() // releases the pipes; there is nothing in them
		return Report{}, explainStart(err)
	}
	_ = c.Exec.Wait()
	rep, ok := c.Report()
	if !ok {
		return Report{}, errors.New("the sandbox's init ended without a report")
	}
	return rep, nil
}
