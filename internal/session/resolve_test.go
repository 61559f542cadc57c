package session

import "testing"

// TestMatchesPrefix: a typed prefix names a session when it starts the whole ID or its short
// random suffix, and nothing else.
func TestMatchesPrefix(t *testing.T) {
	const id = "keel-run-20260102-150405-62c0e1"
	cases := []struct {
		typed string
		want  bool
	}{
		{id, true},
		{"keel-run-2026", true},
		{"62c0e1", true},
		{"62c", true},
		{"0e1", false},
		{"150405", false},
		{"keel-demo", false},
	}
	for _, c := range cases {
		if got := MatchesPrefix(id, c.typed); got != c.want {
			t.Errorf("MatchesPrefix(%q) = %v, want %v", c.typed, got, c.want)
		}
	}
}
