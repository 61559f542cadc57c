//go:build linux

package tools

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/jsondur"
	"github.com/keelrun/keel/internal/tools/sandbox"
)

// liveMembers lists the processes of a group that are alive (not zombies), read straight from
// /proc rather than through the code under test.
func liveMembers(t *testing.T, pgid int) []string {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range stats {
		data, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(data, ')')
		f := strings.Fields(string(data[i+1:]))
		if len(f) > 2 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" {
			out = append(out, string(data))
		}
	}
	return out
}

// printedPIDs reads the PIDs a command printed on its first line: its shell's PID (the group's
// ID, because the shell leads its own group) and its background child's.
func printedPIDs(t *testing.T, content string) []int {
	t.Helper()
	_, out, ok := strings.Cut(content, "Output:\n")
	if !ok {
		t.Fatalf("no output in %q", content)
	}
	var pids []int
	for _, f := range strings.Fields(strings.SplitN(out, "\n", 2)[0]) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("no PIDs in %q", content)
		}
		pids = append(pids, n)
	}
	return pids
}

// assertAllGone fails if the group or any of the given processes is still alive.
func assertAllGone(t *testing.T, pids []int) {
	t.Helper()
	if live := liveMembers(t, pids[0]); len(live) > 0 {
		t.Fatalf("processes of group %d still alive: %v", pids[0], live)
	}
	for _, pid := range pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(data, ')')
		if f := strings.Fields(string(data[i+1:])); len(f) > 0 && f[0] != "Z" {
			t.Fatalf("process %d still alive: %s", pid, data)
		}
	}
}

func shBox(t *testing.T) *Box {
	t.Helper()
	b, _ := newBox(t)
	b.Policy = contract.ToolLimits{Commands: []string{"sh"}, CommandTimeout: jsondur.Duration(30 * time.Second)}
	return b
}

// TestCommandTimeoutKillsGroup runs a shell that starts a grandchild and checks that the timeout
// stops the whole group within the grace.
func TestCommandTimeoutKillsGroup(t *testing.T) {
	b := shBox(t)
	start := time.Now()
	res := call(t, b, "run_command", map[string]any{"command": `sh -c 'sleep 30 & echo $$ $!; sleep 30'`, "timeout_seconds": 1})
	elapsed := time.Since(start)
	if !res.IsError || !res.Changed || !strings.Contains(res.Content, "stopped after 1 second because it ran too long") {
		t.Fatalf("result %+v", res)
	}
	assertAllGone(t, printedPIDs(t, res.Content))
	if elapsed > 1*time.Second+DefaultGrace+time.Second {
		t.Fatalf("took %s, more than timeout plus grace", elapsed)
	}
}

// TestCommandTimeoutEscalatesToKill checks that a group that ignores SIGTERM is killed after the
// grace.
func TestCommandTimeoutEscalatesToKill(t *testing.T) {
	b := shBox(t)
	res := call(t, b, "run_command", map[string]any{"command": `sh -c 'trap "" TERM; sleep 30 & echo $$ $!; sleep 30'`, "timeout_seconds": 1})
	if !res.IsError || !strings.Contains(res.Content, "ran too long") {
		t.Fatalf("result %+v", res)
	}
	assertAllGone(t, printedPIDs(t, res.Content))
}

