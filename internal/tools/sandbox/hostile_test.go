//go:build linux

package sandbox

import (
	"bytes"
	"encoding/json"
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

	"golang.org/x/sys/unix"
)

// workerEnv makes the test binary a worker that runs one sandbox and prints what happened
// (serveWorker); the tests start it as root and as an unprivileged user.
const workerEnv = "KEEL_SANDBOX_TEST_WORKER"

// inheritedFD is a directory the test hands each worker it starts, as an open descriptor the
// worker did not ask for: nothing a worker inherits may reach the command.
const inheritedFD = 10

// nobody is the unprivileged user the tests run a worker as.
const nobody = 65534

func init() {
	if req := os.Getenv(workerEnv); req != "" {
		os.Exit(serveWorker(req))
	}
}

// workerRequest is what the test asks a worker to run.
type workerRequest struct {
	Dir   string
	Cache string
	Args  []string
}

// workerReply is what the worker saw: the output, the init's report, its own session keyring and
// out-of-memory score.
type workerReply struct {
	Out     string
	Report  Report
	OK      bool
	Err     string
	Keyring int
	// OOMScore is the worker's own out-of-memory score adjustment.
	OOMScore string
}

// serveWorker runs one sandbox as a worker would and prints the reply as JSON.
func serveWorker(req string) int {
	var r workerRequest
	if err := json.Unmarshal([]byte(req), &r); err != nil {
		fmt.Println(err)
		return 2
	}
	var out bytes.Buffer
	c, err := Command(Config{CacheDir: r.Cache, Limits: Limits{Processes: 64, Memory: 256 << 20, FileSize: 1 << 20}}, r.Dir, r.Args, testEnv)
	reply := workerReply{}
	if err == nil {
		c.Exec.Stdout, c.Exec.Stderr = &out, &out
		err = c.Exec.Start()
		c.Started()
		if err == nil {
			_ = c.Exec.Wait()
		}
		reply.Report, reply.OK = c.Report()
	}
	if err != nil {
		reply.Err = err.Error()
	}
	reply.Out = out.String()
	reply.Keyring, _ = unix.KeyctlInt(unix.KEYCTL_GET_KEYRING_ID, unix.KEY_SPEC_SESSION_KEYRING, 1, 0, 0)
	own, _ := os.ReadFile(oomScoreFile)
	reply.OOMScore = strings.TrimSpace(string(own))
	_ = json.NewEncoder(os.Stdout).Encode(reply)
	return 0
}

// worker runs sandboxes from a worker process of its own, as a given user.
type worker struct {
	name string
	uid  int
	exe  string
}

// workers are a root worker and an unprivileged one, each its own process started with an extra
// open directory.
func workers(t *testing.T) []worker {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("these tests start workers as other users and need to run as root")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A copy where the unprivileged user may run it: the test binary's own folder is private.
	dir := ownedDir(t, 0)
	exe := filepath.Join(dir, "worker")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return []worker{{"root worker", 0, self}, {"unprivileged worker", nobody, exe}}
}

// ownedDir is a fresh folder outside the test's private ones, owned by uid.
func ownedDir(t *testing.T, uid int) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "keel-sandbox-worker-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, uid, uid); err != nil {
		t.Fatal(err)
	}
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// run has the worker run args in a sandbox over dir with the cache folder cache.
func (w worker) run(t *testing.T, dir, cache string, args ...string) workerReply {
	t.Helper()
	req, _ := json.Marshal(workerRequest{Dir: dir, Cache: cache, Args: args})
	inherited, err := os.Open(os.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer inherited.Close()
	cmd := exec.Command(w.exe)
	cmd.Env = []string{workerEnv + "=" + string(req), "PATH=" + os.Getenv("PATH")}
	cmd.ExtraFiles = make([]*os.File, inheritedFD-2)
	cmd.ExtraFiles[inheritedFD-3] = inherited
	cmd.Stderr = os.Stderr
	if w.uid != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(w.uid), Gid: uint32(w.uid)}}
	}
	data, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v; output %q", w.name, err, data)
	}
	var reply workerReply
	if err := json.Unmarshal(data, &reply); err != nil {
		t.Fatalf("%s replied %q: %v", w.name, data, err)
	}
	if reply.Err != "" {
		t.Fatalf("%s could not run the sandbox: %s", w.name, reply.Err)
	}
	if !reply.OK || !reply.Report.Started {
		t.Fatalf("%s: the init said nothing or did not start the command: %+v, output %q", w.name, reply, reply.Out)
	}
	return reply
}

// perl runs a Perl program; perl is part of every Debian-based system's essential set, and its
// syscall() reaches calls no shell utility makes.
func perl(program string) []string { return []string{"perl", "-e", program} }

