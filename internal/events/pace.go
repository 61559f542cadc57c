package events

import "time"

// minWindow is the narrowest span a pacer expects a heartbeat in: below it, it reads once, at
// the span's end.
const minWindow = 40 * time.Millisecond

// pacer times a follower's reads of the heartbeat details of the activity it follows, so that it
// describes the turn about once per heartbeat rather than several times.
//
// A watched activity heartbeats on a fixed cadence (events.interval) when it has new events. Once
// two heartbeats of one activity told the cadence (the follower keeps it for the session's later
// runs and turns), the next heartbeat is due one cadence after the last, which reached the server
// between the read before the one that found it and that one: the next one is due in that window
// shifted by the cadence. The pacer reads at the middle of the
// window while it is wide, narrowing it at each heartbeat, and then once at its end. A window that
// passes without a heartbeat (the activity had nothing new) moves on by the cadence. Before it
// knows the cadence, and for each activity until its first heartbeat, it reads every poll.
type pacer struct {
	poll time.Duration
	// every is the shortest gap of at least poll between two heartbeats of one activity, by the
	// server's clock (a longer one spans a window without news); zero until known.
	every time.Duration
	// beat is the server's time of the last heartbeat read of the activity; zero before one.
	beat time.Time
	// read is when the last read started.
	read time.Time
	// lo and hi are the window the next heartbeat is due in, by the local clock: after lo, by hi.
	// hi is zero when there is none.
	lo, hi time.Time
}

// restart is for the next activity; the cadence is the worker's, and stays.
func (p *pacer) restart() { p.beat, p.lo, p.hi = time.Time{}, time.Time{}, time.Time{} }

// next takes a read that started at start and returned at end with the activity's last
// heartbeat at beat (zero: none yet), and says when to read again.
func (p *pacer) next(start, end, beat time.Time) time.Time {
	prev := p.read
	p.read = start
	switch {
	case beat.After(p.beat):
		if gap := beat.Sub(p.beat); !p.beat.IsZero() && gap >= p.poll && (p.every == 0 || gap < p.every) {
			p.every = gap
		}
		p.beat = beat
		from := prev
		if p.lo.After(from) {
			from = p.lo
		}
		p.lo, p.hi = time.Time{}, time.Time{}
		if p.every > 0 && !from.IsZero() {
			p.lo, p.hi = from.Add(p.every), end.Add(p.every)
		}
	case p.hi.IsZero():
	case start.Before(p.hi):
		// Not come yet: it is due after this read.
		p.lo = start
	default:
		// None by the window's end: the activity had nothing new; the next is a cadence on.
		for !start.Before(p.hi) {
			p.lo, p.hi = p.lo.Add(p.every), p.hi.Add(p.every)
		}
	}
	if p.hi.IsZero() {
		return end.Add(p.poll)
	}
	if w := p.hi.Sub(p.lo); w > 2*minWindow {
		return p.lo.Add(w / 2)
	}
	return p.hi
}
