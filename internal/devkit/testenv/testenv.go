// Package testenv gives integration tests a real Temporal dev server, started once per test
// package through the same launcher the starter uses, plus helpers to build and run Keel's own
// binaries as real processes against it. It also draws the line between the two test tiers: the
// fast tier (FastTierCommand: unit, workflow and replay tests, no server, no PostgreSQL) and the
// full suite (FullSuiteCommand), and builds what the full suite needs before any test's clock
// starts (Main).
package testenv

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/devserver"
)

// Env is one dev server shared by the tests of a package.
type Env struct {
	Server *devserver.Server
	// Dir holds the package's built binaries and state.
	Dir string

	mu    sync.Mutex
	built map[string]string
}

// Start starts a dev server on a free loopback port with state in memory. The first run on a fresh
// machine builds Keel's Temporal server, which takes minutes: call it from TestMain (Main), not
// from a test.
func Start(ctx context.Context) (*Env, error) {
	dir, err := os.MkdirTemp("", "keel-it-")
	if err != nil {
		return nil, err
	}
	srv, err := devserver.Start(ctx, devserver.Options{Progress: os.Stderr})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &Env{Server: srv, Dir: dir}, nil
}

// Close stops the server and removes the state.
func (e *Env) Close() {
	_ = e.Server.Stop()
	_ = os.RemoveAll(e.Dir)
}

// Client is a client of the server's default namespace.
func (e *Env) Client() client.Client { return e.Server.Client() }

// Address is the server's frontend address.
func (e *Env) Address() string { return e.Server.Address() }

// RepoRoot is the module root, found from this file's location.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// Build returns one of Keel's commands (for example "./starter") compiled into the env's folder,
// compiling it on the first call. TestMain builds every command the package's tests run with
// BuildAll, so a test's Build returns at once and no test's clock includes a compile.
func (e *Env) Build(pkg string) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p, ok := e.built[pkg]; ok {
		return p, nil
	}
	if err := e.compile(context.Background(), pkg); err != nil {
		return "", err
	}
	return e.built[pkg], nil
}

// BuildAll compiles Keel's commands pkgs in one go build, which shares the work between them.
func (e *Env) BuildAll(ctx context.Context, pkgs ...string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.compile(ctx, pkgs...)
}

// compile builds pkgs into the env's bin folder, each named after its folder, and records them.
func (e *Env) compile(ctx context.Context, pkgs ...string) error {
	bin := filepath.Join(e.Dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return fmt.Errorf("creating the folder for the test binaries: %w", err)
	}
	cmd := exec.CommandContext(ctx, "go", append([]string{"build", "-o", bin + string(filepath.Separator)}, pkgs...)...)
	cmd.Dir = RepoRoot()
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: %w\n%s", strings.Join(pkgs, " "), err, b)
	}
	if e.built == nil {
		e.built = map[string]string{}
	}
	for _, p := range pkgs {
		e.built[p] = filepath.Join(bin, filepath.Base(p))
	}
	return nil
}

// StarterEnv is the environment a starter process gets: this env's server, a task queue and state
// folder of the test's own, the fake gateway.
func (e *Env) StarterEnv(t testing.TB, extra ...string) []string {
	t.Helper()
	state := t.TempDir()
	env := append(os.Environ(),
		"KEEL_TEMPORAL_ADDRESS="+e.Address(),
		"KEEL_TEMPORAL_TASK_QUEUE=q-"+strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()),
		"KEEL_DEV_STATE_DIR="+state,
		"KEEL_GATEWAY_RETRY_BASE=100ms",
	)
	return append(env, extra...)
}

// Run is a finished starter process.
type Run struct {
	Code    int
	Events  []contract.Event
	Summary contract.Summary
	Stdout  string
	Stderr  string
}

// Workspace is the demo workspace named in the run's notices.
func (r Run) Workspace() string {
	for _, e := range r.Events {
		if p, ok := strings.CutPrefix(e.Text, "workspace: "); ok {
			return p
		}
	}
	return ""
}

// ParseJSONL reads the starter's --output jsonl.
func ParseJSONL(out []byte) ([]contract.Event, contract.Summary, error) {
	var evs []contract.Event
	var sum contract.Summary
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e contract.Event
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, sum, fmt.Errorf("decoding %q: %w", line, err)
		}
		if e.Event == contract.EventSummary {
			if err := json.Unmarshal(line, &sum); err != nil {
				return nil, sum, err
			}
		}
		evs = append(evs, e)
	}
	return evs, sum, sc.Err()
}

// Finish waits for cmd and parses its output.
func Finish(cmd *exec.Cmd, stdout, stderr *bytes.Buffer) (Run, error) {
	err := cmd.Wait()
	r := Run{Code: cmd.ProcessState.ExitCode(), Stdout: stdout.String(), Stderr: stderr.String()}
	if err != nil && r.Code < 0 {
		return r, err
	}
	evs, sum, perr := ParseJSONL(stdout.Bytes())
	r.Events, r.Summary = evs, sum
	return r, perr
}

// WaitFor polls cond until it holds or the deadline passes.
func WaitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cond()
}

// Config is a configuration for in-process workers and clients against this env: its own task
// queue and state folder, the fake gateway, then overrides.
func (e *Env) Config(t testing.TB, overrides map[string]any) config.Config {
	t.Helper()
	o := map[string]any{
		config.TemporalAddress:   e.Address(),
		config.TemporalTaskQueue: "q-" + strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()),
		config.DevStateDir:       t.TempDir(),
		config.GatewayFake:       true,
	}
	for k, v := range overrides {
		o[k] = v
	}
	cfg, err := config.Load("", nil, o)
	if err != nil {
		t.Fatalf("test configuration: %v", err)
	}
	return cfg
}
