package events

import (
	"testing"
	"time"
)

// TestPacer follows a simulated activity that heartbeats on a grid while it has news, and checks
// how often the pacer reads and how late it sees each heartbeat, against a fixed poll.
func TestPacer(t *testing.T) {
	const poll = 300 * time.Millisecond
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	cases := []struct {
		name string
		// beats are when the heartbeats reach the server, from the activity's start.
		beats []time.Duration
		// rtt is how long a read takes.
		rtt time.Duration
		// every is the cadence an earlier turn taught, zero for none.
		every time.Duration
		// until is how long the activity runs.
		until time.Duration
		// maxReads bounds the reads; maxLate how long after it reached the server a heartbeat
		// is read, after the third.
		maxReads int
		maxLate  time.Duration
	}{
		{
			name:     "a stream: the first text at once, then one a second",
			beats:    []time.Duration{120 * time.Millisecond, 1120 * time.Millisecond, 2120 * time.Millisecond, 3120 * time.Millisecond, 4120 * time.Millisecond, 5120 * time.Millisecond, 6120 * time.Millisecond, 7120 * time.Millisecond},
			rtt:      2 * time.Millisecond,
			until:    7500 * time.Millisecond,
			maxReads: 14, // a fixed poll: 25
			maxLate:  2 * minWindow,
		},
		{
			name:     "the same stream, the cadence known from an earlier turn",
			beats:    []time.Duration{120 * time.Millisecond, 1120 * time.Millisecond, 2120 * time.Millisecond, 3120 * time.Millisecond, 4120 * time.Millisecond, 5120 * time.Millisecond, 6120 * time.Millisecond, 7120 * time.Millisecond},
			rtt:      2 * time.Millisecond,
			every:    time.Second,
			until:    7500 * time.Millisecond,
			maxReads: 12,
			maxLate:  2 * minWindow,
		},
		{
			name:     "a command quiet for five seconds between its output",
			beats:    []time.Duration{time.Second, 2 * time.Second, 8 * time.Second, 9 * time.Second},
			rtt:      2 * time.Millisecond,
			until:    9500 * time.Millisecond,
			maxReads: 18, // a fixed poll: 31
			maxLate:  poll / 2,
		},
		{
			name:     "a slow server",
			beats:    []time.Duration{150 * time.Millisecond, 1150 * time.Millisecond, 2150 * time.Millisecond, 3150 * time.Millisecond, 4150 * time.Millisecond},
			rtt:      90 * time.Millisecond,
			until:    4500 * time.Millisecond,
			maxReads: 9, // a fixed poll: 15
			maxLate:  poll,
		},
		{
			name:     "no heartbeat at all",
			until:    3 * time.Second,
			maxReads: 10, // as a fixed poll: the cadence is unknown without a heartbeat
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := &pacer{poll: poll, every: c.every}
			seen := map[int]bool{}
			reads := 0
			for now := at(poll); now.Before(at(c.until)); reads++ {
				var beat time.Time
				for i, b := range c.beats {
					if at(b).After(now) {
						break
					}
					beat = at(b)
					if !seen[i] {
						seen[i] = true
						if late := now.Sub(beat); i >= 3 && late > c.maxLate {
							t.Errorf("heartbeat %d read %s after it came, want at most %s", i, late, c.maxLate)
						}
					}
				}
				next := p.next(now, now.Add(c.rtt), beat)
				if !next.After(now) {
					t.Fatalf("the next read at %s is not after this one at %s", next.Sub(t0), now.Sub(t0))
				}
				if d := next.Sub(now); d > 2*time.Second {
					t.Fatalf("waits %s for the next read", d)
				}
				now = next
			}
			if reads > c.maxReads {
				t.Errorf("%d reads, want at most %d", reads, c.maxReads)
			}
			for i := range c.beats {
				if c.beats[i] < c.until && !seen[i] {
					t.Errorf("heartbeat %d was never read", i)
				}
			}
		})
	}
}
