package events

import (
	"context"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/contract"
)

// TestJournalWindow: positions count from the first event and go on from an earlier attempt's
// window; the window keeps the latest events within its bounds; Unsent says whether anything came
// since Live last handed it out.
func TestJournalWindow(t *testing.T) {
	cases := []struct {
		name     string
		prev     *contract.LiveEvents
		add      int
		text     int
		wantFrom int
		wantNext int
	}{
		{"empty", nil, 0, 1, 0, 0},
		{"a few", nil, 3, 1, 0, 3},
		{"past the event bound", nil, windowEvents + 10, 1, 10, windowEvents + 10},
		{"past the byte bound", nil, 40, 16 << 10, 40 - windowBytes/(16<<10) + 1, 40},
		{"after an attempt", &contract.LiveEvents{From: 5, Events: make([]contract.Event, 2)}, 3, 1, 5, 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := NewJournal(c.prev)
			if j.Unsent() {
				t.Fatal("unsent before anything was added")
			}
			for i := range c.add {
				j.Add(contract.Event{Event: contract.EventDelta, Seq: i + 1, Text: strings.Repeat("x", c.text)})
			}
			if j.Unsent() != (c.add > 0) {
				t.Fatalf("unsent %v after %d events", j.Unsent(), c.add)
			}
			l := j.Live()
			if got := l.Next(); got != c.wantNext {
				t.Fatalf("next %d, want %d", got, c.wantNext)
			}
			if l != nil && l.From != c.wantFrom {
				t.Fatalf("window from %d, want %d", l.From, c.wantFrom)
			}
			if j.Unsent() {
				t.Fatal("unsent right after Live")
			}
			if l != nil && c.prev == nil && j.Dropped() != l.From {
				t.Fatalf("%d dropped, want the %d before the window (none was handed out)", j.Dropped(), l.From)
			}
			if l != nil && c.add > 0 && l.Events[len(l.Events)-1].Seq != c.add {
				t.Fatalf("the window ends at %d, want the newest (%d)", l.Events[len(l.Events)-1].Seq, c.add)
			}
		})
	}
}

// TestDeliverOnceInOrder: windows read more than once, overlapping, or past a hole deliver each
// position once and in order, and a hole is said in one notice.
func TestDeliverOnceInOrder(t *testing.T) {
	win := func(from int, seqs ...int) *contract.LiveEvents {
		l := &contract.LiveEvents{From: from}
		for _, s := range seqs {
			l.Events = append(l.Events, contract.Event{Event: contract.EventDelta, Seq: s})
		}
		return l
	}
	cases := []struct {
		name    string
		windows []*contract.LiveEvents
		want    string
	}{
		{"one", []*contract.LiveEvents{win(0, 1, 2)}, "1 2"},
		{"the same twice", []*contract.LiveEvents{win(0, 1, 2), win(0, 1, 2)}, "1 2"},
		{"overlapping", []*contract.LiveEvents{win(0, 1, 2), win(1, 2, 3, 4)}, "1 2 3 4"},
		{"a heartbeat, then the result", []*contract.LiveEvents{win(0, 1), nil, win(0, 1, 2, 3)}, "1 2 3"},
		{"a hole", []*contract.LiveEvents{win(0, 1), win(3, 4, 5)}, "1 notice 4 5"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := make(chan contract.Event, 64)
			f := &follower{out: out, next: map[string]int{}}
			for _, w := range c.windows {
				f.deliver(context.Background(), "run/1", w)
			}
			close(out)
			var got []string
			for e := range out {
				if e.Event == contract.EventNotice {
					got = append(got, "notice")
					continue
				}
				got = append(got, string(rune('0'+e.Seq)))
			}
			if s := strings.Join(got, " "); s != c.want {
				t.Fatalf("delivered %q, want %q", s, c.want)
			}
		})
	}
}
