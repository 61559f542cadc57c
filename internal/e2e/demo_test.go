package e2e

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/contract"
)

// TestDemoCompletes is the spine end to end: the scripted model reads, tests, fixes and retests
// the example workspace through the real worker and a real server, in every wire format, and the
// summary counts the input tokens read from the prompt cache.
func TestDemoCompletes(t *testing.T) {
	for _, provider := range contract.Providers {
		t.Run(provider, func(t *testing.T) {
			r := runStarter(t, []string{"KEEL_GATEWAY_PROVIDER=" + provider}, "demo", "--output", "jsonl")
			if r.Code != 0 {
				t.Fatalf("exit %d, want 0\nstderr:\n%s\nstdout:\n%s", r.Code, r.Stderr, r.Stdout)
			}
			if last := r.Events[len(r.Events)-1]; last.Event != contract.EventSummary {
				t.Fatalf("the output ends with a %q event, not the summary", last.Event)
			}
			s := r.Summary
			if s.Status != contract.StatusCompleted || s.Turns < 3 || s.ToolCalls < 3 {
				t.Fatalf("summary %+v: want completed with turns >= 3 and tool_calls >= 3", s)
			}
			if s.WorkflowID == "" || s.RunID == "" || s.GatewayCalls != s.Turns || s.GatewayAttempts != s.GatewayCalls || s.Tokens <= 0 {
				t.Fatalf("summary fields are not filled in: %+v", s)
			}
			if s.CachedTokens <= 0 {
				t.Errorf("cached_tokens %d: the session's later calls should read its prefix from the prompt cache", s.CachedTokens)
			}
			var deltas, calls, results int
			for _, e := range r.Events {
				switch e.Event {
				case contract.EventDelta:
					deltas++
				case contract.EventToolCall:
					calls++
				case contract.EventToolResult:
					results++
				}
			}
			if deltas == 0 || calls != s.ToolCalls || results != s.ToolCalls {
				t.Fatalf("events: %d deltas, %d tool calls, %d results; summary says %d tool calls", deltas, calls, results, s.ToolCalls)
			}
			ws := r.Workspace()
			if ws == "" {
				t.Fatal("the run did not name its workspace")
			}
			test := exec.Command("go", "test", "./...")
			test.Dir = ws
			if out, err := test.CombinedOutput(); err != nil {
				t.Fatalf("the workspace's tests still fail after the demo: %v\n%s", err, out)
			}
		})
	}
}

// TestBadConfiguration: a bad value is one line naming the key, exit 2, nothing started.
func TestBadConfiguration(t *testing.T) {
	cases := []struct {
		name string
		env  []string
		args []string
		key  string
	}{
		{"unknown provider", []string{"KEEL_GATEWAY_PROVIDER=bogus"}, []string{"demo"}, config.GatewayProvider},
		{"bad duration", nil, []string{"demo", "--max-duration", "soon"}, config.LimitsMaxDuration},
		{"bad duration from env", []string{"KEEL_LIMITS_MAX_DURATION=3 parsecs"}, []string{"demo"}, config.LimitsMaxDuration},
		{"missing key for a real provider", []string{"KEEL_GATEWAY_API_KEY="}, []string{"run", "--dev", "fix it"}, config.GatewayAPIKey},
		{"bad inject", nil, []string{"demo", "--inject", "gremlins"}, "--inject"},
		{"bad output", nil, []string{"demo", "--output", "xml"}, "--output"},
		{"state folder inside the work directory", []string{"KEEL_GATEWAY_FAKE=true", "KEEL_DEV_STATE_DIR=.keel"}, []string{"run", "--dev", "fix it"}, config.DevStateDir},
		{"sandbox cache at the root", []string{"KEEL_GATEWAY_FAKE=true", "KEEL_TOOLS_SANDBOX_CACHE=/"}, []string{"run", "--dev", "fix it"}, config.ToolsSandboxCache},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd, stdout, stderr := startStarter(t, c.env, c.args...)
			_ = cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != 2 {
				t.Fatalf("exit %d, want 2; stderr %q", code, stderr.String())
			}
			lines := nonEmptyLines(stderr.String())
			if len(lines) != 1 || !strings.Contains(lines[0], c.key) {
				t.Fatalf("want one line naming %s, got %q", c.key, stderr.String())
			}
			if stdout.Len() != 0 {
				t.Fatalf("nothing should have started, but stdout has %q", stdout.String())
			}
		})
	}
}
