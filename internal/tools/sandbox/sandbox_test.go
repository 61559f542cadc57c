//go:build linux

package sandbox

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestConfinement runs hostile commands in a sandbox and checks each is contained: its effect is
// refused inside, and nothing changed outside.
func TestConfinement(t *testing.T) {
	t.Setenv("KEEL_SANDBOX_TEST_SECRET", "hunter2-in-the-worker")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	outside := filepath.Join(os.TempDir(), "keel-sandbox-test-outside")
	os.Remove(outside)
	limits := Limits{Processes: 64, Memory: 256 << 20, FileSize: 1 << 20}
	tests := []struct {
		name  string
		args  []string
		check func(t *testing.T, out string, rep Report)
	}{
		{"shadow is unreadable", []string{"cat", "/etc/shadow"}, failed},
		{"system paths are read-only", []string{"touch", "/etc/keel-x", "/usr/keel-x", "/keel-x"}, failed},
		{"home is absent", []string{"ls", "/root"}, failed},
		{"no user namespaces inside", []string{"unshare", "-U", "true"}, failed},
		{"no capabilities", []string{"grep", "^Cap", "/proc/self/status"}, func(t *testing.T, out string, rep Report) {
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				if !strings.HasSuffix(line, "0000000000000000") {
					t.Fatalf("a capability is left: %s", out)
				}
			}
		}},
		{"the worker's environment is invisible", []string{"sh", "-c", "env; cat /proc/*/environ; cat /proc/1/environ"}, func(t *testing.T, out string, rep Report) {
			if strings.Contains(out, "hunter2") {
				t.Fatalf("the secret leaked: %s", out)
			}
		}},
		{"only the sandbox's processes are visible", []string{"sh", "-c", "ls /proc | grep -c '^[0-9]'"}, func(t *testing.T, out string, rep Report) {
			if n := strings.TrimSpace(out); len(n) > 2 {
				t.Fatalf("%s processes visible", n)
			}
		}},
		{"host loopback is unreachable", []string{"bash", "-c", "echo hi > /dev/tcp/127.0.0.1/" + port(ln)}, failed},
		{"private tmp", []string{"touch", outside}, func(t *testing.T, out string, rep Report) {
			if rep.Code != 0 {
				t.Fatalf("touching /tmp failed: %s", out)
			}
			if _, err := os.Stat(outside); err == nil {
				t.Fatal("the sandbox's /tmp is the host's")
			}
		}},
		{"daemons are stopped", []string{"sh", "-c", "setsid sleep 1007 >/dev/null 2>&1 & (sleep 1008 &) ; true"}, func(t *testing.T, out string, rep Report) {
			if !rep.Leftovers {
				t.Fatal("the report does not mention the background processes")
			}
			assertNoProcess(t, "1007", "1008")
		}},
		{"fork bomb hits the process limit", []string{"sh", "-c", "i=0; while [ $i -lt 150 ]; do sleep 1009 & i=$((i+1)); done; wait"}, func(t *testing.T, out string, rep Report) {
			if !strings.Contains(strings.ToLower(out), "fork") && !strings.Contains(out, "unavailable") {
				t.Fatalf("no fork failure: %q", out)
			}
			assertNoProcess(t, "1009")
		}},
		{"memory hog hits the memory limit", []string{"awk", "BEGIN { s = \"x\"; for (i = 0; i < 40; i++) s = s s; print length(s) }"}, failed},
		{"file size limit", []string{"sh", "-c", "head -c 2000000 /dev/zero > big"}, func(t *testing.T, out string, rep Report) {
			if rep.Code != 128+int(syscall.SIGXFSZ) {
				t.Fatalf("report %+v, output %q", rep, out)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, rep := run(t, Config{Limits: limits}, t.TempDir(), testEnv, tt.args...)
			if !rep.Started {
				t.Fatalf("not started: %+v", rep)
			}
			tt.check(t, out, rep)
		})
	}
}

// TestWorkdirIsWritable checks a file written inside lands in the work directory, owned by the
// directory's owner.
func TestWorkdirIsWritable(t *testing.T) {
	dir := t.TempDir()
	out, rep := run(t, Config{}, dir, testEnv, "sh", "-c", "echo hello > f && mkdir -p a/b && echo x > a/b/c && pwd")
	if rep.Code != 0 || strings.TrimSpace(out) != dir {
		t.Fatalf("report %+v, output %q", rep, out)
	}
	var dst, fst syscall.Stat_t
	if err := syscall.Stat(dir, &dst); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Stat(filepath.Join(dir, "a/b/c"), &fst); err != nil {
		t.Fatal(err)
	}
	if fst.Uid != dst.Uid || fst.Gid != dst.Gid {
		t.Fatalf("file owned by %d:%d, the directory by %d:%d", fst.Uid, fst.Gid, dst.Uid, dst.Gid)
	}
}

// TestNotFound reports a program missing from the sandbox's view.
func TestNotFound(t *testing.T) {
	_, rep := run(t, Config{}, t.TempDir(), testEnv, "no-such-program-keel")
	if rep.Started || rep.Problem != ProblemNotFound {
		t.Fatalf("report %+v", rep)
	}
}

// TestAvailable probes this machine; the CI machines have user namespaces.
func TestAvailable(t *testing.T) {
	if err := Available(Config{}); err != nil {
		t.Fatalf("the sandbox is not available here: %v", err)
	}
}

func failed(t *testing.T, out string, rep Report) {
	t.Helper()
	if rep.Code == 0 && rep.Signal == 0 {
		t.Fatalf("the command succeeded: %q", out)
	}
}

func port(ln net.Listener) string {
	_, p, _ := net.SplitHostPort(ln.Addr().String())
	return p
}

// assertNoProcess fails if any process on the host has one of the marks as an argument.
func assertNoProcess(t *testing.T, marks ...string) {
	t.Helper()
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, c := range cmdlines {
		data, err := os.ReadFile(c)
		if err != nil {
			continue
		}
		for _, arg := range strings.Split(string(data), "\x00") {
			for _, m := range marks {
				if arg == m {
					t.Fatalf("a process survived: %s %q", c, data)
				}
			}
		}
	}
}
