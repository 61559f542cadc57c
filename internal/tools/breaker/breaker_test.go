package breaker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/jsondur"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// step is one thing that happens to a breaker: a call asks to run (allow) or one that ran reports
// (ok, fail). For allow, want is the expected decision.
type step struct {
	at   time.Duration
	op   string
	want Decision
}

func allow(at time.Duration, state string, run bool) step {
	return step{at: at, op: "allow", want: Decision{Run: run, State: state, Probe: run && state == HalfOpen}}
}
func fail(at time.Duration) step { return step{at: at, op: "fail"} }
func ok(at time.Duration) step   { return step{at: at, op: "ok"} }
func fails(n int, from, every time.Duration) []step {
	var out []step
	for i := range n {
		out = append(out, fail(from+time.Duration(i)*every))
	}
	return out
}
func seq(parts ...any) []step {
	var out []step
	for _, p := range parts {
		switch v := p.(type) {
		case step:
			out = append(out, v)
		case []step:
			out = append(out, v...)
		}
	}
	return out
}

// small is the config most cases use: 3 failures within 10 s, 30 s cooldown.
var small = Config{Failures: 3, Window: jsondur.Duration(10 * time.Second), Cooldown: jsondur.Duration(30 * time.Second)}

func TestTransitions(t *testing.T) {
	s := time.Second
	cases := []struct {
		name  string
		cfg   Config
		steps []step
		// final is the state Snapshot reports at the last step's time ("" for no entry).
		final string
	}{
		{"unknown key is closed and runs", small, seq(allow(0, Closed, true)), ""},
		{"fewer failures than the threshold stay closed", small,
			seq(fails(2, 0, s), allow(3*s, Closed, true)), Closed},
		{"threshold failures within the window open", small,
			seq(fails(3, 0, s), allow(3*s, Open, false)), Open},
		{"open refuses until the cooldown has passed", small,
			seq(fails(3, 0, s), allow(31*s, Open, false), allow(32*s-1, Open, false)), Open},
		{"after the cooldown one probe runs", small,
			seq(fails(3, 0, s), allow(32*s, HalfOpen, true)), HalfOpen},
		{"only one probe in flight", small,
			seq(fails(3, 0, s), allow(32*s, HalfOpen, true), allow(33*s, HalfOpen, false)), HalfOpen},
		{"probe success closes and clears failures", small,
			seq(fails(3, 0, s), allow(32*s, HalfOpen, true), ok(33*s), allow(34*s, Closed, true),
				fails(2, 35*s, s), allow(37*s, Closed, true)), Closed},
		{"probe failure re-opens for another cooldown", small,
			seq(fails(3, 0, s), allow(32*s, HalfOpen, true), fail(33*s), allow(62*s, Open, false),
				allow(63*s, HalfOpen, true)), HalfOpen},
		{"a lost probe is given up after a cooldown", small,
			seq(fails(3, 0, s), allow(32*s, HalfOpen, true), allow(61*s, HalfOpen, false),
				allow(62*s, HalfOpen, true)), HalfOpen},
		{"old failures fall out of the sliding window", small,
			seq(fail(0), fail(5*s), fail(10*s), allow(11*s, Closed, true), fail(16*s), allow(17*s, Closed, true),
				fail(18*s), allow(19*s, Open, false)), Open},
		{"failures spread wider than the window never open", small,
			seq(fails(10, 0, 6*s), allow(61*s, Closed, true)), Closed},
		{"successes in between do not reset the window", small,
			seq(fail(0), ok(s), fail(2*s), ok(3*s), fail(4*s), allow(5*s, Open, false)), Open},
		{"a success with no failures leaves nothing behind", small,
			seq(ok(0), ok(s), allow(2*s, Closed, true)), ""},
		{"failures expire and the entry is dropped", small,
			seq(fail(0), ok(20*s), allow(21*s, Closed, true)), ""},
		{"results while open change nothing", small,
			seq(fails(3, 0, s), ok(4*s), fail(5*s), allow(32*s, HalfOpen, true)), HalfOpen},
		{"defaults: five failures in two minutes, sixty second cooldown", Config{},
			seq(fails(4, 0, 20*s), allow(90*s, Closed, true), fail(100*s), allow(101*s, Open, false),
				allow(160*s-1, Open, false), allow(160*s, HalfOpen, true)), HalfOpen},
		{"defaults: a failure stops counting exactly one window later", Config{},
			seq(fails(5, 0, 30*s), allow(121*s, Closed, true)), Closed},
		{"defaults: five failures just inside the window open", Config{},
			seq(fails(5, 0, 29*s), allow(117*s, Open, false)), Open},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var st State
			var last time.Time
			for i, sp := range tc.steps {
				now := t0.Add(sp.at)
				last = now
				switch sp.op {
				case "allow":
					got := st.Allow(tc.cfg, "k", now)
					got.RetryAt = time.Time{}
					if got != sp.want {
						t.Fatalf("step %d (allow at %v): got %+v, want %+v", i, sp.at, got, sp.want)
					}
				case "ok", "fail":
					st.Record(tc.cfg, "k", now, sp.op == "ok")
				}
			}
			snap := st.Snapshot(last)
			got := ""
			if len(snap) == 1 {
				got = snap[0].State
			} else if len(snap) > 1 {
				t.Fatalf("snapshot has %d entries, want at most 1", len(snap))
			}
			if got != tc.final {
				t.Fatalf("final state %q, want %q (snapshot %+v)", got, tc.final, snap)
			}
		})
	}
}

