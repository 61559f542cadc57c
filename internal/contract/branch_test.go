package contract

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBranchNameIsARef: whatever a session's ID holds, its branch is a name git accepts, under
// keel/, and two IDs that differ only in what was replaced get two branches.
func TestBranchNameIsARef(t *testing.T) {
	cases := []struct{ id, want string }{
		{"keel-run-1", "keel/keel-run-1"},
		{"a.b", "keel/a.b"},
		{"parent/sub-call_1", ""},
		{"parent-sub-call_1", "keel/parent-sub-call_1"},
		{"..", ""},
		{"x.lock", ""},
		{"a..b", ""},
		{"-rf", "keel/-rf"},
		{"with space~^:?*[\\", ""},
		{"", ""},
		{"ünïcode", ""},
		{strings.Repeat("a", 300), ""},
	}
	seen := map[string]string{}
	for _, c := range cases {
		got := BranchName(c.id)
		if c.want != "" && got != c.want {
			t.Errorf("BranchName(%q) = %q, want %q", c.id, got, c.want)
		}
		if !strings.HasPrefix(got, "keel/") || len(got) > 120 {
			t.Errorf("BranchName(%q) = %q: not under keel/ or too long", c.id, got)
		}
		if out, err := exec.Command("git", "check-ref-format", "refs/heads/"+got).CombinedOutput(); err != nil {
			t.Errorf("BranchName(%q) = %q, which git refuses: %v %s", c.id, got, err, out)
		}
		if other, ok := seen[got]; ok {
			t.Errorf("%q and %q share the branch %q", other, c.id, got)
		}
		seen[got] = c.id
	}
}
