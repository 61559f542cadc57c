package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/testenv"
)

// liveRun is a starter process whose jsonl events are read while it runs.
type liveRun struct {
	t      testing.TB
	cmd    *exec.Cmd
	stderr bytes.Buffer
	stdout bytes.Buffer

	mu     sync.Mutex
	events []contract.Event
	cond   *sync.Cond
	done   bool
}

// startLive starts the starter with --output jsonl among args and reads its events as they come.
func startLive(t testing.TB, extraEnv []string, args ...string) *liveRun {
	t.Helper()
	return startLiveEnv(t, env.StarterEnv(t, extraEnv...), args...)
}

// startLiveEnv is startLive with a whole environment, for processes that must share one state
// folder and task queue.
func startLiveEnv(t testing.TB, environ []string, args ...string) *liveRun {
	t.Helper()
	return startLiveCmd(t, environ, nil, args...)
}

// startLiveCmd is startLiveEnv with a hook that sets up the command before it starts.
func startLiveCmd(t testing.TB, environ []string, setup func(*exec.Cmd), args ...string) *liveRun {
	t.Helper()
	l := &liveRun{t: t, cmd: exec.Command(starter, args...)}
	if setup != nil {
		setup(l.cmd)
	}
	l.cond = sync.NewCond(&l.mu)
	l.cmd.Env = environ
	l.cmd.Stderr = &l.stderr
	out, err := l.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go l.read(out)
	t.Cleanup(func() { _ = l.cmd.Process.Kill() })
	return l
}

func (l *liveRun) read(out io.Reader) {
	sc := bufio.NewScanner(io.TeeReader(out, &l.stdout))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e contract.Event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		l.mu.Lock()
		l.events = append(l.events, e)
		l.cond.Broadcast()
		l.mu.Unlock()
	}
	l.mu.Lock()
	l.done = true
	l.cond.Broadcast()
	l.mu.Unlock()
}

// waitEvent waits until an event matching pred arrived, or fails the test after timeout.
func (l *liveRun) waitEvent(timeout time.Duration, what string, pred func(contract.Event) bool) contract.Event {
	l.t.Helper()
	timer := time.AfterFunc(timeout, func() { l.mu.Lock(); l.cond.Broadcast(); l.mu.Unlock() })
	defer timer.Stop()
	deadline := time.Now().Add(timeout)
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := 0; ; {
		for ; i < len(l.events); i++ {
			if pred(l.events[i]) {
				return l.events[i]
			}
		}
		if l.done || time.Now().After(deadline) {
			l.t.Fatalf("no %s event within %s; stderr:\n%s", what, timeout, l.stderr.String())
		}
		l.cond.Wait()
	}
}

// nextApproval waits for an approval request newer than event seen; ok is false once the
// session's summary arrived instead.
func (l *liveRun) nextApproval(timeout time.Duration, seen int) (a contract.Event, ok bool) {
	l.t.Helper()
	e := l.waitEvent(timeout, "an approval request or the summary", func(e contract.Event) bool {
		return e.Event == contract.EventSummary || (e.Event == contract.EventApproval && e.Seq > seen)
	})
	return e, e.Event == contract.EventApproval
}

// workflowID is the session's ID, from the starter's first notice.
func (l *liveRun) workflowID() string {
	e := l.waitEvent(30*time.Second, "session started", func(e contract.Event) bool {
		return strings.HasPrefix(e.Text, "session ") && strings.Contains(e.Text, " started")
	})
	return strings.Fields(e.Text)[1]
}

// finish waits for the process and parses what it printed.
func (l *liveRun) finish() testenv.Run {
	l.t.Helper()
	_ = l.cmd.Wait()
	l.mu.Lock()
	for !l.done {
		l.cond.Wait()
	}
	l.mu.Unlock()
	evs, sum, err := testenv.ParseJSONL(l.stdout.Bytes())
	if err != nil {
		l.t.Fatal(err)
	}
	return testenv.Run{Code: l.cmd.ProcessState.ExitCode(), Events: evs, Summary: sum, Stdout: l.stdout.String(), Stderr: l.stderr.String()}
}

// processesIn lists live processes whose command line is argv and whose working directory is dir.
// Zombies have no working directory, so only processes that still run are counted.
func processesIn(dir string, argv ...string) []int {
	want := strings.Join(argv, "\x00") + "\x00"
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || string(cmdline) != want {
			continue
		}
		if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err == nil && cwd == dir {
			pids = append(pids, pid)
		}
	}
	return pids
}
