package toolspec

import (
	"embed"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/keelrun/keel/internal/contract"
)

// releasedDir holds every built-in tool set a release has offered, one file per set named by its
// digest and holding the JSON that digest is taken of. A turn started by one release may run on a
// worker of another (a rolling deploy, a replay of its history): it names its tools by digest, and
// the worker resolves that digest here instead of from the text its own code has. The directory is
// append-only: a changed tool text is a new file, never an edit of an old one (TestReleasedSets).
const releasedDir = "released"

//go:embed released/*.json
var releasedFS embed.FS

// released maps a digest to its tool set; releasedLens are the lengths of those sets, in ascending
// order, so Split tries them in the same order (the longest first) on every worker.
var released, releasedLens = loadReleased()

// loadReleased reads the embedded sets. A file whose content does not match its name is a broken
// build, not something a running session could recover from, so it panics.
func loadReleased() (map[string][]contract.ToolSpec, []int) {
	entries, err := releasedFS.ReadDir(releasedDir)
	if err != nil {
		panic(fmt.Sprintf("reading the released tool sets: %v", err))
	}
	sets := make(map[string][]contract.ToolSpec, len(entries))
	var lens []int
	for _, e := range entries {
		digest := strings.TrimSuffix(e.Name(), ".json")
		specs, err := readReleased(e.Name())
		if err != nil {
			panic(err.Error())
		}
		if len(specs) == 0 {
			panic(fmt.Sprintf("released tool set %s is empty", digest))
		}
		if got := Digest(specs); got != digest {
			panic(fmt.Sprintf("released tool set %s holds the tools of %s: a released set was edited", digest, got))
		}
		sets[digest] = specs
		if !slices.Contains(lens, len(specs)) {
			lens = append(lens, len(specs))
		}
	}
	slices.Sort(lens)
	return sets, lens
}

// readReleased decodes one embedded set.
func readReleased(name string) ([]contract.ToolSpec, error) {
	b, err := releasedFS.ReadFile(path.Join(releasedDir, name))
	if err != nil {
		return nil, fmt.Errorf("reading the released tool set %s: %w", name, err)
	}
	var specs []contract.ToolSpec
	if err := json.Unmarshal(b, &specs); err != nil {
		return nil, fmt.Errorf("decoding the released tool set %s: %w", name, err)
	}
	return specs, nil
}

// resolve returns a copy of the built-in tools a digest names: this build's, or those of any
// released set.
func resolve(digest string) ([]contract.ToolSpec, bool) {
	if digest == builtinDigest() {
		return Builtin(), true
	}
	specs, ok := released[digest]
	if !ok {
		return nil, false
	}
	return cloneSpecs(specs), true
}

// cloneSpecs copies a tool list deeply enough that a caller's edits never reach the shared sets.
func cloneSpecs(specs []contract.ToolSpec) []contract.ToolSpec {
	out := slices.Clone(specs)
	for i := range out {
		out[i].Parameters = slices.Clone(out[i].Parameters)
	}
	return out
}

// preListing is the released set that sessions started before the session listed its tools by an
// activity are offered (their history holds no tool list of their own): frozen at the set offered
// when the sets became data, so no later release changes what such a session sees.
const preListing = "c1dcfb13573f23e18239895fa0547c8b"

// PreListing returns the built-in tools of a session whose history names no tool list (see
// preListing).
func PreListing() []contract.ToolSpec {
	specs, ok := resolve(preListing)
	if !ok {
		panic("the released tool set " + preListing + " is missing") // TestReleasedSets keeps it
	}
	return specs
}
