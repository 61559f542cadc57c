package workflows_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/devkit/devserver"
	"github.com/keelrun/keel/internal/devkit/testenv"
)

// workflowcheckModule is the checker version the project pins.
const workflowcheckModule = "go.temporal.io/sdk/contrib/tools/workflowcheck@v0.6.0"

// workflowcheck is the checker's binary, built once per machine by TestMain.
var workflowcheck string

// TestMain builds the pinned checker before the tests run (outside the fast tier, which skips
// TestWorkflowcheck), so TestWorkflowcheck's time is the check's alone.
func TestMain(m *testing.M) {
	testenv.Main(m, "workflows", testenv.SomeTests, func(ctx context.Context) (func(), error) {
		var err error
		workflowcheck, err = devserver.InstallTool(ctx, workflowcheckModule, os.Stderr)
		return nil, err
	})
}

// badPackage holds a deliberately nondeterministic workflow; testdata keeps it out of ./...
const badPackage = "./testdata/badworkflow"

// TestWorkflowcheck runs Temporal's determinism checker over the workflows package with the
// project's configuration and fails on any finding. The same run also checks a deliberately bad
// workflow, which must be reported, so a checker that silently checks nothing fails the test too.
func TestWorkflowcheck(t *testing.T) {
	if testing.Short() {
		t.Skip("workflowcheck type-checks the SDK and takes about half a minute")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, workflowcheck, "-config", "../workflowcheck.config.yaml", "./...", badPackage)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running workflowcheck: %v\n%s", err, out.String())
	}

	var ours, bad []string
	for _, finding := range findings(out.String()) {
		if strings.Contains(finding, "testdata/badworkflow") {
			bad = append(bad, finding)
		} else {
			ours = append(ours, finding)
		}
	}
	for _, l := range ours {
		t.Errorf("workflowcheck: %s", l)
	}
	if !containsLine(bad, "time.Now") {
		t.Errorf("workflowcheck did not flag time.Now in %s; its output:\n%s", badPackage, out.String())
	}
}

// findings splits the checker's output into findings: each starts on an unindented line, and the
// indented lines after it explain it.
func findings(out string) []string {
	var res []string
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.TrimSpace(line) == "":
		case strings.HasPrefix(line, " ") && len(res) > 0:
			res[len(res)-1] += "\n" + line
		default:
			res = append(res, line)
		}
	}
	return res
}

func containsLine(lines []string, sub string) bool {
	for _, l := range lines {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}