// TestCommandCancelKillsGroup cancels the context once the command is running and checks that
// the whole group is gone when Run returns.
func TestCommandCancelKillsGroup(t *testing.T) {
	b := shBox(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pidFile := filepath.Join(b.Root, "pid")
	go func() {
		deadline := time.Now().Add(10 * time.Second)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for range tick.C {
			if data, err := os.ReadFile(pidFile); (err == nil && len(data) > 0) || time.Now().After(deadline) {
				cancel()
				return
			}
		}
	}()
	start := time.Now()
	res := callCtx(t, ctx, b, "run_command", map[string]any{"command": `sh -c 'sleep 30 & echo $$ $! > pid; sleep 30'`})
	if time.Since(start) > 10*time.Second {
		t.Fatal("the command was not stopped by cancellation")
	}
	if !res.IsError || !strings.Contains(res.Content, "stopped because the session was cancelled") {
		t.Fatalf("result %+v", res)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	assertAllGone(t, printedPIDs(t, "Output:\n"+string(data)))
}

// TestCommandLeftoversAreStopped checks that background processes outliving a finished command
// do not survive it.
func TestCommandLeftoversAreStopped(t *testing.T) {
	b := shBox(t)
	res := call(t, b, "run_command", map[string]any{"command": `sh -c 'sleep 30 >/dev/null 2>&1 & echo $$ $!'`})
	if res.IsError || !strings.Contains(res.Content, "exit status 0") || !strings.Contains(res.Content, "they were stopped") {
		t.Fatalf("result %+v", res)
	}
	assertAllGone(t, printedPIDs(t, res.Content))
}

func TestCommandEnvironmentIsClean(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test-not-for-commands")
	t.Setenv("GITHUB_TOKEN", "ghp-test")
	t.Setenv("KEEL_SOMETHING", "x")
	t.Setenv("GOFLAGS", "-mod=mod")
	b, _ := newBox(t)
	res := call(t, b, "run_command", map[string]any{"command": "env"})
	if res.IsError {
		t.Fatalf("result %+v", res)
	}
	for _, leaked := range []string{"OPENAI_API_KEY", "sk-test", "GITHUB_TOKEN", "KEEL_SOMETHING"} {
		if strings.Contains(res.Content, leaked) {
			t.Errorf("the command saw %s:\n%s", leaked, res.Content)
		}
	}
	for _, kept := range []string{"PATH=", "GOFLAGS=-mod=mod"} {
		if !strings.Contains(res.Content, kept) {
			t.Errorf("the command lacks %s:\n%s", kept, res.Content)
		}
	}
}

func TestCommandResults(t *testing.T) {
	tests := []struct {
		name    string
		policy  []string
		cap     int
		command string
		isError bool
		changed bool
		want    []string
	}{
		{"success", nil, 0, "echo hello", false, true, []string{"exit status 0 (success)", "Output:\nhello\n"}},
		{"failure is information", nil, 0, `sh -c 'echo boom >&2; exit 3'`, false, true, []string{"exit status 3, which means it failed", "boom", "Read the output, fix the cause"}},
		{"quoted words", nil, 0, `printf "%s|%s" 'a b' "c\"d"`, false, true, []string{"Output:\na b|c\"d"}},
		{"runs in the work directory", nil, 0, "ls", false, true, []string{"calc.go"}},
		{"stdin is empty", nil, 0, "cat", false, true, []string{"exit status 0", "It printed nothing."}},
		{"output cap", nil, 100, `sh -c 'i=0; while [ $i -lt 100 ]; do echo line$i; i=$((i+1)); done'`, false, true,
			[]string{"line0\n", "line99\n", "[cut: ", "bytes of output from the middle are not shown; 690 bytes in all]"}},
		{"denied program", []string{"go", "sh"}, 0, "rm -rf sub", true, false, []string{`the program "rm" is not on the allowed list, which holds go, sh`}},
		{"not installed", nil, 0, "no-such-program-keel", true, false, []string{`The program "no-such-program-keel" is not installed`}},
		{"shell operator", nil, 0, "ls | wc -l", true, false, []string{`shell operator "|"`}},
		{"unclosed quote", nil, 0, `echo "hi`, true, false, []string{"opening quote"}},
		{"script outside", nil, 0, "../outside/x.sh", true, false, []string{"outside the work directory"}},
		{"script missing", nil, 0, "./nope.sh", true, false, []string{`There is no program file "nope.sh"`}},
		{"not executable", nil, 0, "./a.txt", true, false, []string{`The program "./a.txt" could not be started`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testCommandResult(t, tt.policy, tt.cap, tt.command, tt.isError, tt.changed, tt.want, tt.name == "denied program")
		})
	}
}

// testCommandResult runs one row of TestCommandResults unconfined and in the sandbox: the model
// sees the same results either way.
func testCommandResult(t *testing.T, policy []string, outputCap int, command string, isError, changed bool, want []string, violation bool) {
	for _, sandboxed := range []bool{false, true} {
		t.Run(fmt.Sprintf("sandboxed=%v", sandboxed), func(t *testing.T) {
			b, _ := newBox(t)
			if sandboxed {
				b.Sandbox = &sandbox.Config{}
			}
			b.Policy.Commands = policy
			b.OutputCap = outputCap
			tt := struct {
				command          string
				isError, changed bool
				want             []string
			}{command, isError, changed, want}
			before := snapshot(t, filepath.Dir(b.Root))
			res := call(t, b, "run_command", map[string]any{"command": tt.command})
			if res.IsError != tt.isError || res.Changed != tt.changed {
				t.Fatalf("result %+v, want IsError=%v Changed=%v", res, tt.isError, tt.changed)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Content, w) {
					t.Errorf("content %q lacks %q", res.Content, w)
				}
			}
			if tt.isError {
				assertUnchanged(t, before, snapshot(t, filepath.Dir(b.Root)))
			}
			if IsPolicyViolation(res) != violation {
				t.Errorf("IsPolicyViolation = %v", IsPolicyViolation(res))
			}
		})
	}
}

func TestCommandTimeoutChoice(t *testing.T) {
	tests := []struct {
		policy  time.Duration
		asked   int
		want    time.Duration
		limited bool
	}{
		{0, 0, contract.DefaultCommandTimeout, false},
		{10 * time.Second, 5, 5 * time.Second, false},
		{10 * time.Second, 50, 10 * time.Second, true},
		{0, 120, contract.DefaultCommandTimeout, true},
	}
	for _, tt := range tests {
		b := &Box{Policy: contract.ToolLimits{CommandTimeout: jsondur.Duration(tt.policy)}}
		got, limited := b.timeout(tt.asked)
		if got != tt.want || limited != tt.limited {
			t.Errorf("timeout(policy %s, asked %d) = %s, %v; want %s, %v", tt.policy, tt.asked, got, limited, tt.want, tt.limited)
		}
	}
}

func TestParseStat(t *testing.T) {
	state, pgrp, ok := parseStat([]byte("123 (a (weird) name) S 1 456 456 0 -1"))
	if !ok || state != 'S' || pgrp != 456 {
		t.Fatalf("parseStat = %c, %d, %v", state, pgrp, ok)
	}
	if _, _, ok := parseStat([]byte("garbage")); ok {
		t.Fatal("parseStat accepted garbage")
	}
}

// liveRecorder is a Box.Live writer that records what arrives and calls onFirst once.
type liveRecorder struct {
	mu      sync.Mutex
	got     strings.Builder
	onFirst func()
}

func (l *liveRecorder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got.Write(p)
	if l.onFirst != nil {
		l.onFirst()
		l.onFirst = nil
	}
	return len(p), nil
}

// TestCommandLiveOutput: a running command's output reaches Box.Live while it runs. The command
// waits for a file that only the live writer creates, on seeing the first line.
func TestCommandLiveOutput(t *testing.T) {
	b := shBox(t)
	live := &liveRecorder{}
	live.onFirst = func() { _ = os.WriteFile(filepath.Join(b.Root, "go-on"), nil, 0o644) }
	b.Live = live
	res := call(t, b, "run_command", map[string]any{
		"command":         `sh -c 'echo first; while [ ! -e go-on ]; do sleep 0.05; done; echo second'`,
		"timeout_seconds": 20,
	})
	if res.IsError || !strings.Contains(res.Content, "exit status 0") {
		t.Fatalf("the command did not finish on its own (its output did not arrive while it ran): %+v", res)
	}
	live.mu.Lock()
	defer live.mu.Unlock()
	if got := live.got.String(); got != "first\nsecond\n" {
		t.Fatalf("live output %q, want both lines", got)
	}
	if !strings.Contains(res.Content, "first\nsecond") {
		t.Fatalf("the result lost the output: %q", res.Content)
	}
}
