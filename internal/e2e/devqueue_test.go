package e2e

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/demo"
)

// TestDevStackServesOnlyItsOwn: with `starter dev` running on the shared task queue, a `run --dev`
// that names a real endpoint is served by its own worker (it fails at that endpoint, never
// completed by the dev worker's scripted model); a plain `run --base-url` that reaches the dev
// worker is refused, saying the worker is the scripted fake; and `demo --inject tool_error` shows
// its fault, because the demo's own worker takes every call.
func TestDevStackServesOnlyItsOwn(t *testing.T) {
	shared := env.StarterEnv(t)
	dev := startLiveEnv(t, shared, "dev")
	if !waitFor(60*time.Second, func() bool { return strings.Contains(dev.stdout.String(), "keel: model: ") }) {
		t.Fatalf("starter dev did not come up: %s", dev.stderr.String())
	}
	// A server already answers (the package's), so this starter dev only adds a worker, and
	// says so instead of "ready"; it names the model it serves.
	if out := dev.stdout.String(); strings.Contains(out, "dev stack ready") ||
		!strings.Contains(out, "so this adds a worker to the stack that runs there") ||
		!strings.Contains(out, "keel: model: provider openai, model ") {
		t.Errorf("starter dev beside a running server does not say it joins it, or which model it serves:\n%s", out)
	}
	const nowhere = "http://127.0.0.1:1/v1"

	t.Run("run --dev with a real endpoint", func(t *testing.T) {
		ws := t.TempDir()
		if err := demo.CopyWorkspace(ws); err != nil {
			t.Fatal(err)
		}
		environ := append(append([]string(nil), shared...), "KEEL_GATEWAY_BASE_URL="+nowhere, "KEEL_GATEWAY_API_KEY=sk-test-not-a-key")
		r := startLiveEnv(t, environ, "run", "--dev", "--workdir", ws, "-o", "jsonl", "fix the failing test").finish()
		s := r.Summary
		if s.Status == contract.StatusCompleted || r.Code == 0 {
			t.Fatalf("exit %d, summary %+v: the session completed without the endpoint it names\n%s", r.Code, s, r.Stdout)
		}
		t.Logf("reason: %s", s.Reason)
		if s.Status != contract.StatusFailed || !strings.Contains(s.Reason, "127.0.0.1:1") {
			t.Fatalf("exit %d, summary %+v; want a failure at 127.0.0.1:1\n%s", r.Code, s, r.Stderr)
		}
		if s.ToolCalls != 0 || strings.Contains(r.Stdout, "Fixed:") {
			t.Fatalf("the scripted model answered: %d tool calls\n%s", s.ToolCalls, r.Stdout)
		}
	})

	t.Run("plain run on the dev worker", func(t *testing.T) {
		// A real task for a real model: the dev worker's script must not answer it.
		ws := t.TempDir()
		environ := append(append([]string(nil), shared...), "KEEL_GATEWAY_API_KEY=sk-test-not-a-key")
		r := startLiveEnv(t, environ, "run", "--workdir", ws, "-o", "jsonl", "say hi").finish()
		s := r.Summary
		t.Logf("reason: %s", s.Reason)
		if s.Status == contract.StatusCompleted || s.ToolCalls != 0 {
			t.Fatalf("exit %d, summary %+v: the scripted model answered a session that did not ask for it\n%s", r.Code, s, r.Stdout)
		}
		if !strings.Contains(s.Reason, "did not ask for the scripted model") {
			t.Fatalf("exit %d, summary %+v; want a failure saying the session did not ask for the scripted model\n%s", r.Code, s, r.Stderr)
		}
		if names, _ := os.ReadDir(ws); len(names) != 0 {
			t.Fatalf("the work directory was written to: %v", names)
		}
	})

	t.Run("the start line names the model", func(t *testing.T) {
		environ := append(append([]string(nil), shared...), "KEEL_GATEWAY_FAKE=true")
		r := startLiveEnv(t, environ, "run", "--workdir", t.TempDir(), "-o", "jsonl", "say hi").finish()
		if !strings.Contains(r.Stdout, "model: the scripted fake model") {
			t.Fatalf("the start line does not say the scripted model serves the session:\n%s", r.Stdout)
		}
		// attempts says the same: every model call was answered by the script.
		out, err := starterIn(environ, "attempts", r.Summary.WorkflowID)
		if err != nil {
			t.Fatalf("attempts: %v\n%s", err, out)
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "CallModel") && !strings.Contains(line, "scripted fake, as ") {
				t.Errorf("attempts does not say the scripted model answered: %s", line)
			}
		}
	})

	t.Run("run --base-url on the dev worker", func(t *testing.T) {
		environ := append(append([]string(nil), shared...), "KEEL_GATEWAY_FAKE=true")
		r := startLiveEnv(t, environ, "run", "--workdir", t.TempDir(), "--base-url", nowhere, "-o", "jsonl", "fix the failing test").finish()
		s := r.Summary
		t.Logf("reason: %s", s.Reason)
		if r.Code != 1 || s.Status != contract.StatusFailed || !strings.Contains(s.Reason, "scripted fake gateway") || !strings.Contains(s.Reason, nowhere) {
			t.Fatalf("exit %d, summary %+v; want a failure saying the worker is the scripted fake and naming %s\n%s", r.Code, s, nowhere, r.Stderr)
		}
	})

	t.Run("demo --inject tool_error", func(t *testing.T) {
		r := startLiveEnv(t, shared, "demo", "--inject", "tool_error", "-o", "jsonl").finish()
		if r.Code != 0 || r.Summary.Status != contract.StatusCompleted {
			t.Fatalf("exit %d, summary %+v\n%s", r.Code, r.Summary, r.Stderr)
		}
		fault := false
		for _, e := range r.Events {
			if e.Event == contract.EventToolResult && e.IsError && strings.Contains(e.Text, "failed and the file is unchanged") {
				fault = true
			}
		}
		if !fault {
			t.Fatalf("the injected write failure never showed:\n%s", r.Stdout)
		}
	})
}
