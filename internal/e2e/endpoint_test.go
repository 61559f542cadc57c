package e2e

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/demo"
	"github.com/keelrun/keel/internal/devkit/fakegw"
)

// TestSessionEndpoint: a session's provider, base URL and model belong to the session. A real
// worker process serves its queue with its own gateway; `starter run --base-url` on a host that
// does not exist fails the session with a reason naming that host, and no tool runs, so nothing is
// written; `--base-url` on a second gateway is served by that gateway, the worker's own gets
// nothing, and `starter attempts` names the session's model.
func TestSessionEndpoint(t *testing.T) {
	workerBin, err := env.Build("./worker")
	if err != nil {
		t.Fatal(err)
	}
	own, second := fakegw.New(fakegw.Options{}), fakegw.New(fakegw.Options{})
	for _, gw := range []*fakegw.Server{own, second} {
		if err := gw.Start("127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		defer gw.Close()
	}
	environ := env.StarterEnv(t, "KEEL_GATEWAY_FAKE=true", "KEEL_GATEWAY_BASE_URL="+own.BaseURL()+"/v1")
	w := &workerProc{bin: workerBin, env: environ, t: t}
	w.start()
	defer w.kill()

	t.Run("unreachable host", func(t *testing.T) {
		ws := t.TempDir()
		r := startLiveEnv(t, environ, "run", "--workdir", ws, "--base-url", "http://no-such-host.invalid/v1", "-o", "jsonl", "say hi").finish()
		s := r.Summary
		if r.Code != 1 || s.Status != contract.StatusFailed || !strings.Contains(s.Reason, "no-such-host.invalid") || !strings.Contains(s.Reason, "--base-url") {
			t.Fatalf("exit %d, summary %+v; want a failed session naming no-such-host.invalid and --base-url\n%s", r.Code, s, r.Stderr)
		}
		t.Logf("reason: %s", s.Reason)
		if s.ToolCalls != 0 {
			t.Errorf("%d tool calls ran", s.ToolCalls)
		}
		if entries, err := os.ReadDir(ws); err != nil || len(entries) != 0 {
			t.Fatalf("the work directory holds %d entries (%v), want none", len(entries), err)
		}
		if in := startedInputOf(t, s.WorkflowID); in.Endpoint == nil || in.Endpoint.BaseURL != "http://no-such-host.invalid/v1" || in.Endpoint.Key != "" {
			t.Fatalf("the session's input carries endpoint %+v", in.Endpoint)
		}
		if n := own.Stats().Requests; n != 0 {
			t.Fatalf("the worker's own gateway got %d requests", n)
		}
	})

	t.Run("second gateway", func(t *testing.T) {
		ws := t.TempDir()
		if err := demo.CopyWorkspace(ws); err != nil {
			t.Fatal(err)
		}
		const model = "keel-session-model"
		r := startLiveEnv(t, environ, "run", "--workdir", ws, "--base-url", second.BaseURL()+"/v1", "--model", model,
			"-o", "jsonl", "fix the failing test").finish()
		s := r.Summary
		if r.Code != 0 || s.Status != contract.StatusCompleted {
			t.Fatalf("exit %d, summary %+v\n%s", r.Code, s, r.Stderr)
		}
		if got := second.Stats().Requests; got != s.GatewayAttempts || got == 0 {
			t.Errorf("the second gateway got %d requests, the session made %d model attempts", got, s.GatewayAttempts)
		}
		if n := own.Stats().Requests; n != 0 {
			t.Errorf("the worker's own gateway got %d requests", n)
		}
		att := exec.Command(starter, "attempts", s.WorkflowID)
		att.Env = environ
		out, err := att.CombinedOutput()
		if err != nil {
			t.Fatalf("attempts: %v\n%s", err, out)
		}
		calls := 0
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, "CallModel") {
				calls++
				if !strings.Contains(line, "openai/"+model) {
					t.Errorf("attempts does not name the session's model: %s", line)
				}
			}
		}
		if calls != s.GatewayCalls || calls == 0 {
			t.Fatalf("attempts lists %d model calls, the summary %d:\n%s", calls, s.GatewayCalls, out)
		}
	})
}