func TestRefusalSaysWhenToRetry(t *testing.T) {
	var st State
	for i := range 3 {
		st.Record(small, "k", t0.Add(time.Duration(i)*time.Second), false)
	}
	d := st.Allow(small, "k", t0.Add(5*time.Second))
	if want := t0.Add(2*time.Second + small.Cooldown.Std()); d.Run || !d.RetryAt.Equal(want) {
		t.Fatalf("decision %+v, want refused with retry at %v", d, want)
	}
}

func TestKeysAreIndependent(t *testing.T) {
	var st State
	for i := range 3 {
		st.Record(small, "b", t0.Add(time.Duration(i)*time.Second), false)
	}
	st.Record(small, "a", t0, false)
	st.Record(small, "c", t0, false)
	if d := st.Allow(small, "b", t0.Add(4*time.Second)); d.Run {
		t.Fatalf("b should be open, got %+v", d)
	}
	for _, k := range []string{"a", "c", "d"} {
		if d := st.Allow(small, k, t0.Add(4*time.Second)); !d.Run || d.State != Closed {
			t.Fatalf("%s should be closed, got %+v", k, d)
		}
	}
}

func TestSnapshot(t *testing.T) {
	var st State
	for _, k := range []string{"zeta", "alpha", "mcp:flaky"} {
		n := 1
		if k == "mcp:flaky" {
			n = 3
		}
		for i := range n {
			st.Record(small, k, t0.Add(time.Duration(i)*time.Second), false)
		}
	}
	now := t0.Add(5 * time.Second)
	want := []Status{
		{Key: "alpha", State: Closed, Failures: 1},
		{Key: "mcp:flaky", State: Open, Failures: 3, OpenedAt: t0.Add(2 * time.Second), RetryAt: t0.Add(32 * time.Second)},
		{Key: "zeta", State: Closed, Failures: 1},
	}
	assertStatuses(t, st.Snapshot(now), want)

	// Later: the closed failures have expired, the open breaker is due for a probe.
	later := t0.Add(40 * time.Second)
	assertStatuses(t, st.Snapshot(later), []Status{
		{Key: "mcp:flaky", State: HalfOpen, Failures: 0, OpenedAt: t0.Add(2 * time.Second), RetryAt: t0.Add(32 * time.Second)},
	})

	// Snapshot changes nothing: the breaker is still open in the state itself.
	if st.Breakers[1].State != Open {
		t.Fatalf("snapshot changed the state: %+v", st.Breakers[1])
	}

	// Once the probe is out, the snapshot says when a lost probe is given up.
	st.Allow(small, "mcp:flaky", later)
	snap := st.Snapshot(later)
	if len(snap) != 1 || snap[0].State != HalfOpen || !snap[0].RetryAt.Equal(later.Add(small.Cooldown.Std())) {
		t.Fatalf("snapshot with probe out: %+v", snap)
	}
}

