package fakegw

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// Record describes one request the fake gateway answered, so tests can assert what happened on
// which attempt.
type Record struct {
	// At is when the request arrived, before its body was read: tests measure retry waits as
	// the gaps between the arrivals of a call's attempts.
	At time.Time
	// Path is the request path; Format is "openai", "openai-responses" or "anthropic".
	Path   string
	Format string
	Mode   string
	// Hash identifies the request by path, injection mode and body; Attempt counts requests
	// with the same hash, from 1, so sessions with different modes never share a count.
	Hash    string
	Attempt int
	// First is true for the first model call of a conversation (no assistant message yet).
	First bool
	// Strict is true when the request carried contract.StrictInstruction.
	Strict bool
	// Persons are the texts of the user messages in the request that carry a person's words
	// (contract.PersonPrefix: an escalation edit or a steering message), in order, so a test can
	// check what each model call was given.
	Persons []string
	// Task is the conversation's first user message, the session's task, so a test can tell
	// the sessions of a tree (each sub-agent has its own task) apart.
	Task string
	// Reasoning counts the reasoning items a Responses request handed back, each one the fake
	// sent, intact (a request with an altered or bare one is refused with 400).
	Reasoning int
	// Compact is true for a request that asks for a compaction summary (contract.CompactInstruction);
	// Summarised is true for one that carries such a summary in place of the oldest turns; Calls
	// are the tool calls the request's transcript holds, as "NAME ARGS", so a test can check what
	// the model was shown.
	Compact    bool
	Summarised bool
	Calls      []string
	// Status is the HTTP status sent; 0 when the connection was closed before any byte.
	Status int
	// Fault names the fault injected into this response, empty for a normal reply.
	Fault string
	// Tools are the tool calls of the reply; Final is true for an answer without tool calls.
	Tools []string
	Final bool
	// Partial is the text streamed before the stream was cut or the client went away.
	Partial string
	// Disconnected is true when the client closed the connection while the reply streamed.
	Disconnected bool
}

// Stats are the counters the fake gateway keeps; Server.Stats returns a copy.
type Stats struct {
	Requests int
	// ByMode counts requests per injection mode ("" for none).
	ByMode map[string]int
	// Attempts counts requests per body hash.
	Attempts map[string]int
	// StrictRequests counts requests that carried contract.StrictInstruction.
	StrictRequests int
	// Disconnects counts streams the client closed before their end.
	Disconnects int
	// LastPartial is the text already sent on the last stream that was cut or abandoned.
	LastPartial string
	Records     []Record
}

// ForMode returns the records of one injection mode, in arrival order.
func (s Stats) ForMode(mode string) []Record {
	var out []Record
	for _, r := range s.Records {
		if r.Mode == mode {
			out = append(out, r)
		}
	}
	return out
}

// stats guards Stats and wakes waiters on every change.
type stats struct {
	mu      sync.Mutex
	s       Stats
	changed chan struct{}
}

func newStats() *stats {
	return &stats{s: Stats{ByMode: map[string]int{}, Attempts: map[string]int{}}, changed: make(chan struct{})}
}

// begin counts a request and returns its attempt number and record index.
func (st *stats) begin(r Record) (attempt, idx int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.s.Requests++
	st.s.ByMode[r.Mode]++
	st.s.Attempts[r.Hash]++
	if r.Strict {
		st.s.StrictRequests++
	}
	r.Attempt = st.s.Attempts[r.Hash]
	st.s.Records = append(st.s.Records, r)
	st.notifyLocked()
	return r.Attempt, len(st.s.Records) - 1
}

// update changes a record once the response is known.
func (st *stats) update(idx int, f func(*Record)) {
	st.mu.Lock()
	defer st.mu.Unlock()
	rec := &st.s.Records[idx]
	wasDisconnected := rec.Disconnected
	f(rec)
	if rec.Disconnected && !wasDisconnected {
		st.s.Disconnects++
	}
	if rec.Partial != "" {
		st.s.LastPartial = rec.Partial
	}
	st.notifyLocked()
}

func (st *stats) notifyLocked() {
	close(st.changed)
	st.changed = make(chan struct{})
}

// snapshot copies the stats and returns the channel closed at the next change.
func (st *stats) snapshot() (Stats, <-chan struct{}) {
	st.mu.Lock()
	defer st.mu.Unlock()
	c := st.s
	c.ByMode = maps.Clone(st.s.ByMode)
	c.Attempts = maps.Clone(st.s.Attempts)
	c.Records = slices.Clone(st.s.Records)
	for i := range c.Records {
		c.Records[i].Tools = slices.Clone(c.Records[i].Tools)
		c.Records[i].Persons = slices.Clone(c.Records[i].Persons)
		c.Records[i].Calls = slices.Clone(c.Records[i].Calls)
	}
	return c, st.changed
}

// wait blocks until cond holds for the stats or ctx ends.
func (st *stats) wait(ctx context.Context, cond func(Stats) bool) (Stats, error) {
	for {
		s, changed := st.snapshot()
		if cond(s) {
			return s, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return s, fmt.Errorf("waiting for fake gateway stats: %w", ctx.Err())
		}
	}
}