// TestHostileCommands runs commands that try to leave something behind for later, reach the
// init's channel to the worker or take the init down, from a root worker and an unprivileged one.
func TestHostileCommands(t *testing.T) {
	setuid := `cp /bin/cat x && chmod 4755 x; cp /bin/cat y && chmod g+s y; install -m 4755 /bin/cat z; ` +
		`mkdir -m 2755 d; mknod char c 1 3; mknod block b 7 0; mknod fifo p; cp /bin/cat /cache/c && chmod u+s /cache/c; ` +
		`cp /bin/cat /cache/g && chmod 2755 /cache/g; ls -l . /cache`
	forged := `{"nonce":"guess","report":{"started":false,"problem":"not_found"}}`
	tests := []struct {
		name  string
		args  []string
		check func(t *testing.T, r workerReply, dir, cache string)
	}{
		{"no setuid, setgid or device file is left on the disk", []string{"sh", "-c", setuid}, func(t *testing.T, r workerReply, dir, cache string) {
			if !strings.Contains(r.Out, "Operation not permitted") {
				t.Errorf("no refusal in the output: %q", r.Out)
			}
			for _, name := range []string{filepath.Join(dir, "x"), filepath.Join(dir, "y"), filepath.Join(cache, "c"), filepath.Join(dir, "fifo")} {
				if _, err := os.Lstat(name); err != nil {
					t.Errorf("the command did not get as far as %s: %v", name, err)
				}
			}
			assertNoPrivilegedFiles(t, dir, cache)
		}},
		{"no setuid file through the calls themselves", perl(perlSetuidCalls), func(t *testing.T, r workerReply, dir, cache string) {
			for _, want := range []string{"open 1", "mkdir 1", "chmod 1", "fchmod 1"} {
				if !strings.Contains(r.Out, want+"\n") {
					t.Errorf("want %q (refused with EPERM) in %q", want, r.Out)
				}
			}
			assertNoPrivilegedFiles(t, dir, cache)
		}},
		{"keys and io_uring are refused", perl(perlRefusedCalls), func(t *testing.T, r workerReply, dir, cache string) {
			want := fmt.Sprintf("add_key %d\nkeyctl %d\nio_uring_setup %d\nopenat2 %d\n", unix.EPERM, unix.EPERM, unix.ENOSYS, unix.ENOSYS)
			if x32Bit != 0 {
				want += fmt.Sprintf("x32 %d\n", unix.ENOSYS)
			}
			if r.Out != want {
				t.Errorf("output %q, want %q", r.Out, want)
			}
		}},
		{"only the standard files reach the command", []string{"ls", "-l", "/proc/self/fd"}, func(t *testing.T, r workerReply, dir, cache string) {
			assertOnlyStandardFiles(t, r.Out)
		}},
		{"a forged report goes nowhere", []string{"sh", "-c", "(echo '" + forged + "' > /proc/1/fd/4) 2>/dev/null && echo forged-proc; " +
			"(echo '" + forged + "' >&4) 2>/dev/null && echo forged-fd; readlink /proc/1/fd/4 >/dev/null 2>&1 && echo linked; " +
			"head -c1 /proc/1/mem >/dev/null 2>&1 && echo memory; echo ran; exit 5"}, func(t *testing.T, r workerReply, dir, cache string) {
			if r.Report.Code != 5 || r.Out != "ran\n" {
				t.Errorf("report %+v, output %q", r.Report, r.Out)
			}
		}},
		{"the init survives every signal", []string{"sh", "-c", "for s in QUIT TERM INT HUP USR1 USR2 SEGV BUS ABRT FPE ILL TRAP SYS PIPE ALRM TSTP TTIN TTOU STOP CONT; " +
			"do kill -s $s 1 || echo not sent $s; done; echo alive; exit 7"}, func(t *testing.T, r workerReply, dir, cache string) {
			if r.Report.Code != 7 || r.Report.Signal != 0 || r.Out != "alive\n" {
				t.Errorf("report %+v, output %q", r.Report, r.Out)
			}
		}},
		{"a fresh session keyring", []string{"true"}, func(t *testing.T, r workerReply, dir, cache string) {
			if r.Report.Keyring == 0 || r.Report.Keyring == r.Keyring {
				t.Errorf("the command's session keyring %d, the worker's %d", r.Report.Keyring, r.Keyring)
			}
		}},
		{"every mount is nosuid and nodev", []string{"cat", "/proc/self/mountinfo"}, func(t *testing.T, r workerReply, dir, cache string) {
			assertMountsRestricted(t, r.Out)
		}},
		// Init puts its own score back right after the command has started: the command polls
		// (a bounded number of times) until it has.
		{"the command is the first to die and its cgroup is its root", []string{"sh", "-c", "cat /proc/self/oom_score_adj; " +
			"sh -c 'cat /proc/self/oom_score_adj'; i=0; while [ \"$(cat /proc/1/oom_score_adj)\" = " + commandOOMScore + " ] && [ $i -lt 500 ]; " +
			"do i=$((i+1)); done; cat /proc/1/oom_score_adj; cat /proc/self/cgroup"}, func(t *testing.T, r workerReply, dir, cache string) {
			lines := strings.Split(strings.TrimSpace(r.Out), "\n")
			if len(lines) < 4 || lines[0] != commandOOMScore || lines[1] != commandOOMScore || lines[2] != r.OOMScore {
				t.Fatalf("want the command and its child at %s and the init at the worker's %s, got %q", commandOOMScore, r.OOMScore, r.Out)
			}
			for _, l := range lines[3:] {
				if !strings.HasSuffix(l, ":/") {
					t.Errorf("the command sees a cgroup path above its own: %q", l)
				}
			}
		}},
	}
	for _, w := range workers(t) {
		t.Run(w.name, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					dir, cache := ownedDir(t, w.uid), ownedDir(t, w.uid)
					tt.check(t, w.run(t, dir, cache, tt.args...), dir, cache)
				})
			}
		})
	}
}

