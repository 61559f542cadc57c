//go:build linux

package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/jsondur"
	"github.com/keelrun/keel/internal/tools/sandbox"
)

// sandboxBox is a work directory whose commands run in a sandbox with small limits.
func sandboxBox(t *testing.T) *Box {
	t.Helper()
	b, _ := newBox(t)
	b.Policy = contract.ToolLimits{CommandTimeout: jsondur.Duration(30 * time.Second)}
	b.Sandbox = &sandbox.Config{Limits: sandbox.Limits{Processes: 64, Memory: 256 << 20, FileSize: 1 << 20}}
	return b
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

// TestSandboxedStops checks that a timeout and a cancellation end every process a command
// started, daemons that left its session included.
func TestSandboxedStops(t *testing.T) {
	b := sandboxBox(t)
	res := call(t, b, "run_command", map[string]any{"command": `sh -c 'setsid sleep 1011 >/dev/null 2>&1 & (sleep 1012 &); sleep 1013'`, "timeout_seconds": 1})
	if !res.IsError || !strings.Contains(res.Content, "stopped after 1 second") {
		t.Fatalf("result %+v", res)
	}
	assertNoProcess(t, "1011", "1012", "1013")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan contract.ToolResult, 1)
	go func() {
		done <- callCtx(t, ctx, b, "run_command", map[string]any{"command": `sh -c 'setsid sleep 1014 >/dev/null 2>&1 & echo started; sleep 1015'`})
	}()
	waitFor(t, func() bool { return processWith("1015") })
	cancel()
	res = <-done
	if !res.IsError || !strings.Contains(res.Content, "session was cancelled") {
		t.Fatalf("result %+v", res)
	}
	assertNoProcess(t, "1014", "1015")
}

// TestSandboxedCancelIsGraceful checks that a cancelled command's processes get SIGTERM, and the
// grace period to act on it, before SIGKILL.
func TestSandboxedCancelIsGraceful(t *testing.T) {
	b := sandboxBox(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan contract.ToolResult, 1)
	go func() {
		done <- callCtx(t, ctx, b, "run_command", map[string]any{"command": `sh -c 'trap "echo terminated; exit 0" TERM; sleep 1016 & wait'`})
	}()
	waitFor(t, func() bool { return processWith("1016") })
	cancel()
	res := <-done
	if !res.IsError || !strings.Contains(res.Content, "session was cancelled") || !strings.Contains(res.Content, "terminated") {
		t.Fatalf("result %+v", res)
	}
	assertNoProcess(t, "1016")
}

// TestSandboxedFeedback checks what the model is told about leftovers and limits.
func TestSandboxedFeedback(t *testing.T) {
	tests := []struct {
		name    string
		command string
		want    string
		marks   []string
	}{
		{"daemons", `sh -c 'setsid sleep 1016 >/dev/null 2>&1 &'`, "they were stopped", []string{"1016"}},
		{"file size", `sh -c 'head -c 2000000 /dev/zero > big'`, "limit on file size (1 MiB per file)", nil},
		{"processes", `sh -c 'i=0; while [ $i -lt 100 ]; do sleep 1017 & i=$((i+1)); done; wait'`, "limit on processes (64 at once)", []string{"1017"}},
		{"processes refused, then success", `sh -c '(i=0; while [ $i -lt 100 ]; do sleep 1018 & i=$((i+1)); done) >/dev/null 2>&1; exit 0'`,
			"limit on processes (64 at once)", []string{"1018"}},
		{"memory", `awk 'BEGIN { s = "x"; for (i = 0; i < 40; i++) s = s s; print length(s) }'`, "out of memory under the sandbox's limit (256 MiB", nil},
		{"memory of the command as a whole", `sh -c 'for i in 1 2 3 4; do awk "BEGIN { s = \"x\"; for (i = 0; i < 27; i++) s = s s; system(\"sleep 2\") }" & pids="$pids $!"; done; ` +
			`for p in $pids; do wait $p || fail=$?; done; exit $fail'`, "more memory than the sandbox's limit (256 MiB for the command as a whole", nil},
		{"shadow", "cat /etc/shadow", "Permission denied", nil},
		{"outside write", "touch /etc/keel-x", "Read-only file system", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, sandboxBox(t), "run_command", map[string]any{"command": tt.command})
			if !strings.Contains(res.Content, tt.want) {
				t.Fatalf("result %q lacks %q", res.Content, tt.want)
			}
			assertNoProcess(t, tt.marks...)
		})
	}
}

