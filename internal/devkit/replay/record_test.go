package replay_test

import (
	"fmt"
	"slices"

	"bufio"
	"bytes"
	"context"
	"encoding/json"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/replay"
	"github.com/keelrun/keel/internal/devkit/testenv"
)

// fixtureDir is where the replay test of the workflows package looks for histories.
var fixtureDir = filepath.Join(testenv.RepoRoot(), "workflows", "testdata", "histories")

// recordCase is one real run of the starter's demo whose histories become fixtures.
type recordCase struct {
	name string
	args []string
	env  []string
	// steer, when set, acts on the running session (cancel it, answer it) from another process.
	steer func(t *testing.T, s *session)
	// status is the summary status the run must end with.
	status string
}

// TestRecordHistories runs the demo against a real dev server in several modes and writes the
// histories of each session and its turns to workflows/testdata/histories. It runs only with
// KEEL_RECORD_HISTORIES=1; run it again whenever the workflows change on purpose.
func TestRecordHistories(t *testing.T) {
	if os.Getenv("KEEL_RECORD_HISTORIES") != "1" {
		t.Skip("set KEEL_RECORD_HISTORIES=1 to record replay fixtures from real runs")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	env, err := testenv.Start(ctx)
	if err != nil {
		t.Fatalf("starting the dev server: %v", err)
	}
	defer env.Close()
	starter, err := env.Build("./starter")
	if err != nil {
		t.Fatal(err)
	}

	cases := []recordCase{
		{name: "plain", status: contract.StatusCompleted},
		{name: "tool-error", args: []string{"--inject", "tool_error"}, status: contract.StatusCompleted},
		{name: "rate-limit", args: []string{"--inject", "rate_limit"}, status: contract.StatusCompleted},
		{name: "max-turns", args: []string{"--max-turns", "2"}, status: contract.StatusLimit},
		{name: "cancel", args: []string{"--inject", "long_command"}, steer: cancelWhileRunning, status: contract.StatusCancelled},
		{name: "bad-args-abort", args: []string{"--inject", "bad_args"}, steer: answerAbort, status: contract.StatusAborted},
		{name: "bad-args-edit", args: []string{"--inject", "bad_args"}, steer: answerEdit, status: contract.StatusCompleted},
		{name: "continued-as-new", env: []string{"KEEL_TEMPORAL_TURNS_PER_RUN=2"}, status: contract.StatusCompleted},
		{name: "approval", env: []string{"KEEL_TOOLS_APPROVAL=writes"}, steer: approveAll, status: contract.StatusCompleted},
		{name: "max-duration", args: []string{"--max-duration", "3s", "--inject", "long_command"}, status: contract.StatusLimit},
		{name: "breaker", args: []string{"--inject", "breaker"}, status: contract.StatusCompleted},
		{name: "refusal", args: []string{"--inject", "refusal"}, status: contract.StatusFailed},
		{name: "say", args: []string{"--inject", "long_command"}, steer: sayWhileRunning, status: contract.StatusCompleted},
		{name: "interrupt", args: []string{"--inject", "long_command"}, steer: interruptWhileRunning, status: contract.StatusCompleted},
		{name: "compaction", args: []string{"--context-tokens", "100"}, status: contract.StatusCompleted},
		// The plain run again, its reads run as local activities (versionLocalReads).
		{name: "reads", status: contract.StatusCompleted},
		// The plain run again, the changes a session takes asked once in one marker
		// (versionRunStart).
		{name: "run-start", status: contract.StatusCompleted},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := startDemo(t, env, starter, c.args, c.env...)
			if c.steer != nil {
				c.steer(t, s)
			}
			sum := s.wait(t)
			if sum.Status != c.status {
				t.Fatalf("the run ended %q, want %q: %+v\nstderr:\n%s", sum.Status, c.status, sum, s.stderr())
			}
			removeFixtures(t, c.name)
			paths, err := recordRuns(ctx, env, sum, c.name)
			if err != nil {
				t.Fatalf("recording %s: %v", c.name, err)
			}
			if len(paths) < 2 {
				t.Fatalf("recorded %v: want the session and at least one turn", paths)
			}
			r := replay.NewReplayer()
			for _, p := range paths {
				if err := replay.ReplayFile(r, p); err != nil {
					t.Errorf("a fresh recording does not replay: %v", err)
				}
			}
			t.Logf("recorded %d histories for %s", len(paths), c.name)
		})
	}
}

