package contract

import (
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/jsondur"
)

// TestChildSessionID: a child's ID derives from its parent and call, stays readable for the IDs
// providers send, and is bounded and changed visibly for anything else.
func TestChildSessionID(t *testing.T) {
	cases := []struct{ call, want string }{
		{"call_abc-1", "wf/sub-call_abc-1"},
		{"toolu_01A", "wf/sub-toolu_01A"},
		{"a/b c", "wf/sub-abc-" + Digest("a/b c")[:8]},
	}
	for _, c := range cases {
		if got := ChildSessionID("wf", c.call); got != c.want {
			t.Errorf("ChildSessionID(wf, %q) = %q, want %q", c.call, got, c.want)
		}
	}
	if long := ChildSessionID("wf", strings.Repeat("x", 500)); len(long) > 100 {
		t.Errorf("a 500-character call ID gave an ID of %d characters", len(long))
	}
	for _, id := range []string{"wf", ChildSessionID("wf", "c1"), ChildSessionID(ChildSessionID("wf", "c1"), "c2")} {
		if child := ChildSessionID(id, "x"); ParentSessionID(child) != id {
			t.Errorf("ParentSessionID(%q) = %q, want %q", child, ParentSessionID(child), id)
		}
	}
	if ParentSessionID("keel-run-1") != "" {
		t.Error("a session a person started has a parent")
	}
	if ChildSessionID("wf", "a/b") == ChildSessionID("wf", "ab") {
		t.Error("two call IDs that differ only in dropped characters share a child ID")
	}
}

// TestLimitsSlice: a child gets what it asks for, cut to what its parent has left; a parent
// without a limit passes on the child's request; one with little left passes on at least one.
func TestLimitsSlice(t *testing.T) {
	parent := Limits{MaxTurns: 10, MaxTokens: 1000, MaxDuration: jsondur.Duration(time.Hour), DelegationDepth: 2, MaxChildren: 4}
	left := LimitsLeft(parent, 4, 600, 20*time.Minute)
	want := Limits{MaxTurns: 6, MaxTokens: 400, MaxDuration: jsondur.Duration(40 * time.Minute), DelegationDepth: 1, MaxChildren: 4}
	if left != want {
		t.Fatalf("LimitsLeft = %+v, want %+v", left, want)
	}
	cases := []struct {
		name        string
		asked, left Limits
		want        Limits
	}{
		{"more than left", Limits{MaxTokens: 5000, MaxTurns: 20}, left, left},
		{"less than left", Limits{MaxTokens: 100, MaxTurns: 2}, left, Limits{MaxTurns: 2, MaxTokens: 100, MaxDuration: left.MaxDuration, DelegationDepth: 1, MaxChildren: 4}},
		{"nothing asked", Limits{}, left, left},
		{"no parent limit", Limits{MaxTokens: 100}, Limits{}, Limits{MaxTokens: 100}},
	}
	for _, c := range cases {
		if got := Within(c.asked, c.left); got != c.want {
			t.Errorf("%s: Within = %+v, want %+v", c.name, got, c.want)
		}
	}
	if got := LimitsLeft(Limits{MaxTokens: 100}, 0, 500, 0); got.MaxTokens != 1 {
		t.Errorf("a parent over its limit passes on %d tokens, want 1", got.MaxTokens)
	}
}