// perlSetuidCalls asks for setuid and setgid bits through each kind of call and prints the
// errno of each refusal.
const perlSetuidCalls = `use Fcntl;
sysopen(my $f, "o", O_CREAT|O_WRONLY, 06755) or print "open ", $!+0, "\n";
mkdir("m", 02755) or print "mkdir ", $!+0, "\n";
open(my $g, ">", "f") or die; chmod(04755, "f") or print "chmod ", $!+0, "\n";
chmod(02755, $g) or print "fchmod ", $!+0, "\n";
`

// perlRefusedCalls makes the refused calls and prints each errno.
var perlRefusedCalls = fmt.Sprintf(`my ($type, $desc, $data, $dot) = ("user", "keel", "secret", ".");
$! = 0; syscall(%d, $type, $desc, $data, 6, -3); print "add_key ", $!+0, "\n";
$! = 0; syscall(%d, 0, -3, 0); print "keyctl ", $!+0, "\n";
my $p = "\0" x 120; $! = 0; syscall(%d, 1, $p); print "io_uring_setup ", $!+0, "\n";
my $h = "\0" x 24; $! = 0; syscall(%d, -100, $dot, $h, 24); print "openat2 ", $!+0, "\n";
if (%d) { $! = 0; syscall(%d); print "x32 ", $!+0, "\n"; }
`, unix.SYS_ADD_KEY, unix.SYS_KEYCTL, unix.SYS_IO_URING_SETUP, unix.SYS_OPENAT2, x32Bit, x32Bit|unix.SYS_GETPID)

// assertNoPrivilegedFiles fails if any file under the folders, seen from the host, is setuid,
// setgid (a directory's setgid bit included) or a device.
func assertNoPrivilegedFiles(t *testing.T, dirs ...string) {
	t.Helper()
	for _, dir := range dirs {
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				t.Errorf("walking %s: %v", p, err)
				return nil
			}
			info, err := d.Info()
			if err != nil {
				t.Errorf("reading %s: %v", p, err)
				return nil
			}
			if m := info.Mode(); m&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeDevice|fs.ModeCharDevice) != 0 {
				t.Errorf("%s is %v on the host", p, m)
			}
			return nil
		})
	}
}

// assertOnlyStandardFiles reads `ls -l /proc/self/fd` and fails on any descriptor but 0, 1, 2 and
// the one ls opened for the listing.
func assertOnlyStandardFiles(t *testing.T, listing string) {
	t.Helper()
	var seen []string
	for _, line := range strings.Split(strings.TrimSpace(listing), "\n") {
		name, target, ok := strings.Cut(line, " -> ")
		if !ok {
			continue // the total
		}
		fields := strings.Fields(name)
		fd, err := strconv.Atoi(fields[len(fields)-1])
		if err != nil {
			t.Fatalf("reading %q: %v", line, err)
		}
		seen = append(seen, strconv.Itoa(fd))
		if fd > 2 && !(strings.HasPrefix(target, "/proc/") && strings.HasSuffix(target, "/fd")) {
			t.Errorf("descriptor %d (%s) reached the command", fd, target)
		}
	}
	if len(seen) < 3 || seen[0] != "0" || seen[1] != "1" || seen[2] != "2" {
		t.Errorf("descriptors %v, listing %q", seen, listing)
	}
}