func assertStatuses(t *testing.T, got, want []Status) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d statuses %+v, want %d %+v", len(got), got, len(want), want)
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Key != w.Key || g.State != w.State || g.Failures != w.Failures ||
			!g.OpenedAt.Equal(w.OpenedAt) || !g.RetryAt.Equal(w.RetryAt) {
			t.Errorf("status %d: got %+v, want %+v", i, g, w)
		}
	}
}

func TestKey(t *testing.T) {
	cases := []struct{ tool, server, want string }{
		{"read_file", "", "read_file"},
		{"flaky_lookup", "flaky", "mcp:flaky"},
	}
	for _, tc := range cases {
		if got := Key(tc.tool, tc.server); got != tc.want {
			t.Errorf("Key(%q, %q) = %q, want %q", tc.tool, tc.server, got, tc.want)
		}
	}
}

func TestWithDefaults(t *testing.T) {
	got := Config{Failures: -1, Cooldown: jsondur.Duration(time.Second)}.WithDefaults()
	want := Config{Failures: DefaultFailures, Window: DefaultWindow, Cooldown: jsondur.Duration(time.Second)}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

// script drives a State through a fixed mix of keys, failures, successes and time, the way turns
// of a session would, serialising it between every step as the workflow does between turns. It
// returns a log of every decision and the final state's bytes.
func script(t *testing.T) (string, []byte) {
	t.Helper()
	keys := []string{"mcp:flaky", "read_file", "run_command", "mcp:other"}
	var log bytes.Buffer
	data := []byte(`{}`)
	for i := range 200 {
		var st State
		if err := json.Unmarshal(data, &st); err != nil {
			t.Fatalf("decoding state: %v", err)
		}
		key := keys[(i*i+i/3)%len(keys)]
		now := t0.Add(time.Duration(i*400) * time.Millisecond)
		d := st.Allow(small, key, now)
		fmt.Fprintf(&log, "%d %s %+v\n", i, key, d)
		if d.Run {
			st.Record(small, key, now.Add(100*time.Millisecond), (i*13)%5 == 1)
		}
		var err error
		if data, err = json.Marshal(st); err != nil {
			t.Fatalf("encoding state: %v", err)
		}
	}
	return log.String(), data
}

func TestDeterministic(t *testing.T) {
	log1, state1 := script(t)
	log2, state2 := script(t)
	if log1 != log2 {
		t.Fatal("two runs of the same script made different decisions")
	}
	if !bytes.Equal(state1, state2) {
		t.Fatalf("two runs of the same script ended in different states:\n%s\n%s", state1, state2)
	}
	// The script must exercise every state, or it proves little.
	for _, s := range []string{"State:closed", "State:open", "State:half-open", "Probe:true"} {
		if !bytes.Contains([]byte(log1), []byte(s)) {
			t.Errorf("the script never produced %s", s)
		}
	}
}

func TestStateRoundTripsThroughJSON(t *testing.T) {
	var st State
	for i := range 3 {
		st.Record(small, "k", t0.Add(time.Duration(i)*time.Second), false)
	}
	st.Record(small, "j", t0, false)
	data, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var back State
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Duration{5 * time.Second, 40 * time.Second} {
		a, b := st, back
		a.Breakers = append([]Breaker(nil), st.Breakers...)
		da, db := a.Allow(small, "k", t0.Add(at)), b.Allow(small, "k", t0.Add(at))
		if da.Run != db.Run || da.State != db.State || !da.RetryAt.Equal(db.RetryAt) {
			t.Fatalf("at %v: original %+v, decoded %+v", at, da, db)
		}
	}
	var empty State
	if data, _ := json.Marshal(empty); string(data) != `{}` {
		t.Fatalf("empty state serialises as %s, want {}", data)
	}
}
