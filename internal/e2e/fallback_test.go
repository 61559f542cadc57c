package e2e

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegw"
)

// TestPrimaryDownFallsBack runs the demo with the fake's primary model down (every request for it
// answered 503). The first model call spends its transport attempts on the primary, then goes to
// the fallback within the same CallModel; the primary's breaker is open from then on, so later
// calls go straight to the fallback. The summary counts the calls that fell back, and `starter
// attempts` names the model that answered each call, read from the history.
func TestPrimaryDownFallsBack(t *testing.T) {
	shared := env.StarterEnv(t)
	for _, wire := range contract.Providers {
		t.Run(wire, func(t *testing.T) {
			environ := append(append([]string(nil), shared...), "KEEL_GATEWAY_PROVIDER="+wire)
			r := startLiveEnv(t, environ, "demo", "--inject", fakegw.ModePrimaryDown, "--output", "jsonl").finish()
			s := r.Summary
			if r.Code != 0 || s.Status != contract.StatusCompleted {
				t.Fatalf("demo: exit %d, summary %+v\n%s", r.Code, s, r.Stderr)
			}
			if s.FallbackCalls < 1 || s.FallbackCalls != s.GatewayCalls {
				t.Fatalf("fallback_calls %d of %d model calls; want every call answered by the fallback", s.FallbackCalls, s.GatewayCalls)
			}
			if want := s.GatewayCalls + 3; s.GatewayAttempts != want {
				t.Errorf("gateway_attempts %d, want %d: four on the first call (the primary's transport cap), one on each later call", s.GatewayAttempts, want)
			}
			var told bool
			for _, e := range r.Events {
				told = told || (e.Event == contract.EventNotice && strings.Contains(e.Text, "is down") && strings.Contains(e.Text, fakegw.FallbackModel))
			}
			if !told {
				t.Error("no notice told the user that the call went to the fallback")
			}

			att := exec.Command(starter, "attempts", s.WorkflowID)
			att.Env = environ
			out, err := att.CombinedOutput()
			if err != nil {
				t.Fatalf("attempts: %v\n%s", err, out)
			}
			served := 0
			for _, line := range strings.Split(string(out), "\n") {
				if strings.Contains(line, "CallModel") {
					if !strings.Contains(line, wire+"/"+fakegw.FallbackModel+" (fallback)") {
						t.Errorf("attempts does not name the fallback on: %s", line)
					}
					served++
				}
			}
			if served != s.GatewayCalls {
				t.Fatalf("attempts lists %d model calls, the summary %d:\n%s", served, s.GatewayCalls, out)
			}
		})
	}
}
