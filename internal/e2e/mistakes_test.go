package e2e

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
)

// TestMistakesAreExplained: the real starter and worker answer a newcomer's mistakes with the fix:
// an argument error prints the usage and an example (exit 2), a missing key names the exact
// setting of the fake gateway, an unknown configuration key suggests the one meant, and a worker
// says what it serves once it polls.
func TestMistakesAreExplained(t *testing.T) {
	environ := env.StarterEnv(t)
	t.Run("argument error", func(t *testing.T) {
		code, out := starterOut(t, environ, "answer", "onlyone")
		for _, want := range []string{"accepts between 2 and 3 arg(s), received 1", "usage: starter answer WORKFLOW_ID [ESCALATION_ID] retry|edit|abort", "example:"} {
			if code != 2 || !strings.Contains(out, want) {
				t.Fatalf("exit %d, want 2 and %q:\n%s", code, want, out)
			}
		}
	})
	t.Run("missing key", func(t *testing.T) {
		// Only --dev needs the key: it runs a worker in the starter.
		code, out := starterOut(t, environ, "run", "--dev", "--workdir", t.TempDir(), "say hi")
		for _, want := range []string{"gateway.api_key", "KEEL_GATEWAY_API_KEY", "KEEL_GATEWAY_FAKE=true", "gateway.fake: true", "--dev"} {
			if code != 2 || !strings.Contains(out, want) {
				t.Fatalf("exit %d, want 2 and %q:\n%s", code, want, out)
			}
		}
	})
	t.Run("no server", func(t *testing.T) {
		noServer := append(append([]string(nil), environ...), "KEEL_TEMPORAL_ADDRESS=127.0.0.1:1")
		code, out := starterOut(t, noServer, "run", "--workdir", t.TempDir(), "say hi")
		if code != 2 || !strings.Contains(out, "127.0.0.1:1") || !strings.Contains(out, "--dev") {
			t.Fatalf("exit %d, want 2 naming the address and --dev:\n%s", code, out)
		}
	})
	t.Run("unknown key", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "keel.yaml")
		if err := os.WriteFile(file, []byte("limits:\n  max_turn: 3\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		code, out := starterOut(t, environ, "escalations", "--config", file)
		if code != 2 || !strings.Contains(out, "limits.max_turn") || !strings.Contains(out, "did you mean limits.max_turns?") {
			t.Fatalf("exit %d, want 2 suggesting limits.max_turns:\n%s", code, out)
		}
	})
	t.Run("worker start line", func(t *testing.T) {
		bin, err := env.Build("./worker")
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin)
		cmd.Env = append(append([]string(nil), environ...), "KEEL_GATEWAY_FAKE=true", "KEEL_GATEWAY_BASE_URL="+startGateway(t)+"/v1")
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		lines := make(chan string, 16)
		go func() {
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		deadline := time.After(60 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatal("the worker exited without a start line")
				}
				if !strings.Contains(l, "worker ready") {
					continue
				}
				for _, want := range []string{"q-TestMistakesAreExplained", env.Address(), "openai/gpt-4o-mini", "sandbox on"} {
					if !strings.Contains(l, want) {
						t.Fatalf("the start line does not name %q: %s", want, l)
					}
				}
				return
			case <-deadline:
				t.Fatal("no start line from the worker within 60 s")
			}
		}
	})
}

// TestRefusedKey: a gateway that answers 401 fails the session at once as an auth failure whose
// reason names the key setting to check; the call is not retried.
func TestRefusedKey(t *testing.T) {
	var requests atomic.Int32
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`))
	}))
	defer gw.Close()
	environ := env.StarterEnv(t, "KEEL_GATEWAY_BASE_URL="+gw.URL+"/v1", "KEEL_GATEWAY_API_KEY=sk-wrong")
	r := startLiveEnv(t, environ, "run", "--dev", "--workdir", t.TempDir(), "-o", "jsonl", "say hi").finish()
	s := r.Summary
	t.Logf("reason: %s", s.Reason)
	if r.Code != 1 || s.Status != contract.StatusFailed || !strings.Contains(s.Reason, "refused the API key") || !strings.Contains(s.Reason, "gateway.api_key") {
		t.Fatalf("exit %d, summary %+v; want a failure saying the key was refused and naming gateway.api_key\n%s", r.Code, s, r.Stderr)
	}
	if n := requests.Load(); n != 1 || s.GatewayAttempts != 1 {
		t.Fatalf("the gateway got %d requests, the summary counts %d attempts; want 1: a refused key is not retried", n, s.GatewayAttempts)
	}
	code, out := starterOut(t, environ, "attempts", s.WorkflowID)
	if code != 0 || !strings.Contains(out, contract.ClassAuth) {
		t.Fatalf("attempts: exit %d, want the class %s:\n%s", code, contract.ClassAuth, out)
	}
}
