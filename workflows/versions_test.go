package workflows

import (
	"bytes"
	"encoding/base64"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
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
// changes (those asked through session.takes) without their markers, each of which would cost an
// upsert of TemporalChangeVersion.
func TestRunStartAsksNoOtherSessionMarker(t *testing.T) {
	m := readMarkers(t)
	if len(m.taken) == 0 {
		t.Fatal("no change is asked through session.takes")
	}
	for name := range m.taken {
		if holdsMarker(t, "run-start-session", m.declared[name]) {
			t.Errorf("run-start-session records %s, which run-start stands for", name)
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

// TestMarkersLiveInOneFile: every change ID passed to workflow.GetVersion or session.takes is a
// constant of versions.go, and every one of them has a row in TestEveryMarkerHasItsFixtures, so a
// reviewer finds each change to running sessions in one place.
func TestMarkersLiveInOneFile(t *testing.T) {
	m := readMarkers(t)
	src, err := os.ReadFile("versions_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for name := range m.declared {
		if !bytes.Contains(src, []byte("{"+name+",")) {
			t.Errorf("%s has no row in TestEveryMarkerHasItsFixtures", name)
		}
	}
}

// markers are the version markers the package's code declares (name to change ID) and the names
// of those it asks through session.takes.
type markers struct {
	declared map[string]string
	taken    map[string]bool
}

// readMarkers parses the package's code for its markers, and fails t where a marker is declared
// outside versions.go or a change ID is passed that is not a marker constant (the one exception
// is takes itself, which passes on what it was given).
func readMarkers(t *testing.T) markers {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	m := markers{declared: map[string]string{}, taken: map[string]bool{}}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Name.Name == "takes" {
				continue
			}
			ast.Inspect(decl, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.ValueSpec:
					for i, id := range n.Names {
						if !strings.HasPrefix(id.Name, "version") {
							continue
						}
						if name != "versions.go" {
							t.Errorf("%s declares the marker %s outside versions.go", name, id.Name)
						}
						m.declared[id.Name] = changeID(t, n, i)
					}
				case *ast.CallExpr:
					sel, ok := n.Fun.(*ast.SelectorExpr)
					if !ok || (sel.Sel.Name != "GetVersion" && sel.Sel.Name != "takes") || len(n.Args) < 2 {
						return true
					}
					id, ok := n.Args[1].(*ast.Ident)
					if !ok || !strings.HasPrefix(id.Name, "version") {
						t.Errorf("%s: %s with a change ID that is not a marker constant", fset.Position(n.Pos()), sel.Sel.Name)
						return true
					}
					if sel.Sel.Name == "takes" {
						m.taken[id.Name] = true
					}
				}
				return true
			})
		}
	}
	return m
}

// changeID is the string constant the i-th name of spec is declared with.
func changeID(t *testing.T, spec *ast.ValueSpec, i int) string {
	t.Helper()
	if i >= len(spec.Values) {
		t.Fatalf("the marker %s has no value of its own", spec.Names[i].Name)
	}
	lit, ok := spec.Values[i].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		t.Fatalf("the marker %s is not a string literal", spec.Names[i].Name)
	}
	id, err := strconv.Unquote(lit.Value)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
