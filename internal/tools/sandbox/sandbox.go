// Package sandbox runs one model-chosen command confined by the kernel's own facilities: its own
// user, PID, mount, IPC, UTS and (by default) network namespaces, a mount view that holds only the
// work directory (read-write), a private /tmp, a build cache and the system and toolchain paths
// (read-only), resource limits, no capabilities and no new privileges, a syscall filter that
// refuses setuid, setgid and device files, and a session keyring of its own.
//
// The sandbox's init is the current binary executed again: an init function in this package
// recognises the marker in its environment and becomes the sandbox's PID 1, so any program that
// links this package (the worker, the starter, a test binary) can serve as init. No helper binary
// and no install step are needed.
package sandbox

import (
	"errors"
	"time"

	"github.com/keelrun/keel/internal/tools/sandbox/defaults"
)

// Network values of Config.Network (package defaults holds them, and the defaults below, so that
// the configuration can name them without linking this package).
const (
	// NetworkNone gives the command a network namespace of its own with only a loopback device:
	// nothing outside the sandbox, the worker's loopback included, is reachable.
	NetworkNone = defaults.NetworkNone
	// NetworkHost shares the worker's network: an explicit opt-in for tasks that fetch modules.
	NetworkHost = defaults.NetworkHost
)

// CachePath is where Config.CacheDir appears inside the sandbox; GOCACHE, GOMODCACHE and GOPATH
// point under it, so builds stay warm from one command to the next.
const CachePath = "/cache"

// Defaults for limits left at zero.
const (
	DefaultProcesses = defaults.Processes
	DefaultMemory    = defaults.Memory
	DefaultCPUTime   = defaults.CPUTime
	DefaultFileSize  = defaults.FileSize
)

// Config is what every sandboxed command of a worker gets.
type Config struct {
	// Network is NetworkNone (the default when empty) or NetworkHost.
	Network string
	// Limits bound what one command may use.
	Limits Limits
	// CacheDir is a folder of the worker's mounted read-write at CachePath for build caches;
	// empty for none.
	CacheDir string
	// Grace is how long the command's processes get between SIGTERM and SIGKILL when it is
	// stopped; zero means 2 seconds.
	Grace time.Duration
}

// Limits bound one command. Each zero field takes its default.
type Limits struct {
	// Processes caps the processes and threads alive at once in the sandbox: its cgroup's
	// pids.max where there is one, and RLIMIT_NPROC (counted per sandbox because each has its own
	// user namespace). A worker that is not root lowers it to what is left of its own user's
	// limit (see procBudget).
	Processes int
	// Memory caps the memory of the command as a whole, shared memory and /tmp included, in bytes
	// (its cgroup's limit, where there is one), and what each process may write to (RLIMIT_DATA:
	// heap and other private writable mappings, not reserved address space); it also sizes /tmp.
	Memory int64
	// CPUTime caps each process's CPU time (RLIMIT_CPU).
	CPUTime time.Duration
	// FileSize caps the size of any file a process writes (RLIMIT_FSIZE).
	FileSize int64
}

// WithDefaults fills the zero fields.
func (l Limits) WithDefaults() Limits {
	if l.Processes <= 0 {
		l.Processes = DefaultProcesses
	}
	if l.Memory <= 0 {
		l.Memory = DefaultMemory
	}
	if l.CPUTime <= 0 {
		l.CPUTime = DefaultCPUTime
	}
	if l.FileSize <= 0 {
		l.FileSize = DefaultFileSize
	}
	return l
}

// Report is what the sandbox's init says about the command once it has ended.
type Report struct {
	// Started says the command was started; when false, Problem says why not.
	Started bool `json:"started"`
	// Problem is "not_found" when the program is not in the sandbox's view, or a description of a
	// setup failure.
	Problem string `json:"problem,omitempty"`
	// Code is the exit status when the command exited on its own.
	Code int `json:"code"`
	// Signal is the number of the signal that ended the command, 0 if none did.
	Signal int `json:"signal,omitempty"`
	// Leftovers says processes were still running after the command ended; they were stopped.
	Leftovers bool `json:"leftovers,omitempty"`
	// Keyring is the serial of the session keyring the init made for the command, a fresh one
	// for every sandbox, so a caller can check the command did not share its own keys.
	Keyring int `json:"keyring,omitempty"`
	// OutOfMemory says the kernel killed a process of the command because the command as a whole
	// reached its memory limit; ProcessLimit that a fork was refused at its process limit. The
	// worker reads both from the command's cgroup (never from the init), so they are known only
	// where there is one.
	OutOfMemory  bool `json:"-"`
	ProcessLimit bool `json:"-"`
	// GitUndone lists what the worker undid, once the command had ended, of what the command did
	// to git's control files (see GitControl) that the sandbox could not bind read-only: paths
	// relative to the work directory that the command created or whose link it replaced.
	GitUndone []string `json:"-"`
}

// Problems the init reports instead of starting the command.
const (
	// ProblemNotFound marks a program that is not in the sandbox's view.
	ProblemNotFound = "not_found"
	// ProblemNotExecutable marks a program file that the kernel would not run.
	ProblemNotExecutable = "not_executable"
)

// ErrUnsupported is returned on systems without the kernel facilities the sandbox needs.
var ErrUnsupported = errors.New("the sandbox needs Linux user, PID and mount namespaces")

// initEnv marks the environment of a process that is to become a sandbox's init (or, with the
// value "park", a holder of a user namespace).
const initEnv = "KEEL_SANDBOX_INIT"

// spec is what the worker tells the init: the mounts, the command and its limits.
type spec struct {
	Mounts   []mount  `json:"mounts"`
	Links    []link   `json:"links"`
	Workdir  string   `json:"workdir"`
	Args     []string `json:"args"`
	Env      []string `json:"env"`
	Network  bool     `json:"network"`
	Limits   Limits   `json:"limits"`
	GraceMS  int64    `json:"grace_ms"`
	Probe    bool     `json:"probe"`
	TmpBytes int64    `json:"tmp_bytes"`
	// Nonce is a secret of this command's, which the init returns with its report.
	Nonce string `json:"nonce"`
	// Pins are folders of the work directory bound over themselves, so that they cannot be
	// renamed; Locks are paths bound read-only over themselves (see gitGuard), placed after the
	// pins.
	Pins  []string `json:"pins,omitempty"`
	Locks []string `json:"locks,omitempty"`
}

// signedReport is what the init writes on the report pipe: the report and the spec's nonce, so
// the worker can tell the init's word from anything else that could reach the pipe.
type signedReport struct {
	Nonce  string `json:"nonce"`
	Report Report `json:"report"`
}

// mount is one tree in the sandbox's view: from a path, or from a mount file descriptor the
// worker prepared (an idmapped clone), placed at Target.
type mount struct {
	Source   string `json:"source,omitempty"`
	FD       int    `json:"fd,omitempty"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"ro"`
}

// link is a symbolic link at the top of the sandbox's root (/bin -> usr/bin on merged systems).
type link struct {
	Name   string `json:"name"`
	Target string `json:"target"`
}
