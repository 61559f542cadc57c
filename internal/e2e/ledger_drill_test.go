package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/demo"
	"github.com/keelrun/keel/internal/devkit/devserver"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/devkit/replay"
	"github.com/keelrun/keel/internal/devkit/testenv"
	"github.com/keelrun/keel/internal/events"
	"github.com/keelrun/keel/internal/jsondur"
	"github.com/keelrun/keel/internal/store"
	"github.com/keelrun/keel/internal/tools/toolspec"
)

// drillOutage is how long the drill's Temporal server stays dead; drillSessions run a command
// each while it is; drillBudget bounds one backend's whole drill.
const (
	drillOutage   = 15 * time.Second
	drillSessions = 4
	drillBudget   = 150 * time.Second
)

// TestLedgerDrill is the failover drill of the ledger of side effects, on each store backend:
// sessions whose commands finish while the Temporal server is dead (killed, restarted on its
// file after drillOutage) are fed their real results; a worker killed before a command starts
// gets "not run" for it (and the model's retry runs it once), one killed mid-command "outcome
// unknown". Nothing runs twice, no call's tool_result reaches the stream twice, and the worker's
// standard error shows the outage.
func TestLedgerDrill(t *testing.T) {
	if testing.Short() {
		t.Skip("the ledger drill takes about a minute per store backend")
	}
	backends := []struct {
		name string
		env  []string
	}{
		{"file", nil},
		{"postgres", []string{"KEEL_STORE_BACKEND=postgres", "KEEL_STORE_DSN=" + drillDSN()}},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			if b.name == "postgres" {
				testenv.Needs(t, "PostgreSQL")
			}
			runDrill(t, b.env)
		})
	}
}

