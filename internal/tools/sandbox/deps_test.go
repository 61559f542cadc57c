package sandbox

import (
	"os/exec"
	"strings"
	"testing"
)

// TestSandboxLinksLittle: a command's sandbox init runs in the worker's re-executed binary only
// after every package the sandbox imports has run its own initialisation, so whatever the sandbox
// links is paid again on every command. An import of the contract (and through it protobuf and
// Temporal's API) doubled the p50 of `true` (docs/benchmarks.md §6); only the standard library
// and these may be linked.
func TestSandboxLinksLittle(t *testing.T) {
	allowed := []string{
		"github.com/keelrun/keel/internal/tools/sandbox",
		"golang.org/x/sys/",
		"golang.org/x/net/bpf",
	}
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("listing the sandbox's dependencies: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if first, _, _ := strings.Cut(dep, "/"); !strings.Contains(first, ".") {
			continue // the standard library
		}
		ok := false
		for _, a := range allowed {
			ok = ok || strings.HasPrefix(dep, a)
		}
		if !ok {
			t.Errorf("the sandbox links %s", dep)
		}
	}
}
