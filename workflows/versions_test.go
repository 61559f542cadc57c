package workflows

import (
	"bytes"
	"encoding/base64"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryMarkerHasItsFixtures: each version marker (versions.go) names a recorded history from
// before it, which replays its old path, and one that took it, where such a history was recorded;
// the test checks that the first holds no record of the marker and the second does, so a renamed
// marker or a fixture recorded again fails here before it fails a running session.
func TestEveryMarkerHasItsFixtures(t *testing.T) {
	cases := []struct{ marker, before, since string }{
		{versionListTools, "v0-plain-session", "plain-session"},
		{versionSearchOnChange, "plain-session", "compaction-session"},
		{versionToolLedger, "plain-turn-1", "ledger-outcome-turn-1"},
		{versionTypedEnds, "v1-cancel-session", "cancel-session"},
		{versionCompaction, "plain-session", "compaction-session"},
		{versionSay, "plain-session", "say-session"},
		{versionKeepInterrupted, "v1-cancel-turn-1", "cancel-turn-1"},
		// Asked for at every session's start; no history that took it is recorded yet.
		{versionUsageWait, "plain-session", ""},
		// Reached only by a session with a goal, or a turn whose reply did not parse: no history
		// recorded on either path, so every one replays the old code by never reaching it.
		{versionGoal, "plain-session", ""},
		{versionStrictRetry, "plain-turn-1", ""},
		// Reached only by a turn whose reply calls delegate.
		{versionDelegate, "plain-turn-1", ""},
		// Asked when a session ends; no history recorded since.
		{versionReviewChanges, "plain-session", ""},
		// Asked only when a person denies a call with a reason.
		{versionDenyReason, "plain-turn-1", ""},
		// Asked only when a person approves a call and allows its tool or command for the session;
		// the recorded approvals allowed nothing more.
		{versionAllowSession, "approval-session", ""},
		// Asked when a session on a workspace made from git ends; none is recorded.
		{versionPushBranch, "plain-session", ""},
		// Asked at a session's first watcher's lease; no watched session is recorded.
		{versionLiveWatch, "plain-session", ""},
		// Asked at every run's start; the turns learn it from their input.
		{versionLocalReads, "plain-session", "reads-session"},
		// Asked at every run's start; the other markers of a session are asked only by runs
		// from before it.
		{versionRunStart, "reads-session", "run-start-session"},
	}
	for _, c := range cases {
		t.Run(c.marker, func(t *testing.T) {
			if holdsMarker(t, c.before, c.marker) {
				t.Errorf("%s, the history from before %q, records it", c.before, c.marker)
			}
			if c.since != "" && !holdsMarker(t, c.since, c.marker) {
				t.Errorf("%s does not record %q", c.since, c.marker)
			}
		})
	}
}

// TestRunStartAsksNoOtherSessionMarker: a run that recorded versionRunStart takes the session's
// changes without their markers, each of which would cost an upsert of TemporalChangeVersion.
func TestRunStartAsksNoOtherSessionMarker(t *testing.T) {
	folded := []string{versionSearchOnChange, versionUsageWait, versionLocalReads, versionListTools,
		versionLiveWatch, versionCompaction, versionSay, versionGoal, versionAllowSession,
		versionReviewChanges, versionTypedEnds, versionPushBranch}
	for _, marker := range folded {
		if holdsMarker(t, "run-start-session", marker) {
			t.Errorf("run-start-session records %q, which run-start stands for", marker)
		}
	}
}

// holdsMarker says whether a recorded history carries the change ID as a marker's payload.
func holdsMarker(t *testing.T, fixture, marker string) bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "histories", fixture+".json"))
	if err != nil {
		t.Fatal(err)
	}
	id := base64.StdEncoding.EncodeToString([]byte(`"` + marker + `"`))
	return bytes.Contains(data, bytes.TrimRight([]byte(id), "="))
}

// TestMarkersLiveInOneFile: every change ID passed to workflow.GetVersion is a constant of
// versions.go, and every one of them has a row in TestEveryMarkerHasItsFixtures, so a reviewer
// finds each change to running sessions in one place.
func TestMarkersLiveInOneFile(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				for _, id := range n.Names {
					if strings.HasPrefix(id.Name, "version") {
						if name != "versions.go" {
							t.Errorf("%s declares the marker %s outside versions.go", name, id.Name)
						}
						declared[id.Name] = true
					}
				}
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "GetVersion" && len(n.Args) > 1 {
					if id, ok := n.Args[1].(*ast.Ident); !ok || !strings.HasPrefix(id.Name, "version") {
						t.Errorf("%s: GetVersion with a change ID that is not a marker constant", fset.Position(n.Pos()))
					}
				}
			}
			return true
		})
	}
	src, err := os.ReadFile("versions_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for name := range declared {
		if !bytes.Contains(src, []byte("{"+name+",")) {
			t.Errorf("%s has no row in TestEveryMarkerHasItsFixtures", name)
		}
	}
}
