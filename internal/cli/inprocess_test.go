package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/devserver"
	"github.com/keelrun/keel/internal/devkit/testenv"
)

// command is one starter command run in process, with the exit status and the text it must give.
type command struct {
	name      string
	args      []string
	code      int
	out, errs []string // each must appear on stdout, on stderr
	quiet     bool     // nothing on stdout
}

// runCommands runs each command through Run, as starter/main.go does, with a standard input that
// is no terminal.
func runCommands(t *testing.T, cases []command) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := Run(context.Background(), c.args, strings.NewReader(""), &out, &errOut)
			if code != c.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, c.code, out.String(), errOut.String())
			}
			for _, w := range c.out {
				if !strings.Contains(out.String(), w) {
					t.Errorf("stdout does not say %q:\n%s", w, out.String())
				}
			}
			for _, w := range c.errs {
				if !strings.Contains(errOut.String(), w) {
					t.Errorf("stderr does not say %q:\n%s", w, errOut.String())
				}
			}
			if c.quiet && out.Len() > 0 {
				t.Errorf("stdout should be empty:\n%s", out.String())
			}
		})
	}
}

// isolate keeps the machine's configuration out of a test: no KEEL_* variables, no keel.yaml.
func isolate(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "KEEL_") && !strings.HasPrefix(k, "KEEL_TEST") && k != "KEEL_CACHE_DIR" && k != "KEEL_TEMPORAL_SERVER" {
			t.Setenv(k, "")
			_ = os.Unsetenv(k)
		}
	}
	t.Setenv("KEEL_DEV_STATE_DIR", t.TempDir())
}

// TestCommandsInProcess: help, usage and configuration mistakes, each with its exit status and
// words, without a server.
func TestCommandsInProcess(t *testing.T) {
	isolate(t)
	badKey := filepath.Join(t.TempDir(), "keel.yaml")
	if err := os.WriteFile(badKey, []byte("temporal:\n  adress: 127.0.0.1:7233\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badValue := filepath.Join(t.TempDir(), "keel.yaml")
	if err := os.WriteFile(badValue, []byte("limits:\n  max_turns: many\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runCommands(t, []command{
		{name: "help", args: []string{"--help"}, code: ExitOK, out: []string{"Start, watch and steer Keel agent sessions", "Start here:", "escalations"}},
		{name: "a command's help", args: []string{"say", "--help"}, code: ExitOK, out: []string{"starter say WORKFLOW_ID TEXT", "--interrupt"}},
		{name: "an unknown command", args: []string{"frobnicate"}, code: ExitUsage, errs: []string{`unknown command "frobnicate"`}, quiet: true},
		{name: "an unknown flag", args: []string{"list", "--nope"}, code: ExitUsage, errs: []string{"unknown flag: --nope", "usage: starter list"}, quiet: true},
		{name: "a status that is none", args: []string{"list", "--status", "sleepy"}, code: ExitUsage, errs: []string{`--status "sleepy" is not one of running, waiting`}, quiet: true},
		{name: "a limit below one", args: []string{"list", "--limit", "0"}, code: ExitUsage, errs: []string{"--limit must be 1 or more"}, quiet: true},
		{name: "an empty message", args: []string{"say", "keel-run-x", "  "}, code: ExitUsage, errs: []string{"the message is empty"}, quiet: true},
		{name: "an answer that is none", args: []string{"answer", "keel-run-x", "esc-1", "shrug"}, code: ExitUsage, errs: []string{`action "shrug" is not one of retry, edit, abort`}, quiet: true},
		{name: "a mistyped key", args: []string{"--config", badKey, "list"}, code: ExitUsage, errs: []string{"temporal.adress", "temporal.address"}, quiet: true},
		{name: "a value of the wrong kind", args: []string{"--config", badValue, "list"}, code: ExitUsage, errs: []string{"limits.max_turns"}, quiet: true},
		{name: "a missing configuration file", args: []string{"--config", filepath.Join(t.TempDir(), "none.yaml"), "list"}, code: ExitUsage, errs: []string{"none.yaml"}, quiet: true},
	})
}

// endedSession stands in for an AgentSession that has already done its work: it ends at once
// with a completed summary, its status attribute saying so as a session's does.
func endedSession(ctx workflow.Context, in contract.SessionInput) (contract.Summary, error) {
	if err := workflow.UpsertTypedSearchAttributes(ctx, contract.StatusKey.ValueSet(contract.StatusCompleted)); err != nil {
		return contract.Summary{}, err
	}
	return contract.Summary{Status: contract.StatusCompleted, Turns: 1}, nil
}

// TestCommandsAgainstAServer: commands that reach Temporal, in process against a real dev server:
// a listing, and the words and exit statuses for a session that does not exist and for one that
// has ended (told apart by the session client's typed errors, not the server's wording).
func TestCommandsAgainstAServer(t *testing.T) {
	testenv.Needs(t, "a Temporal dev server")
	isolate(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := devserver.Start(ctx, devserver.Options{Progress: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Stop() }()
	addr := []string{"--temporal-address", srv.Address()}
	at := func(args ...string) []string { return append(args, addr...) }

	runCommands(t, []command{
		{name: "list with no sessions", args: at("list"), code: ExitOK, out: []string{"no sessions"}},
		{name: "no escalations", args: at("escalations"), code: ExitOK, out: []string{"no pending escalations or approvals"}},
		{name: "cancel of no session", args: at("cancel", "keel-run-none"), code: ExitFailure, errs: []string{"no session keel-run-none, and no open or recent session's ID starts with it"}, quiet: true},
		{name: "approve of no session", args: at("approve", "keel-run-none"), code: ExitFailure, errs: []string{"no session keel-run-none, and no open or recent session's ID starts with it"}, quiet: true},
	})

	const queue = "cli-inprocess"
	w := worker.New(srv.Client(), queue, worker.Options{})
	w.RegisterWorkflowWithOptions(endedSession, workflow.RegisterOptions{Name: contract.SessionWorkflow})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	const wid = "keel-run-inprocess-ended"
	run, err := srv.Client().ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: wid, TaskQueue: queue, Memo: map[string]any{"task": "say hello"}}, contract.SessionWorkflow, contract.SessionInput{})
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	listed := func() bool {
		var out bytes.Buffer
		return Run(ctx, at("list", "-o", "jsonl"), nil, &out, &bytes.Buffer{}) == ExitOK && strings.Contains(out.String(), `"status":"completed"`)
	}
	if !testenv.WaitFor(30*time.Second, listed) {
		t.Fatal("the ended session never showed in the listing as completed")
	}
	runCommands(t, []command{
		{name: "list shows the ended session", args: at("list"), code: ExitOK, out: []string{wid, "completed", "say hello"}},
		{name: "say to an ended session", args: at("say", wid, "hello"), code: ExitFailure, out: []string{"refused: session " + wid + " has already ended"}},
		{name: "answer to an ended session", args: at("answer", wid, "esc-1", "retry"), code: ExitFailure,
			out: []string{"refused: session " + wid + " has already ended; escalation esc-1 can no longer be answered"}},
		{name: "approve with nothing waiting", args: at("approve", wid), code: ExitFailure, errs: []string{"session " + wid + " has no tool call waiting for approval"}},
	})
}
