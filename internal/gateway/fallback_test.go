package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
)

// namedProvider is a provider that only has a name: the chain never calls Stream.
type namedProvider string

func (p namedProvider) Name() string { return string(p) }
func (p namedProvider) Stream(context.Context, Request, func(string)) (Response, error) {
	return Response{}, nil
}

// TestChainBreaker: a route that failed is skipped until its cooldown has passed, then exactly one
// call probes it; a success closes it; with every route open the last one is tried.
func TestChainBreaker(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewChain(time.Minute, Route{Provider: namedProvider("openai")}, Route{Provider: namedProvider("anthropic"), Model: "claude-x"})
	c.now = func() time.Time { return clock }
	steps := []struct {
		name  string
		do    func()
		start int
	}{
		{"all closed: the primary", func() {}, 0},
		{"primary failed: the fallback", func() { c.Failed(0) }, 1},
		{"before the cooldown: still the fallback", func() { clock = clock.Add(59 * time.Second) }, 1},
		{"after the cooldown: one probe of the primary", func() { clock = clock.Add(2 * time.Second) }, 0},
		{"while the probe runs: the fallback", func() {}, 1},
		{"the probe succeeded: the primary", func() { c.Succeeded(0) }, 0},
		{"every route open: the last", func() { c.Failed(0); c.Failed(1) }, 1},
	}
	for _, s := range steps {
		s.do()
		if got := c.Start(); got != s.start {
			t.Fatalf("%s: start %d, want %d", s.name, got, s.start)
		}
	}
	if got := c.Route(1).Label("gpt-4o-mini"); got != "anthropic/claude-x" {
		t.Errorf("fallback label %q", got)
	}
	if got := c.Route(0).Label("gpt-4o-mini"); got != "openai/gpt-4o-mini" {
		t.Errorf("primary label %q", got)
	}
}

// TestFallsBack: only a route that is down sends the call on; what another model would not fix
// stays with the primary.
func TestFallsBack(t *testing.T) {
	cases := []struct {
		name    string
		d       Diagnosis
		attempt int
		want    bool
	}{
		{"outage with attempts left", retry(contract.ClassTransport, msgNetwork, 0), 3, false},
		{"outage past its cap", retry(contract.ClassTransport, msgNetwork, 0), 4, true},
		{"overloaded past its cap", retry(contract.ClassThrottle, msgOverloaded, 0), 6, true},
		{"overloaded with attempts left", retry(contract.ClassThrottle, msgOverloaded, 0), 2, false},
		{"unknown model", unknown("model not found"), 1, true},
		{"budget", Diagnosis{Class: contract.ClassBudget, Handling: Surface}, 1, true},
		{"refusal", Diagnosis{Class: contract.ClassRefusal, Handling: Surface}, 1, false},
		{"cut after output", Diagnosis{Class: contract.ClassTruncated, Handling: Surface}, 1, false},
		{"unparsable reply", retry(contract.ClassSchema, msgSchema, 0), 2, false},
		{"cancelled", Diagnosis{Class: contract.ClassCancelled, Handling: Stop}, 1, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := FallsBack(c.d, c.attempt); got != c.want {
				t.Fatalf("FallsBack(%s, attempt %d) = %v, want %v", c.d.Class, c.attempt, got, c.want)
			}
		})
	}
}
