// Package events carries a session's live events (model text as it streams, a running command's
// output, retries, notices) from the activities that make them to the people watching, through
// Temporal alone: no worker ever opens a connection to a watcher.
//
// On the worker, each activity that publishes events appends them to a Journal: a bounded window
// of its latest events, each with a position (0, 1, ... from the activity's first event, across
// its attempts). While the session is watched, the window rides in the activity's heartbeat
// details; the activity's result, or its failure, carries it always. Both go through the data
// converter, so with codec.keys they are encrypted like the rest of the history, and only
// Temporal delivers them: nothing can inject an event.
//
// A watcher reads them with Follow: the session's history and its turns' histories by long
// poll, and a running activity's heartbeat details by describing its workflow, none of which
// Temporal bills as an action. It delivers every event once, in order, by position.
package events

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/keelrun/keel/internal/contract"
)

// The window's bounds: an activity's heartbeat and its result carry at most this many of its
// latest events, well under the payload size the server warns at (256 KiB) once encoded.
// Events beyond them are left out of the payloads, and a watcher that had not seen them is told
// so (Follow); the session's transcript has what they showed.
const (
	windowEvents = 1024
	windowBytes  = 192 << 10
)

// Journal is one activity's live events: the window of its latest ones and where it starts.
// Safe for concurrent use.
type Journal struct {
	mu     sync.Mutex
	from   int
	events []contract.Event
	sizes  []int
	bytes  int
	// sent is the position after the last event handed out by Live; dropped counts the events
	// that left the window before Live handed them out (no payload carried them).
	sent    int
	dropped int
}

// NewJournal starts an activity's journal; prev is the window an earlier attempt of the same
// activity left in its heartbeat details, nil for a first attempt, so positions go on from it.
func NewJournal(prev *contract.LiveEvents) *Journal {
	j := &Journal{}
	if prev != nil {
		j.from = prev.From
		for _, e := range prev.Events {
			j.add(e)
		}
		j.sent = j.from + len(j.events)
	}
	return j
}

// Add appends e, stamped with the time now when it has none. A nil journal takes nothing.
func (j *Journal) Add(e contract.Event) {
	if j == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.add(e)
}

func (j *Journal) add(e contract.Event) {
	size := eventSize(e)
	j.events = append(j.events, e)
	j.sizes = append(j.sizes, size)
	j.bytes += size
	drop := 0
	for len(j.events)-drop > 1 && (len(j.events)-drop > windowEvents || j.bytes > windowBytes) {
		j.bytes -= j.sizes[drop]
		drop++
	}
	if drop > 0 {
		j.dropped += max(0, min(j.from+drop, j.from+len(j.events))-max(j.from, j.sent))
		j.events = append(j.events[:0:0], j.events[drop:]...)
		j.sizes = append(j.sizes[:0:0], j.sizes[drop:]...)
		j.from += drop
	}
}

// eventSize is about what e takes encoded.
func eventSize(e contract.Event) int {
	b, err := json.Marshal(e)
	if err != nil {
		return len(e.Text) + len(e.Arguments) + 256
	}
	return len(b)
}

// Live is a copy of the window, for a heartbeat or a result; nil when nothing was published.
func (j *Journal) Live() *contract.LiveEvents {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.sent = j.from + len(j.events)
	if len(j.events) == 0 {
		return nil
	}
	return &contract.LiveEvents{From: j.from, Events: append([]contract.Event(nil), j.events...)}
}

// Dropped is how many events left the window before any payload carried them: watchers see a
// notice in their place.
func (j *Journal) Dropped() int {
	if j == nil {
		return 0
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.dropped
}

// Unsent says whether events were added since Live last handed the window out.
func (j *Journal) Unsent() bool {
	if j == nil {
		return false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.from+len(j.events) > j.sent
}
