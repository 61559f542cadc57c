package cli

import (
	"github.com/keelrun/keel/internal/contract"
)

// sayOf is the index of the say event that became m, or -1.
func sayOf(says []contract.Event, m contract.Message) int {
	for i, e := range says {
		if m.Content == contract.PersonPrefix+e.Text {
			return i
		}
	}
	return -1
}

// interleave puts a session's events (approvals and their decisions, escalations and answers,
// messages said to it, limits) among its transcript's messages where they happened, as one list
// of events to print, instead of all events after the whole transcript. Messages carry no turn,
// so turns are counted as fork counts them: each model reply (an assistant message Keel did not
// write) starts the next turn. An event's turn is its own, or, when it has none (an escalation's
// answer), that of the event before it. A call's approval and its decision come after the reply
// of its turn that asked for the call; a message said to the session takes the place of the
// transcript's message it became; everything else comes after its turn, before the next reply.
func interleave(msgs []contract.Message, evs []contract.Event) []contract.Event {
	type placed struct {
		e contract.Event
		// before is the reply the event goes before; an approval goes right after that reply.
		before   int
		approval bool
	}
	var ps []placed
	var says []contract.Event
	turn := 0
	for _, e := range evs {
		if e.Turn > 0 {
			turn = e.Turn
		}
		p := placed{e: e, before: turn + 1}
		switch {
		case e.Event == contract.EventSay:
			// Placed at the message it became, below.
			says = append(says, e)
			continue
		case e.Event == contract.EventApproval || (e.Event == contract.EventAnswer && e.CallID != ""):
			p.approval, p.before = true, turn
		}
		ps = append(ps, p)
	}
	var out []contract.Event
	next := 0
	flush := func(upTo int, approvals bool) {
		for next < len(ps) {
			p := ps[next]
			if p.before > upTo || (p.before == upTo && p.approval != approvals) {
				return
			}
			out = append(out, p.e)
			next++
		}
	}
	replies := 0
	for _, m := range msgs {
		if m.Role == contract.RoleAssistant && m.Note == "" {
			replies++
			// What happened before this reply: events of earlier turns, and messages said to it.
			flush(replies, false)
			out = append(out, messageEvent(m))
			// The approvals of this turn's calls follow the reply that asked for them.
			flush(replies, true)
			continue
		}
		if m.Role == contract.RoleUser && m.Note == "say" {
			// A message said to the session shows where the model got it, as who said it.
			if i := sayOf(says, m); i >= 0 {
				out = append(out, says[i])
				says = append(says[:i], says[i+1:]...)
				continue
			}
		}
		if m.Role == contract.RoleUser && m.Note != "" {
			// A record Keel wrote after the turn (an escalation's answer, a limit) follows what it
			// records.
			flush(replies+1, false)
		}
		out = append(out, messageEvent(m))
	}
	for ; next < len(ps); next++ {
		out = append(out, ps[next].e)
	}
	// Said, not delivered yet.
	return append(out, says...)
}