// TestSandboxedGoTest runs the Go toolchain inside, with the build cache the worker uses.
func TestSandboxedGoTest(t *testing.T) {
	if _, err := os.Stat(sandbox.GoBin()); err != nil {
		t.Skip("no Go toolchain found")
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Skip("no cache folder")
	}
	b, _ := newBox(t)
	b.Policy = contract.ToolLimits{CommandTimeout: jsondur.Duration(5 * time.Minute)}
	b.Sandbox = &sandbox.Config{CacheDir: filepath.Join(cache, "keel", "sandbox")}
	files := map[string]string{
		"go.mod":       "module example.com/calc\n\ngo 1.21\n",
		"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"wrong\")\n\t}\n}\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(b.Root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res := call(t, b, "run_command", map[string]any{"command": "go test ./..."})
	if res.IsError || !strings.Contains(res.Content, "exit status 0") || !strings.Contains(res.Content, "ok") {
		t.Fatalf("result %q", res.Content)
	}
}

// TestSandboxEnv checks the environment a sandboxed command gets.
func TestSandboxEnv(t *testing.T) {
	t.Setenv("GOPROXY", "https://user:secret@proxy.example.com,direct")
	t.Setenv("GOMODCACHE", "/root/go/pkg/mod")
	t.Setenv("OPENAI_API_KEY", "sk-x")
	env := strings.Join(sandboxEnv(true, "/opt/go/bin"), "\n")
	for _, want := range []string{"GOPROXY=https://proxy.example.com,direct", "GOCACHE=/cache/go-build", "GOMODCACHE=/cache/mod", "HOME=/tmp", "/opt/go/bin"} {
		if !strings.Contains(env, want) {
			t.Errorf("environment lacks %q:\n%s", want, env)
		}
	}
	for _, bad := range []string{"secret", "/root/go/pkg/mod", "sk-x"} {
		if strings.Contains(env, bad) {
			t.Errorf("environment holds %q:\n%s", bad, env)
		}
	}
}

func processWith(mark string) bool {
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, c := range cmdlines {
		data, err := os.ReadFile(c)
		if err == nil && strings.Contains(string(data), "\x00"+mark) {
			return true
		}
	}
	return false
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSandboxFailureReachesTheOperator checks that a sandbox that cannot be set up tells the
// model only that commands cannot run, and tells the operator why.
func TestSandboxFailureReachesTheOperator(t *testing.T) {
	b := sandboxBox(t)
	blocker := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	b.Sandbox.CacheDir = filepath.Join(blocker, "cache") // a folder inside a file cannot be made
	var heard []error
	b.SandboxFailed = func(err error) { heard = append(heard, err) }
	res := call(t, b, "run_command", map[string]any{"command": "true"})
	if !res.IsError || !strings.Contains(res.Content, "sandbox could not be prepared") {
		t.Fatalf("result %+v", res)
	}
	if strings.Contains(res.Content, blocker) {
		t.Fatalf("the model was shown a worker path: %q", res.Content)
	}
	if len(heard) != 1 || !strings.Contains(heard[0].Error(), "cache folder") {
		t.Fatalf("the operator heard %v, want one error naming the cache folder", heard)
	}
}

// TestSandboxedGitNote checks that a command that creates one of git's control files is told that
// it was undone, and what to do instead, and that the file is gone.
func TestSandboxedGitNote(t *testing.T) {
	b := sandboxBox(t)
	if err := os.MkdirAll(filepath.Join(b.Root, ".git", "refs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.Root, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := call(t, b, "run_command", map[string]any{"command": `sh -c 'mkdir .git/hooks && echo touch /tmp/x > .git/hooks/pre-commit'`})
	if res.IsError || !strings.Contains(res.Content, `what the command did to ".git/hooks" was undone`) || !strings.Contains(res.Content, "git commit") {
		t.Fatalf("result %+v", res)
	}
	if _, err := os.Lstat(filepath.Join(b.Root, ".git", "hooks")); err == nil {
		t.Fatal(".git/hooks is still there")
	}
}
