package app

import (
	"os/exec"
	"slices"
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

// TestWorkerLinksNoBot: the worker posts escalation notices (escalation's notifiers) and receives
// no answers, so it links neither bot, nor the session client the bots answer through, nor the
// HTTP server frame the bots run in. A notifier that reached for any of them would put a bot's
// code and its dependencies into every worker.
func TestWorkerLinksNoBot(t *testing.T) {
	const module = "github.com/keelrun/keel/"
	banned := []string{"internal/githubbot", "internal/slackbot", "internal/session", "internal/program"}
	out, err := exec.Command("go", "list", "-deps", "../../worker").CombinedOutput()
	if err != nil {
		t.Fatalf("listing the dependencies of the worker: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, module+"escalation") {
		t.Fatalf("the worker does not link escalation, so this test checks nothing:\n%s", out)
	}
	for _, b := range banned {
		if slices.Contains(deps, module+b) {
			t.Errorf("the worker links %s", module+b)
		}
	}
}

// TestGoLoopLinksNoKeel: the plain Go agent loop the turn-cost benchmark measures Keel against
// (internal/devkit/goloop) links no package of this module, so nothing of Keel's runs in the
// baseline and the comparison holds.
func TestGoLoopLinksNoKeel(t *testing.T) {
	const module = "github.com/keelrun/keel/"
	out, err := exec.Command("go", "list", "-deps", "../devkit/goloop").CombinedOutput()
	if err != nil {
		t.Fatalf("listing the dependencies of the loop: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "go.temporal.io/sdk/workflow") {
		t.Fatalf("the loop does not link the Temporal SDK, so this test checks nothing:\n%s", out)
	}
	for _, d := range deps {
		if strings.HasPrefix(d, module) && d != module+"internal/devkit/goloop" {
			t.Errorf("the loop links %s", d)
		}
	}
}