// assertMountsRestricted reads the sandbox's mountinfo and fails on a mount that lets a setuid
// file or a device work; only the device nodes bound into /dev may be devices.
func assertMountsRestricted(t *testing.T, mountinfo string) {
	t.Helper()
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(mountinfo), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 {
			t.Fatalf("reading mountinfo line %q", line)
		}
		point, opts := f[4], ","+f[5]+","
		n++
		if !strings.Contains(opts, ",nosuid,") {
			t.Errorf("%s is mounted without nosuid (%s)", point, f[5])
		}
		device := false
		for _, d := range devices {
			device = device || point == "/dev/"+d
		}
		if !device && !strings.Contains(opts, ",nodev,") {
			t.Errorf("%s is mounted without nodev (%s)", point, f[5])
		}
	}
	if n < 10 {
		t.Errorf("only %d mounts in %q", n, mountinfo)
	}
}

// TestOnlyStandardFiles hands the init a directory it was not meant to pass on, as a worker
// started with an open descriptor would, and checks the command sees only its three.
func TestOnlyStandardFiles(t *testing.T) {
	extra, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	c, err := Command(Config{}, t.TempDir(), []string{"ls", "-l", "/proc/self/fd"}, testEnv)
	if err != nil {
		t.Fatal(err)
	}
	c.Exec.ExtraFiles = append(c.Exec.ExtraFiles, extra)
	out := runPrepared(t, c)
	assertOnlyStandardFiles(t, out)
}

// TestForgedReportIsIgnored puts a report without the spec's nonce on the report pipe ahead of
// the init's, as a command that reached the pipe would, and checks the worker reads the init's.
func TestForgedReportIsIgnored(t *testing.T) {
	c, err := Command(Config{}, t.TempDir(), []string{"sh", "-c", "echo ran; exit 3"}, testEnv)
	if err != nil {
		t.Fatal(err)
	}
	forged, _ := json.Marshal(signedReport{Nonce: "guess", Report: Report{Problem: ProblemNotFound}})
	if _, err := c.child[1].Write(append(forged, '\n')); err != nil {
		t.Fatal(err)
	}
	out := runPrepared(t, c)
	rep, ok := c.Report()
	if !ok || !rep.Started || rep.Code != 3 || out != "ran\n" {
		t.Fatalf("report %+v (ok %v), output %q", rep, ok, out)
	}
}

// TestStopIsGraceful stops a running command through Stop and checks its processes got SIGTERM
// before anything harder.
func TestStopIsGraceful(t *testing.T) {
	c, err := Command(Config{}, t.TempDir(), []string{"sh", "-c", "trap 'echo terminated; exit 4' TERM; echo started; sleep 1021 & wait"}, testEnv)
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Exec.Stdout, c.Exec.Stderr = w, w
	err = c.Exec.Start()
	c.Started()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, len("started\n"))
	if _, err := io.ReadFull(r, first); err != nil {
		t.Fatal(err)
	}
	c.Stop()
	rest, _ := io.ReadAll(r)
	_ = c.Exec.Wait()
	rep, ok := c.Report()
	if !ok || rep.Code != 4 || string(rest) != "terminated\n" {
		t.Fatalf("report %+v (ok %v), output %q", rep, ok, rest)
	}
	assertNoProcess(t, "1021")
}

// runPrepared starts a prepared sandbox, waits for it and returns its output.
func runPrepared(t *testing.T, c *Cmd) string {
	t.Helper()
	var out bytes.Buffer
	c.Exec.Stdout, c.Exec.Stderr = &out, &out
	err := c.Exec.Start()
	c.Started()
	if err != nil {
		c.Report()
		t.Fatal(err)
	}
	_ = c.Exec.Wait()
	return out.String()
}

// TestStopDuringForkBomb stops a fork bomb that holds every process it may have and signals the
// init all the while: the init needs nothing from the kernel to be stopped and to report.
func TestStopDuringForkBomb(t *testing.T) {
	c, err := Command(Config{Limits: Limits{Processes: 64}, Grace: 100 * time.Millisecond}, t.TempDir(),
		[]string{"bash", "-c", "f() { kill -USR1 1; kill -TERM 1; f | f & }; f; sleep 1022"}, testEnv)
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Exec.Stdout, c.Exec.Stderr = w, w
	err = c.Exec.Start()
	c.Started()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	full := make(chan struct{})
	go func() {
		defer r.Close()
		var seen bytes.Buffer
		buf := make([]byte, 4096)
		said := false
		for {
			n, err := r.Read(buf)
			seen.Write(buf[:n])
			if !said && strings.Contains(seen.String(), "Resource temporarily unavailable") {
				close(full)
				said = true
			}
			if err != nil {
				return
			}
		}
	}()
	<-full
	c.Stop()
	_ = c.Exec.Wait()
	rep, ok := c.Report()
	if !ok || !rep.Started || !rep.Leftovers {
		t.Fatalf("report %+v (ok %v)", rep, ok)
	}
	assertNoProcess(t, "1022")
}
