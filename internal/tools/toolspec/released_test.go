package toolspec

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/contract"
)

// writeReleased adds this build's built-in tools to the released sets when they are missing:
// go test ./internal/tools/toolspec -run TestReleasedSets -write-released
var writeReleased = flag.Bool("write-released", false, "add this build's built-in tool set to "+releasedDir)

// TestReleasedSets keeps the released sets append-only: every file holds exactly the set its name
// is the digest of (so an old set cannot be edited in place), and this build's built-in tools are
// one of them (so a changed text gets a file of its own next to the old ones).
func TestReleasedSets(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(releasedDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("want released tool sets in %s: %v", releasedDir, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var specs []contract.ToolSpec
		if err := json.Unmarshal(b, &specs); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if got, want := Digest(specs), strings.TrimSuffix(filepath.Base(f), ".json"); got != want {
			t.Errorf("%s holds the tools of %s: a released set was edited; restore it and add the new set as a file of its own", f, got)
		}
		if canon := releasedJSON(t, specs); string(b) != canon {
			t.Errorf("%s is not written as json.Marshal writes it (plus a newline)", f)
		}
	}
	if _, ok := released[preListing]; !ok {
		t.Errorf("the set of sessions that never listed their tools (%s) is gone", preListing)
	}
	digest := Digest(builtinSpecs())
	if _, ok := released[digest]; ok {
		return
	}
	name := filepath.Join(releasedDir, digest+".json")
	if !*writeReleased {
		t.Fatalf("this build's built-in tools (%s) are not a released set: keep the older files and add internal/tools/toolspec/%s "+
			"(go test ./internal/tools/toolspec -run TestReleasedSets -write-released)", digest, name)
	}
	if err := os.WriteFile(name, []byte(releasedJSON(t, builtinSpecs())), 0o644); err != nil {
		t.Fatal(err)
	}
}

// releasedJSON is the text of a released set's file.
func releasedJSON(t *testing.T, specs []contract.ToolSpec) string {
	t.Helper()
	b, err := json.Marshal(specs)
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

// TestChangedTextKeepsOldSet: once this build's tool text differs from a released set, a list that
// starts with the old set still travels by the old digest and resolves to the old text, while the
// new text travels by its own digest.
func TestChangedTextKeepsOldSet(t *testing.T) {
	old := Builtin()
	oldDigest := Digest(old)
	changed := Builtin()
	for i := range changed {
		changed[i].Description += " Changed."
	}
	restore := OverrideBuiltin(changed)
	defer restore()

	cases := []struct {
		name       string
		list       []contract.ToolSpec
		wantDigest string
	}{
		{"old set", old, oldDigest},
		{"this build's set", Builtin(), Digest(changed)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			digest, rest := Split(c.list)
			if digest != c.wantDigest || len(rest) != 0 {
				t.Fatalf("Split: digest %q and %d tools, want %q and none", digest, len(rest), c.wantDigest)
			}
			back, err := Join(digest, rest)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(back, c.list, sameSpec) {
				t.Fatalf("Join(%s) gave other tools than were split", digest)
			}
		})
	}
	restore()
	if Digest(Builtin()) != oldDigest {
		t.Fatal("restore did not bring this build's tools back")
	}
}

// sameSpec compares two tool specs field by field.
func sameSpec(a, b contract.ToolSpec) bool {
	return a.Name == b.Name && a.Description == b.Description && slices.Equal(a.Parameters, b.Parameters) &&
		a.Writes == b.Writes && a.Server == b.Server
}
