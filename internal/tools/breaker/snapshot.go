package breaker

import (
	"sort"
	"time"
)

// Status is one breaker as a person sees it, for status queries, events and the Web UI.
type Status struct {
	Key   string `json:"key"`
	State string `json:"state"`
	// Failures is how many failures still count at the moment of the snapshot.
	Failures int `json:"failures"`
	// OpenedAt is when the breaker last opened; zero for a closed one.
	OpenedAt time.Time `json:"opened_at,omitzero"`
	// RetryAt is when the next probe may go (open), or when a lost probe is given up (half-open).
	RetryAt time.Time `json:"retry_at,omitzero"`
}

// Snapshot lists every breaker that is not plainly closed with no failures, sorted by key. An open
// breaker whose cooldown has passed at now is shown as half-open: the next call will probe it.
// Snapshot does not change the state, so it is safe to call from a query handler.
func (s State) Snapshot(now time.Time) []Status {
	out := make([]Status, 0, len(s.Breakers))
	for _, b := range s.Breakers {
		st := Status{Key: b.Key, State: b.State, Failures: len(live(b.Expires, now))}
		switch b.State {
		case Open:
			st.OpenedAt, st.RetryAt = b.OpenedAt, b.RetryAt
			if !now.Before(b.RetryAt) {
				st.State = HalfOpen
			}
		case HalfOpen:
			st.OpenedAt = b.OpenedAt
			if !b.ProbeAt.IsZero() {
				// The cooldown is not passed in here; the length of the open period it set is it.
				st.RetryAt = b.ProbeAt.Add(b.RetryAt.Sub(b.OpenedAt))
			}
		}
		if st.State == Closed && st.Failures == 0 {
			continue
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}
