package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/keelrun/keel/internal/devkit/testenv"
	"github.com/keelrun/keel/internal/tools/sandbox"
)

// seccompProfile is the syscall profile the worker's container runs under (docker-compose.yml's
// security_opt, the Kubernetes example's seccompProfile).
const seccompProfile = "seccomp/keel-worker.json"

// keelRule marks the profile's entries that Keel adds to Docker's default ones: each entry's
// comment starts with it, and the profile without them is Docker's stock default.
const keelRule = "keel: "

// checkEnv makes this test binary, started inside the container, run one sandboxed command and
// print the outcome (see init) instead of running tests; its value is the sandbox's network mode.
const checkEnv = "KEEL_DEPLOY_SANDBOX_CHECK"

// containerUser is the user the worker's image runs as (the Dockerfile's keel user): the sandbox
// inside a container needs a worker that is not root (see sandbox.hostIDs).
const containerUser = 10001

// dockerCaps is the capability set Docker gives a container by default. Docker resolves the
// profile's includes and excludes against it, so CAP_SYS_ADMIN's entries are left out.
var dockerCaps = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
	"CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
	"CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
}

// containerHostname is the container's host name, which the sandbox replaces with its own.
const containerHostname = "keel-worker"

// dockerMaskedPaths and dockerReadonlyPaths are what Docker hides and makes read-only under /proc
// and /sys unless a container is started with systempaths=unconfined. A mount covering part of
// /proc keeps the kernel from mounting a new proc inside a user namespace, and the sandbox needs one.
var (
	dockerMaskedPaths = []string{"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys",
		"/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
		"/sys/firmware", "/sys/devices/virtual/powercap"}
	dockerReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// checkResult is what the binary inside the container prints.
type checkResult struct {
	Output string         `json:"output"`
	Report sandbox.Report `json:"report"`
	Error  string         `json:"error,omitempty"`
}

// init runs the check when the test binary was started as the container's process. It runs
// after the sandbox package's own init, which turns the re-executed binary into the sandbox's
// init.
func init() {
	network, ok := os.LookupEnv(checkEnv)
	if !ok {
		return
	}
	var res checkResult
	dir, err := os.MkdirTemp("", "keel-check-")
	if err == nil {
		var out bytes.Buffer
		res.Report, err = sandbox.Run(sandbox.Config{Network: network}, dir, []string{"uname", "-n"},
			[]string{"PATH=/usr/bin:/bin"}, &out)
		res.Output = out.String()
	}
	if err != nil {
		res.Error = err.Error()
	}
	_ = json.NewEncoder(os.Stdout).Encode(res)
	os.Exit(0)
}

// dockerProfile is the part of Docker's seccomp profile format the shipped profile uses.
type dockerProfile struct {
	DefaultAction   string `json:"defaultAction"`
	DefaultErrnoRet *uint  `json:"defaultErrnoRet,omitempty"`
	ArchMap         []struct {
		Architecture     string   `json:"architecture"`
		SubArchitectures []string `json:"subArchitectures"`
	} `json:"archMap"`
	Syscalls []dockerSyscall `json:"syscalls"`
}

type dockerSyscall struct {
	Names    []string     `json:"names"`
	Action   string       `json:"action"`
	ErrnoRet *uint        `json:"errnoRet,omitempty"`
	Args     []seccompArg `json:"args,omitempty"`
	Comment  string       `json:"comment,omitempty"`
	Includes dockerFilter `json:"includes"`
	Excludes dockerFilter `json:"excludes"`
}

type dockerFilter struct {
	Caps      []string `json:"caps,omitempty"`
	Arches    []string `json:"arches,omitempty"`
	MinKernel string   `json:"minKernel,omitempty"`
}

// seccompArg is one argument condition; Docker's format and the OCI runtime's share it.
type seccompArg struct {
	Index    uint   `json:"index"`
	Value    uint64 `json:"value"`
	ValueTwo uint64 `json:"valueTwo,omitempty"`
	Op       string `json:"op"`
}

// ociSeccomp is the linux.seccomp of an OCI runtime configuration.
type ociSeccomp struct {
	DefaultAction   string       `json:"defaultAction"`
	DefaultErrnoRet *uint        `json:"defaultErrnoRet,omitempty"`
	Architectures   []string     `json:"architectures"`
	Syscalls        []ociSyscall `json:"syscalls"`
}

type ociSyscall struct {
	Names    []string     `json:"names"`
	Action   string       `json:"action"`
	ErrnoRet *uint        `json:"errnoRet,omitempty"`
	Args     []seccompArg `json:"args,omitempty"`
}

// readProfile loads the shipped profile strictly: a misspelt field would be ignored by Docker
// and so by this test too.
func readProfile(t *testing.T) dockerProfile {
	t.Helper()
	data, err := os.ReadFile(seccompProfile)
	require.NoError(t, err)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p dockerProfile
	require.NoError(t, dec.Decode(&p), "%s is not a seccomp profile in Docker's format", seccompProfile)
	return p
}

// stock is the profile without Keel's entries: Docker's default profile.
func (p dockerProfile) stock() dockerProfile {
	p.Syscalls = slices.DeleteFunc(slices.Clone(p.Syscalls), func(s dockerSyscall) bool {
		return strings.HasPrefix(s.Comment, keelRule)
	})
	return p
}

// seccompArch is libseccomp's name for this machine's architecture.
var seccompArch = map[string]string{"amd64": "SCMP_ARCH_X86_64", "arm64": "SCMP_ARCH_AARCH64"}

// toOCI does what Docker does with a profile before it hands it to the runtime: the native
// architecture and its sub-architectures, and only the entries whose includes hold and whose
// excludes do not, judged by the container's capabilities (any excluded one drops an entry,
// every included one must be there), runtime.GOARCH and the kernel's version.
func (p dockerProfile) toOCI(caps []string, kernel [2]int) (ociSeccomp, error) {
	out := ociSeccomp{DefaultAction: p.DefaultAction, DefaultErrnoRet: p.DefaultErrnoRet}
	native, ok := seccompArch[runtime.GOARCH]
	if !ok {
		return out, fmt.Errorf("no seccomp architecture known for %s", runtime.GOARCH)
	}
	for _, a := range p.ArchMap {
		if a.Architecture == native {
			out.Architectures = append([]string{a.Architecture}, a.SubArchitectures...)
		}
	}
	if out.Architectures == nil {
		return out, fmt.Errorf("the profile's archMap has no %s", native)
	}
	for _, s := range p.Syscalls {
		ex, in := s.Excludes, s.Includes
		if slices.Contains(ex.Arches, runtime.GOARCH) ||
			slices.ContainsFunc(ex.Caps, func(c string) bool { return slices.Contains(caps, c) }) ||
			(ex.MinKernel != "" && !kernelBelow(kernel, ex.MinKernel)) {
			continue
		}
		if (len(in.Arches) > 0 && !slices.Contains(in.Arches, runtime.GOARCH)) ||
			slices.ContainsFunc(in.Caps, func(c string) bool { return !slices.Contains(caps, c) }) ||
			(in.MinKernel != "" && kernelBelow(kernel, in.MinKernel)) {
			continue
		}
		out.Syscalls = append(out.Syscalls, ociSyscall{Names: s.Names, Action: s.Action, ErrnoRet: s.ErrnoRet, Args: s.Args})
	}
	return out, nil
}

// kernelBelow says the kernel version k is below v ("major.minor").
func kernelBelow(k [2]int, v string) bool {
	major, minor, _ := strings.Cut(v, ".")
	a, _ := strconv.Atoi(major)
	b, _ := strconv.Atoi(minor)
	return k[0] < a || (k[0] == a && k[1] < b)
}

// kernelVersion is the running kernel's major and minor version.
func kernelVersion(t *testing.T) [2]int {
	t.Helper()
	var u unix.Utsname
	require.NoError(t, unix.Uname(&u))
	release := unix.ByteSliceToString(u.Release[:])
	var k [2]int
	_, err := fmt.Sscanf(release, "%d.%d", &k[0], &k[1])
	require.NoError(t, err, "reading the kernel version from %q", release)
	return k
}

// TestSeccompProfileRunsTheSandbox runs the sandbox (one command, through the sandbox package as
// the worker runs it) inside an OCI container made the way Docker makes the worker's: the image's
// user, Docker's default capabilities, its own PID, mount, IPC, UTS and network namespaces, and
// the shipped profile converted as Docker converts it. The command prints the host name, which
// only the sandbox's init sets (to "sandbox"), so the output shows it ran inside. It must work for
// both network modes, and as the Kubernetes example's container (no capabilities, no_new_privs, a
// user namespace of its own); it must fail under Docker's stock default profile, under the
// profile without any one of Keel's entries (each is needed), and with the runtime's masked /proc
// paths, which docker-compose.yml turns off (systempaths=unconfined) and the Kubernetes example
// too (procMount: Unmasked).
func TestSeccompProfileRunsTheSandbox(t *testing.T) {
	testenv.Needs(t, "runc, installed by the package's TestMain")
	profile := readProfile(t)
	kernel := kernelVersion(t)
	type outcome int
	const (
		works outcome = iota
		fails
		unnamed // the command runs, but under the container's host name
	)
	type test struct {
		name    string
		profile dockerProfile
		run     container
		want    outcome
		problem string // part of the error or the init's problem, for a run that fails
	}
	docker := container{caps: dockerCaps, network: sandbox.NetworkNone}
	hostNetwork, masked := docker, docker
	hostNetwork.network = sandbox.NetworkHost
	masked.masked = true
	// The Kubernetes example's container: no capabilities at all, no_new_privs, a user namespace
	// of the pod's own (hostUsers: false).
	kubernetes := container{network: sandbox.NetworkNone, noNewPrivileges: true, userns: true}
	kubernetesMasked := kubernetes
	kubernetesMasked.masked = true // procMount: Default
	tests := []test{
		{"shipped profile, no network", profile, docker, works, ""},
		{"shipped profile, host network", profile, hostNetwork, works, ""},
		{"shipped profile, no capabilities, no_new_privs, user namespace", profile, kubernetes, works, ""},
		{"Docker's default profile", profile.stock(), docker, fails, "the kernel refused to create user namespaces"},
		{"shipped profile, masked /proc paths", profile, masked, fails, "mounting /proc"},
		{"shipped profile, user namespace, masked /proc paths", profile, kubernetesMasked, fails, "mounting /proc"},
	}
	keel := 0
	for i, s := range profile.Syscalls {
		if !strings.HasPrefix(s.Comment, keelRule) {
			continue
		}
		keel++
		without := profile
		without.Syscalls = slices.Delete(slices.Clone(profile.Syscalls), i, i+1)
		tt := test{name: fmt.Sprintf("without entry %d, %s", i, s.Names[0]), profile: without, run: docker, want: fails}
		switch {
		case s.Names[0] == "sethostname":
			tt.want = unnamed // the init names its namespace on a best-effort basis
		case s.Names[0] == "clone" && len(s.Args) == 1 && s.Args[0].ValueTwo&unix.CLONE_NEWNET == 0:
			tt.run = hostNetwork
		}
		tests = append(tests, tt)
	}
	require.NotZero(t, keel, "the profile has no entry whose comment starts with %q", keelRule)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			filter, err := tt.profile.toOCI(tt.run.caps, kernel)
			require.NoError(t, err)
			res := tt.run.start(t, filter)
			switch tt.want {
			case works, unnamed:
				require.Empty(t, res.Error)
				require.True(t, res.Report.Started, "the command did not start: %s", res.Report.Problem)
				assert.Equal(t, 0, res.Report.Code)
				name := "sandbox\n"
				if tt.want == unnamed {
					name = containerHostname + "\n"
				}
				assert.Equal(t, name, res.Output)
			case fails:
				assert.False(t, res.Error == "" && res.Report.Started, "the sandbox ran (output %q)", res.Output)
				assert.Contains(t, res.Error+res.Report.Problem, tt.problem)
			}
		})
	}
}