// removeFixtures deletes a case's earlier fixtures, so a run with fewer turns leaves no stale file.
func removeFixtures(t *testing.T, name string) {
	t.Helper()
	old, err := filepath.Glob(filepath.Join(fixtureDir, name+"-*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
}

// cancelWhileRunning sends `starter cancel` once the long command has been running for about two
// seconds, as a person would.
func cancelWhileRunning(t *testing.T, s *session) {
	s.waitEvent(t, func(e contract.Event) bool { return e.Event == contract.EventToolCall && e.Tool == "run_command" })
	// The pause is the scenario (the command has been running a while), not a wait for something.
	<-time.After(2 * time.Second)
	s.control(t, "cancel", s.workflowID(t), "--reason", "recording a cancelled session")
}

// sayWhileRunning sends `starter say` while the long command runs: the message waits for the turn
// to end and reaches the next model call.
func sayWhileRunning(t *testing.T, s *session) {
	s.waitEvent(t, func(e contract.Event) bool { return e.Event == contract.EventToolCall && e.Tool == "run_command" })
	s.control(t, "say", s.workflowID(t), "keep the fix to one line")
}

// interruptWhileRunning sends `starter interrupt` while the long command runs: the turn is
// cancelled, its results so far are kept, and the session goes on with the message.
func interruptWhileRunning(t *testing.T, s *session) {
	s.waitEvent(t, func(e contract.Event) bool { return e.Event == contract.EventToolCall && e.Tool == "run_command" })
	s.control(t, "interrupt", s.workflowID(t), "stop that command and fix calc.go")
}

// answerAbort answers the bad-arguments escalation with abort through `starter answer`.
func answerAbort(t *testing.T, s *session) {
	ev := s.waitEvent(t, func(e contract.Event) bool { return e.Event == contract.EventEscalation && e.Escalation != nil })
	s.control(t, "answer", s.workflowID(t), ev.Escalation.ID, "abort")
}

// answerEdit answers the escalation with an instruction, after which the session goes on.
func answerEdit(t *testing.T, s *session) {
	ev := s.waitEvent(t, func(e contract.Event) bool { return e.Event == contract.EventEscalation && e.Escalation != nil })
	s.control(t, "answer", s.workflowID(t), ev.Escalation.ID, "edit", "--text", "send complete JSON arguments")
}

// approveAll approves every call that waits for approval until the session ends.
func approveAll(t *testing.T, s *session) {
	seen := 0
	for {
		ev := s.waitEvent(t, func(e contract.Event) bool {
			return e.Event == contract.EventSummary || (e.Event == contract.EventApproval && e.Seq > seen)
		})
		if ev.Event == contract.EventSummary {
			return
		}
		seen = ev.Seq
		s.control(t, "approve", s.workflowID(t), ev.CallID, "--digest", contract.Digest(ev.Arguments))
	}
}

// recordRuns records every run of a session (several when it continued as new), oldest first.
func recordRuns(ctx context.Context, env *testenv.Env, sum contract.Summary, name string) ([]string, error) {
	resp, err := env.Client().ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Query: fmt.Sprintf("WorkflowId = '%s'", sum.WorkflowID),
	})
	if err != nil {
		return nil, err
	}
	runs := resp.GetExecutions()
	if len(runs) <= 1 {
		return replay.RecordSession(ctx, env.Client(), sum.WorkflowID, sum.RunID, fixtureDir, name)
	}
	slices.SortFunc(runs, func(a, b *workflowpb.WorkflowExecutionInfo) int {
		return a.GetStartTime().AsTime().Compare(b.GetStartTime().AsTime())
	})
	var paths []string
	for i, r := range runs {
		p, err := replay.RecordSession(ctx, env.Client(), sum.WorkflowID, r.GetExecution().GetRunId(), fixtureDir, fmt.Sprintf("%s-run%d", name, i+1))
		if err != nil {
			return nil, err
		}
		paths = append(paths, p...)
	}
	return paths, nil
}

// session is a running starter demo whose jsonl output is read as it arrives.
type session struct {
	cmd     *exec.Cmd
	env     []string
	starter string
	errBuf  *lockedBuffer

	mu     sync.Mutex
	events []contract.Event
	sum    *contract.Summary
	done   chan struct{}
}

func startDemo(t *testing.T, env *testenv.Env, starter string, args []string, extraEnv ...string) *session {
	t.Helper()
	s := &session{env: env.StarterEnv(t, extraEnv...), starter: starter, errBuf: &lockedBuffer{}, done: make(chan struct{})}
	s.cmd = exec.Command(starter, append([]string{"demo", "--output", "jsonl"}, args...)...)
	s.cmd.Env = s.env
	s.cmd.Stderr = s.errBuf
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("starting the demo: %v", err)
	}
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			_ = s.cmd.Process.Kill()
			_ = s.cmd.Wait()
		}
	})
	go s.read(out)
	return s
}

// read collects the starter's events until its output closes.
func (s *session) read(out io.Reader) {
	defer close(s.done)
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e contract.Event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		s.mu.Lock()
		if e.Event == contract.EventSummary {
			var sum contract.Summary
			if json.Unmarshal(sc.Bytes(), &sum) == nil {
				s.sum = &sum
			}
		}
		s.events = append(s.events, e)
		s.mu.Unlock()
	}
}

// waitEvent waits for the first event that matches.
func (s *session) waitEvent(t *testing.T, match func(contract.Event) bool) contract.Event {
	t.Helper()
	var found contract.Event
	ok := testenv.WaitFor(2*time.Minute, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, e := range s.events {
			if match(e) {
				found = e
				return true
			}
		}
		return false
	})
	if !ok {
		t.Fatalf("the expected event never came; stderr:\n%s", s.stderr())
	}
	return found
}

// workflowID reads the session's ID from the notice that announces it.
func (s *session) workflowID(t *testing.T) string {
	t.Helper()
	ev := s.waitEvent(t, func(e contract.Event) bool {
		return e.Event == contract.EventNotice && strings.HasPrefix(e.Text, "session ")
	})
	return strings.Fields(ev.Text)[1]
}

// control runs another starter command (cancel, answer) against the same server.
func (s *session) control(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(s.starter, args...)
	cmd.Env = s.env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("starter %v: %v\n%s", args, err, out)
	}
}

// wait waits for the demo to end and returns its summary.
func (s *session) wait(t *testing.T) contract.Summary {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(5 * time.Minute):
		t.Fatalf("the demo did not finish; stderr:\n%s", s.stderr())
	}
	_ = s.cmd.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sum == nil {
		t.Fatalf("the demo printed no summary; stderr:\n%s", s.stderr())
	}
	return *s.sum
}

func (s *session) stderr() string { return s.errBuf.String() }

// lockedBuffer is a buffer the process writes while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
