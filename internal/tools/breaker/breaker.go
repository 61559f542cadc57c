// Package breaker is a circuit breaker per tool or per tool server, written to run inside workflow
// code: it does no I/O, reads no clock and starts no goroutines. The caller passes the time in (the
// workflow's own clock) and carries the whole State from turn to turn as a plain JSON value, so a
// replay computes exactly the same decisions as the first run.
package breaker

import (
	"sort"
	"time"

	"github.com/keelrun/keel/internal/jsondur"
)

// State names, as they appear in a Decision, a Status and the serialised State.
const (
	Closed   = "closed"
	Open     = "open"
	HalfOpen = "half-open"
)

// Defaults of Config: five failures within two minutes open a breaker for a minute.
const (
	DefaultFailures = 5
	DefaultWindow   = jsondur.Duration(2 * time.Minute)
	DefaultCooldown = jsondur.Duration(60 * time.Second)
)

// Config shapes every breaker of a State. Zero fields take the defaults, so a session that
// configures nothing still gets a breaker that protects the model from a dead tool.
type Config struct {
	// Failures is how many failures within Window open a breaker.
	Failures int `json:"failures,omitempty"`
	// Window is how long a failure keeps counting.
	Window jsondur.Duration `json:"window,omitempty"`
	// Cooldown is how long an open breaker refuses calls before it lets one probe through.
	Cooldown jsondur.Duration `json:"cooldown,omitempty"`
}

// WithDefaults returns the config with its zero (or negative) fields set to the defaults.
func (c Config) WithDefaults() Config {
	if c.Failures <= 0 {
		c.Failures = DefaultFailures
	}
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	if c.Cooldown <= 0 {
		c.Cooldown = DefaultCooldown
	}
	return c
}

// Decision answers Allow. When Run is false the call must not be made: the caller answers it at
// once with an "unavailable" result (toolspec.BreakerOpenFeedback) and records nothing.
type Decision struct {
	// Run says the call may go ahead.
	Run bool `json:"run"`
	// Probe says this call is the single half-open probe; its Record closes or re-opens the breaker.
	Probe bool `json:"probe,omitempty"`
	// State is the breaker's state after the decision.
	State string `json:"state"`
	// RetryAt is, for a refused call, the earliest moment another call may be let through.
	RetryAt time.Time `json:"retry_at,omitzero"`
}

// Key is the breaker key of a tool: its MCP server ("mcp:" + server name) when it has one, so that
// one dead server trips once for all its tools, and the tool's own name otherwise. It takes the
// two fields of contract.ToolSpec rather than the spec so that this package imports nothing of
// Keel's and contract itself may carry a State.
func Key(tool, server string) string {
	if server != "" {
		return "mcp:" + server
	}
	return tool
}

// State holds every breaker of a session. Its zero value is ready to use: all breakers closed.
// Breakers are kept sorted by key and a closed breaker with no recent failures is dropped, so the
// value stays small and serialises to the same bytes for the same history.
type State struct {
	Breakers []Breaker `json:"breakers,omitempty"`
}

// Breaker is the state of one key. Its fields are exported only so that the State serialises; use
// Allow, Record and Snapshot rather than reading them.
type Breaker struct {
	Key   string `json:"key"`
	State string `json:"state"`
	// Expires lists, oldest first, the moment each recent failure stops counting (the failure's
	// time plus the window it was recorded with). At most Config.Failures entries are kept.
	Expires []time.Time `json:"expires,omitempty"`
	// OpenedAt is when the breaker last opened.
	OpenedAt time.Time `json:"opened_at,omitzero"`
	// RetryAt is when an open breaker lets its probe through.
	RetryAt time.Time `json:"retry_at,omitzero"`
	// ProbeAt is when the half-open probe was let through.
	ProbeAt time.Time `json:"probe_at,omitzero"`
}

// find returns the index of key's breaker, or -1; Breakers is sorted by key.
func (s *State) find(key string) int {
	i := sort.Search(len(s.Breakers), func(i int) bool { return s.Breakers[i].Key >= key })
	if i < len(s.Breakers) && s.Breakers[i].Key == key {
		return i
	}
	return -1
}

// get returns key's breaker, adding a closed one in sorted position when there is none.
func (s *State) get(key string) *Breaker {
	i := sort.Search(len(s.Breakers), func(i int) bool { return s.Breakers[i].Key >= key })
	if i == len(s.Breakers) || s.Breakers[i].Key != key {
		s.Breakers = append(s.Breakers, Breaker{})
		copy(s.Breakers[i+1:], s.Breakers[i:])
		s.Breakers[i] = Breaker{Key: key, State: Closed}
	}
	return &s.Breakers[i]
}

// drop removes key's breaker once it holds nothing worth remembering.
func (s *State) drop(key string) {
	if i := s.find(key); i >= 0 {
		b := s.Breakers[i]
		if b.State == Closed && len(b.Expires) == 0 {
			s.Breakers = append(s.Breakers[:i], s.Breakers[i+1:]...)
		}
	}
	if len(s.Breakers) == 0 {
		s.Breakers = nil
	}
}

// live returns the failures of expires still counting at now.
func live(expires []time.Time, now time.Time) []time.Time {
	i := 0
	for i < len(expires) && !expires[i].After(now) {
		i++
	}
	return expires[i:]
}