// runc is the command that runs a container: runc itself as root, through sudo otherwise (as
// testenv.EnsureCommand installs it).
var runc = func() []string {
	if os.Geteuid() == 0 {
		return []string{"runc"}
	}
	return []string{"sudo", "-n", "runc"}
}()

// containerTimeout bounds one container run: an echo in a sandbox takes well under a second on an
// idle machine; the bound only keeps a hung runtime from holding the test.
const containerTimeout = 60 * time.Second

// container is how a container for the check is made.
type container struct {
	caps            []string // its capabilities (the bounding set; the process, not root, holds none)
	network         string   // the sandbox's network mode
	masked          bool     // Docker's masked and read-only /proc and /sys paths
	noNewPrivileges bool
	userns          bool // a user namespace of the container's own, mapping podIDs
}

// podIDs is where a container with a user namespace of its own maps its IDs on the host, as
// Kubernetes maps a pod's with hostUsers: false: a range of 65536 that no host account uses.
const podIDs = 1 << 20

// start runs this test binary as the container's process under filter and returns what the check
// inside printed.
func (c container) start(t *testing.T, filter ociSeccomp) checkResult {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	bundle := t.TempDir()
	if c.userns {
		// The container's root is an unprivileged user on the host: it must reach the bundle and
		// the binary, which go test keeps in folders only the host's root may enter.
		require.NoError(t, os.Chmod(bundle, 0o755))
		require.NoError(t, os.Chmod(filepath.Dir(bundle), 0o755))
		self = copyExecutable(t, self, filepath.Join(bundle, "check"))
	}
	rootfs := filepath.Join(bundle, "rootfs")
	require.NoError(t, os.Mkdir(rootfs, 0o755))
	if c.userns {
		// The container's root, a stranger to the host's files, makes its mount points there.
		require.NoError(t, os.Chmod(rootfs, 0o777))
	}
	mounts := []map[string]any{
		{"destination": "/proc", "type": "proc", "source": "proc"},
		{"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		{"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": []string{"nosuid", "nodev", "mode=1777"}},
		{"destination": "/keel/check", "type": "bind", "source": self, "options": []string{"rbind", "ro"}},
	}
	for _, dir := range []string{"/usr", "/etc", "/bin", "/sbin", "/lib", "/lib64"} {
		if info, err := os.Lstat(dir); err != nil || !info.IsDir() {
			continue // a link into /usr (merged systems) comes with /usr
		}
		mounts = append(mounts, map[string]any{"destination": dir, "type": "bind", "source": dir, "options": []string{"rbind", "ro", "nosuid", "nodev"}})
	}
	for _, link := range []string{"bin", "sbin", "lib", "lib64"} {
		if target, err := os.Readlink("/" + link); err == nil {
			require.NoError(t, os.Symlink(target, filepath.Join(rootfs, link)))
		}
	}
	config := map[string]any{
		"ociVersion": "1.0.2",
		"process": map[string]any{
			"user":            map[string]any{"uid": containerUser, "gid": containerUser},
			"args":            []string{"/keel/check", "-test.run=^$"},
			"env":             []string{"PATH=/usr/bin:/bin", checkEnv + "=" + c.network},
			"cwd":             "/",
			"capabilities":    map[string]any{"bounding": c.caps},
			"noNewPrivileges": c.noNewPrivileges,
		},
		"root":     map[string]any{"path": "rootfs"},
		"hostname": containerHostname,
		"mounts":   mounts,
		"linux": map[string]any{
			"namespaces": []map[string]string{{"type": "pid"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}, {"type": "network"}},
			"seccomp":    filter,
		},
	}
	if c.userns {
		linux := config["linux"].(map[string]any)
		linux["namespaces"] = append(linux["namespaces"].([]map[string]string), map[string]string{"type": "user"})
		ids := []map[string]int{{"containerID": 0, "hostID": podIDs, "size": 65536}}
		linux["uidMappings"], linux["gidMappings"] = ids, ids
	}
	if c.masked {
		linux := config["linux"].(map[string]any)
		linux["maskedPaths"], linux["readonlyPaths"] = dockerMaskedPaths, dockerReadonlyPaths
	}
	data, err := json.MarshalIndent(config, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(bundle, "config.json"), data, 0o644))

	ctx, cancel := context.WithTimeout(context.Background(), containerTimeout)
	defer cancel()
	state := filepath.Join(bundle, "state")
	id := fmt.Sprintf("keel-check-%d", os.Getpid())
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, runc[0], append(runc[1:], "--root", state, "run", "--bundle", bundle, id)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	_ = exec.Command(runc[0], append(runc[1:], "--root", state, "delete", "--force", id)...).Run()
	require.NoError(t, err, "runc: %s", stderr.String())
	var res checkResult
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &res), "the check printed %q (stderr %q)", stdout.String(), stderr.String())
	return res
}

// copyExecutable copies the program at src to dst, executable by anyone, and returns dst.
func copyExecutable(t *testing.T, src, dst string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(dst, data, 0o755))
	return dst
}
