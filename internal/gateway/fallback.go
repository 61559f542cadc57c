package gateway

import (
	"sync"
	"time"

	"github.com/keelrun/keel/internal/contract"
)

// Route is one model endpoint of a fallback chain: a provider client and the model it is asked for.
type Route struct {
	Provider Provider
	// Model is the model this route asks for; empty keeps the request's (the primary route).
	Model string
	// Endpoint is set on the route that serves a session's own endpoint (contract.Endpoint), so a
	// failure on it names the session's settings rather than the worker's.
	Endpoint *contract.Endpoint
}

// Label names the route in events, the ledger and `starter attempts`: provider/model.
func (r Route) Label(requested string) string {
	m := r.Model
	if m == "" {
		m = requested
	}
	if m == "" {
		m = "default"
	}
	return r.Provider.Name() + "/" + m
}

// DefaultFallbackCooldown is how long a route that failed stays skipped before one call probes it.
const DefaultFallbackCooldown = 60 * time.Second

// Chain is the primary model and its fallbacks, in order, with a breaker per route. A route's
// breaker opens when a call to it failed in a way a later moment on the same route will not fix
// (see FallsBack); while it is open, calls start at the next route, and after the cooldown one
// call probes it again. The state is per worker process: a worker that restarts probes the
// primary again, which costs at most one failed attempt. A Chain is safe for concurrent use.
type Chain struct {
	routes   []Route
	cooldown time.Duration
	now      func() time.Time

	mu        sync.Mutex
	openUntil []time.Time
}

// NewChain builds a chain of the primary and its fallbacks; cooldown <= 0 takes
// DefaultFallbackCooldown.
func NewChain(cooldown time.Duration, primary Route, fallbacks ...Route) *Chain {
	if cooldown <= 0 {
		cooldown = DefaultFallbackCooldown
	}
	routes := append([]Route{primary}, fallbacks...)
	return &Chain{routes: routes, cooldown: cooldown, now: time.Now, openUntil: make([]time.Time, len(routes))}
}

// WithPrimary is a new chain with primary in front of this chain's fallbacks (its routes after the
// first), with the same cooldown and breakers of its own: a session's endpoint followed by the
// worker's gateway.fallbacks.
func (c *Chain) WithPrimary(primary Route) *Chain {
	n := NewChain(c.cooldown, primary, c.routes[1:]...)
	n.now = c.now
	return n
}

// Len is the number of routes, the primary included.
func (c *Chain) Len() int { return len(c.routes) }

// Route returns route i.
func (c *Chain) Route(i int) Route { return c.routes[i] }

// Start is the first route whose breaker lets a call through. A route past its cooldown lets one
// call probe it (its breaker stays open for the others until that call reports back). When every
// route is open, the last one is tried: a call is never refused outright.
func (c *Chain) Start() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	for i := range c.routes {
		until := c.openUntil[i]
		if until.IsZero() {
			return i
		}
		if !now.Before(until) {
			c.openUntil[i] = now.Add(c.cooldown) // half-open: this call is the probe
			return i
		}
	}
	return len(c.routes) - 1
}

// Failed opens route i's breaker.
func (c *Chain) Failed(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.openUntil[i] = c.now().Add(c.cooldown)
}

// Succeeded closes route i's breaker.
func (c *Chain) Succeeded(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.openUntil[i] = time.Time{}
}

// Open reports whether route i's breaker is open now.
func (c *Chain) Open(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.openUntil[i].IsZero() && c.now().Before(c.openUntil[i])
}

// FallsBack says whether a failed attempt means the route is down, so the call goes to the next
// route at once: transport and throttle failures (outages, overload) once their class's attempts
// are spent, and the surfaced classes a different model may not share (an unknown model or any
// unclassified error, an exhausted budget, a refused key: each route sends its own). A refusal, a
// reply cut after output, an unparsable reply or a cancellation never falls back: another model
// would not make those right, or the user already saw text.
func FallsBack(d Diagnosis, attempt int) bool {
	switch d.Class {
	case contract.ClassTransport, contract.ClassThrottle:
		return d.Handling == Retry && attempt >= AttemptCap(d.Class)
	case contract.ClassUnknown, contract.ClassBudget, contract.ClassAuth:
		return true
	}
	return false
}
