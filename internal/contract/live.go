package contract

import (
	"time"

	"github.com/keelrun/keel/internal/jsondur"
)

// SignalWatch is the signal a watcher sends to take, renew or give back its lease on a session's
// live events (a Watch). While any lease runs, the session's turns tell their activities they are
// watched (TurnInput.Watched), and the activities put their recent events in their heartbeats.
const SignalWatch = "watch"

// WatchLease is how long one watch signal holds: a watcher renews it at half of it while it
// follows, so a watcher that vanished without detaching costs the session at most this long of
// watched heartbeats.
const WatchLease = 10 * time.Minute

// Watch is the payload of the watch signal, and a lease the session keeps (SessionInput.Watchers).
type Watch struct {
	// Watcher names the watcher (random per starter process), so its renewal and its detach
	// touch only its own lease.
	Watcher string `json:"watcher"`
	// Lease is how long the lease holds from when the session receives it; zero gives it back
	// (the watcher detached).
	Lease jsondur.Duration `json:"lease,omitempty"`
	// Until is when a lease the session keeps runs out: set by the session, and carried across
	// continue-as-new. A starter that starts a session sets Lease instead.
	Until time.Time `json:"until,omitzero"`
}

// LiveEvents are the recent events of one activity with their positions: Events[i] is at
// position From+i, positions counting from 0 at the activity's first event, across its attempts.
// A running activity's heartbeat details carry them while the session is watched, and its result
// (or its failure) carries them always, so a watcher gets every event of the activity, in order,
// once, whether it followed the heartbeats, missed some, or started late. Events before From were
// left out to bound the payload; the session's transcript has what they showed.
type LiveEvents struct {
	From   int     `json:"from,omitempty"`
	Events []Event `json:"events,omitempty"`
}

// Next is the position after the last event.
func (l *LiveEvents) Next() int {
	if l == nil {
		return 0
	}
	return l.From + len(l.Events)
}

// LiveDetails is the shape every heartbeat of an activity that publishes events shares, so a
// watcher reads the events of any of them without knowing which activity it is. A failed or
// cancelled call's error carries one as its last detail, after the contract.Failure the turn
// reads.
type LiveDetails struct {
	Live *LiveEvents `json:"live,omitempty"`
}

// DefaultEventsInterval is how often a watched activity heartbeats its new events when
// events.interval is not set.
const DefaultEventsInterval = time.Second
