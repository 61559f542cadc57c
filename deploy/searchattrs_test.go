package deploy

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/contract"
)

// TestClusterRegistersEverySearchAttribute: the compose file and the native cluster script
// register every search attribute a session may start with, so a starter that runs before any
// worker (which registers them too) is not refused for a missing one.
func TestClusterRegistersEverySearchAttribute(t *testing.T) {
	var want []string
	for _, key := range contract.SearchAttributes {
		want = append(want, key.GetName()+":"+key.GetValueType().String())
	}
	slices.Sort(want)
	loop := regexp.MustCompile(`for sa in ([^;]*);`)
	for _, file := range []string{composeFile, "run-cluster.sh"} {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		m := loop.FindSubmatch(text)
		if m == nil {
			t.Fatalf("%s registers no search attributes (no `for sa in` loop)", file)
		}
		got := strings.Fields(string(m[1]))
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s registers %v, want %v", file, got, want)
		}
	}
}
