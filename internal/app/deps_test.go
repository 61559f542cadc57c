package app

import (
	"os/exec"
	"strings"
	"testing"
)

// TestProductionLinksNoDevKit: the programs an operator deploys link nothing of the dev kit (the
// fake gateway, the dev server launcher, the demo workspace), which only the starter's demo, dev
// and run --dev wire in.
func TestProductionLinksNoDevKit(t *testing.T) {
	for _, program := range []string{"../../worker", "../../cmd/slackbot", "../../cmd/githubbot"} {
		out, err := exec.Command("go", "list", "-deps", program).CombinedOutput()
		if err != nil {
			t.Fatalf("listing the dependencies of %s: %v\n%s", program, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.Contains(dep, "/internal/devkit/") {
				t.Errorf("%s links %s", program, dep)
			}
		}
	}
}