// drillDSN is the PostgreSQL the development and CI machines run; KEEL_TEST_POSTGRES overrides it.
func drillDSN() string {
	if d := os.Getenv("KEEL_TEST_POSTGRES"); d != "" {
		return d
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// drill is one backend's drill: its own Temporal server, worker and gateway.
type drill struct {
	t       *testing.T
	ctx     context.Context
	addr    string
	dbFile  string
	srv     *devserver.Server
	worker  *drillWorker
	stderr  *syncBuffer
	effects string
	storeOf func() (store.Store, error)
	shown   *shownResults
	queue   string
	// before is the session whose tool call the worker dies claiming.
	before string
}

func runDrill(t *testing.T, backendEnv []string) {
	ctx, cancel := context.WithTimeout(context.Background(), drillBudget)
	defer cancel()
	d := startDrill(ctx, t, backendEnv)
	defer d.close()
	start := time.Now()

	// The outage: every session's command is running when the server dies, and ends during it.
	var outage []string
	for i := range drillSessions {
		outage = append(outage, d.startSession(fmt.Sprintf("outage-%d", i), fakegw.ModeChattyCommand))
	}
	for _, id := range outage {
		waitEffect(ctx, t, d.effects, id)
	}
	d.srv.Kill()
	killedAt := time.Now()
	select {
	case <-time.After(drillOutage):
	case <-ctx.Done():
		t.Fatal("time ran out during the outage")
	}
	d.restartServer()
	t.Logf("server dead for %.1fs", time.Since(killedAt).Seconds())
	// Which sessions' calls are answered from the ledger is a race: a completion the worker reports
	// after the restart, before the server times the attempt out, is delivered as usual. Both
	// are right; what attempts says of each must match what happened to it.
	verdicts := map[string]string{}
	var reconciled string
	for _, id := range outage {
		sum, msgs := d.finish(id)
		first := firstToolMessage(t, msgs)
		if !strings.Contains(first.Content, "step 6 of 6") || first.IsError {
			t.Errorf("%s: the command that finished during the outage was answered %q, want its real result", id, first.Content)
		}
		t.Logf("%s: %s, %d reconciled calls", id, sum.Status, sum.ReconciledCalls)
		if sum.ReconciledCalls > 0 {
			verdicts[id] = "reconciled: the recorded result"
			if reconciled == "" {
				reconciled = id
			}
		}
	}
	if warn := d.stderr.String(); !strings.Contains(warn, `level=WARN msg="Failed to poll for task."`) {
		t.Errorf("the worker's standard error shows no warning of the outage:\n%s", warn)
	}

	// A worker killed twice at once: mid-command for one session, before the command started for
	// the other (the worker runs with -die-at-claim for it: it dies as its tool call claims the
	// call in the ledger, before the claim is written).
	mid := d.startSession("mid-command", fakegw.ModeHang)
	waitEffect(ctx, t, d.effects, mid)
	d.startSessionID(d.before, fakegw.ModeChattyCommand)
	d.worker.waitExit(ctx)
	d.worker.args = []string{"-effect-log", d.effects}
	d.worker.start()
	before := d.before

	_, msgs := d.finish(mid)
	if got := firstToolMessage(t, msgs); !strings.Contains(got.Content, "outcome is unknown") {
		t.Errorf("the call killed mid-command was answered %q, want outcome unknown", got.Content)
	}
	sum, msgs := d.finish(before)
	first := firstToolMessage(t, msgs)
	if first.Content != toolspec.NotRunFeedback(toolspec.RunCommand) {
		t.Errorf("the call killed before it started was answered %q, want not run", first.Content)
	}
	if sum.ReconciledCalls < 1 {
		t.Errorf("the summary counts %d reconciled calls, want at least 1", sum.ReconciledCalls)
	}
	if !anyMessage(msgs, func(m contract.Message) bool { return strings.Contains(m.Content, "step 6 of 6") }) {
		t.Error("the model's retry of the call that never started did not run it")
	}

	verdicts[before], verdicts[mid] = "reconciled: not run", "reconciled: outcome unknown"
	for id, want := range verdicts {
		cmd := exec.Command(starter, "attempts", id)
		cmd.Env = env.StarterEnv(t, "KEEL_TEMPORAL_ADDRESS="+d.addr)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("starter attempts %s does not say %q (%v):\n%s", id, want, err, out)
		}
	}

	dups, total := duplicateExecutions(t, d.effects)
	if len(dups) > 0 {
		t.Errorf("tool activities executed more than once: %v", dups)
	}
	if twice := d.shown.twice(); len(twice) > 0 {
		t.Errorf("calls whose tool_result reached the stream twice: %v", twice)
	}
	t.Logf("%d tool executions, %d duplicates, %d tool_result events, %.0fs", total, len(dups), d.shown.results(), time.Since(start).Seconds())
	if os.Getenv("KEEL_RECORD_HISTORIES") == "1" && envValue(backendEnv, "KEEL_STORE_BACKEND") == "" {
		if reconciled == "" {
			t.Fatal("recording: no outage session's call was answered from the ledger this run; run it again")
		}
		d.record(map[string]string{"ledger-outcome": reconciled, "ledger-unknown": mid, "ledger-not-run": before})
	}
}

// record writes replay fixtures of the drill's sessions: each session's history and its first
// turn's, the turn whose tool call was answered from the ledger (KEEL_RECORD_HISTORIES=1, as
// internal/devkit/replay's TestRecordHistories).
func (d *drill) record(sessions map[string]string) {
	d.t.Helper()
	dir := filepath.Join(testenv.RepoRoot(), "workflows", "testdata", "histories")
	for name, id := range sessions {
		if _, err := replay.WriteHistory(d.ctx, d.srv.Client(), id, "", filepath.Join(dir, name+"-session.json")); err != nil {
			d.t.Fatal(err)
		}
		if _, err := replay.WriteHistory(d.ctx, d.srv.Client(), contract.TurnWorkflowID(id, 1), "", filepath.Join(dir, name+"-turn-1.json")); err != nil {
			d.t.Fatal(err)
		}
	}
}

func startDrill(ctx context.Context, t *testing.T, backendEnv []string) *drill {
	t.Helper()
	bin, err := env.Build("./internal/devkit/recworker")
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	d := &drill{t: t, ctx: ctx, addr: addr, dbFile: filepath.Join(dir, "temporal.db"), effects: filepath.Join(dir, "effects.jsonl"), stderr: &syncBuffer{}}
	if d.srv, err = devserver.Start(ctx, devserver.Options{Address: addr, DBFile: d.dbFile}); err != nil {
		t.Fatal(err)
	}
	gw := fakegw.New(fakegw.Options{})
	if err := gw.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	storeDir := filepath.Join(dir, "store")
	workerEnv := env.StarterEnv(t, append([]string{"KEEL_GATEWAY_FAKE=true", "KEEL_GATEWAY_BASE_URL=" + gw.BaseURL() + "/v1",
		"KEEL_TEMPORAL_ADDRESS=" + addr, "KEEL_STORE_PATH=" + storeDir}, backendEnv...)...)
	d.queue = envValue(workerEnv, "KEEL_TEMPORAL_TASK_QUEUE")
	backend, loc := "file", storeDir
	if envValue(backendEnv, "KEEL_STORE_BACKEND") == "postgres" {
		backend, loc = "postgres", envValue(backendEnv, "KEEL_STORE_DSN")
	}
	d.storeOf = func() (store.Store, error) { return store.Open(ctx, backend, loc) }
	d.shown = &shownResults{n: map[string]int{}}
	d.before = d.sessionID("before-start")
	d.worker = &drillWorker{t: t, bin: bin, args: []string{"-effect-log", d.effects, "-die-at-claim", d.before}, env: workerEnv, stderr: d.stderr}
	d.worker.start()
	return d
}

func (d *drill) close() {
	d.worker.kill()
	if d.srv != nil {
		d.srv.Kill()
	}
}

// restartServer starts the server again on the same address and file.
func (d *drill) restartServer() {
	d.t.Helper()
	srv, err := devserver.Start(d.ctx, devserver.Options{Address: d.addr, DBFile: d.dbFile})
	if err != nil {
		d.t.Fatalf("restarting the Temporal server: %v", err)
	}
	d.srv = srv
}

// sessionID is the workflow ID of one of this drill's sessions.
func (d *drill) sessionID(name string) string {
	return "drill-" + strings.ReplaceAll(d.t.Name(), "/", "-") + "-" + name
}

func (d *drill) startSession(name, mode string) string {
	id := d.sessionID(name)
	d.startSessionID(id, mode)
	return id
}

func (d *drill) startSessionID(id, mode string) {
	d.t.Helper()
	dir := d.t.TempDir()
	if err := demo.CopyWorkspace(dir); err != nil {
		d.t.Fatal(err)
	}
	_, err := d.srv.Client().ExecuteWorkflow(d.ctx, client.StartWorkflowOptions{ID: id, TaskQueue: d.queue}, contract.SessionWorkflow, contract.SessionInput{
		Task:     fakegw.WithMode("drill session: fix the failing test", mode),
		Limits:   contract.Limits{MaxTurns: 30},
		Settings: contract.Settings{ToolSettings: contract.ToolSettings{Workdir: dir}, HeartbeatTimeout: jsondur.Duration(testHeartbeatTimeout)},
	})
	if err != nil {
		d.t.Fatalf("starting session %s: %v", id, err)
	}
}

// finish waits for a session to complete and returns its summary and the transcript it left.
func (d *drill) finish(id string) (contract.Summary, []contract.Message) {
	d.t.Helper()
	var sum contract.Summary
	if err := d.srv.Client().GetWorkflow(d.ctx, id, "").Get(d.ctx, &sum); err != nil {
		d.t.Fatalf("session %s: %v\nworker stderr:\n%s", id, err, d.stderr.String())
	}
	if sum.Status != contract.StatusCompleted || sum.Transcript == nil {
		d.t.Fatalf("session %s ended %s (%s)", id, sum.Status, sum.Reason)
	}
	d.shown.add(id, sum.Events)
	d.shown.add(id, d.liveEvents(id))
	st, err := d.storeOf()
	if err != nil {
		d.t.Fatal(err)
	}
	defer st.Close()
	msgs, err := st.Load(d.ctx, sum.Transcript.Head)
	if err != nil {
		d.t.Fatalf("loading the transcript of %s: %v", id, err)
	}
	return sum, append(msgs, sum.Transcript.Pending...)
}

// firstToolMessage is the answer to the session's first tool call.
func firstToolMessage(t *testing.T, msgs []contract.Message) contract.Message {
	t.Helper()
	for _, m := range msgs {
		if m.Role == contract.RoleTool {
			return m
		}
	}
	t.Fatal("the transcript answers no tool call")
	return contract.Message{}
}

func anyMessage(msgs []contract.Message, match func(contract.Message) bool) bool {
	_, ok := findFirst(msgs, match)
	return ok
}

func findFirst(msgs []contract.Message, match func(contract.Message) bool) (contract.Message, bool) {
	for _, m := range msgs {
		if match(m) {
			return m, true
		}
	}
	return contract.Message{}, false
}

// waitEffect waits until the side-effect log shows a tool of session id started.
func waitEffect(ctx context.Context, t *testing.T, path, id string) {
	t.Helper()
	for ctx.Err() == nil {
		b, _ := os.ReadFile(path)
		if bytes.Contains(b, []byte(`"`+id+`"`)) {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("no tool of %s started in time", id)
}

// liveEvents reads the events a watcher of the ended session id is shown, from its history, as
// `starter watch` reads them.
func (d *drill) liveEvents(id string) []contract.Event {
	d.t.Helper()
	src := events.Follow(d.ctx, d.srv.Client(), id, events.FollowOptions{})
	defer src.Close()
	var out []contract.Event
	for e := range src.Events() {
		out = append(out, e)
	}
	if d.ctx.Err() != nil {
		d.t.Fatalf("reading the live events of %s: %v", id, d.ctx.Err())
	}
	return out
}

// shownResults counts the tool_result events a watcher is shown, by session and call: those the
// activities published and those the session kept (for calls no activity answered).
type shownResults struct {
	n map[string]int
}

func (s *shownResults) add(id string, evs []contract.Event) {
	for _, e := range evs {
		if e.Event == contract.EventToolResult {
			s.n[id+"#"+e.CallID]++
		}
	}
}

// twice lists the calls whose tool_result was shown more than once.
func (s *shownResults) twice() []string {
	var out []string
	for k, n := range s.n {
		if n > 1 {
			out = append(out, k)
		}
	}
	return out
}

func (s *shownResults) results() int {
	n := 0
	for _, c := range s.n {
		n += c
	}
	return n
}

// drillWorker is a worker process whose standard error the test reads.
type drillWorker struct {
	t         *testing.T
	bin       string
	args, env []string
	stderr    *syncBuffer
	mu        sync.Mutex
	cmd       *exec.Cmd
}

func (w *drillWorker) start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cmd = exec.Command(w.bin, w.args...)
	w.cmd.Env, w.cmd.Stderr = w.env, w.stderr
	if err := w.cmd.Start(); err != nil {
		w.t.Errorf("starting the worker: %v", err)
	}
}

// waitExit waits for the worker process to end on its own.
func (w *drillWorker) waitExit(ctx context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	done := make(chan struct{})
	go func() {
		_ = w.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		w.t.Fatal("the worker did not die at the claim in time")
	}
	w.cmd = nil
}

// kill ends the worker with SIGKILL, as a crash would.
func (w *drillWorker) kill() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cmd != nil && w.cmd.Process != nil {
		_ = w.cmd.Process.Kill()
		_ = w.cmd.Wait()
	}
	w.cmd = nil
}

// syncBuffer is a buffer a process writes to while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
