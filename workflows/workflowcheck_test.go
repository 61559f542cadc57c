package workflows_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// workflowcheckModule is the checker version the project pins.
const workflowcheckModule = "go.temporal.io/sdk/contrib/tools/workflowcheck@v0.6.0"

// badPackage holds a deliberately nondeterministic workflow; testdata keeps it out of ./...
const badPackage = "./testdata/badworkflow"

// TestWorkflowcheck runs Temporal's determinism checker over the workflows package with the
// project's configuration and fails on any finding. The same run also checks a deliberately bad
// workflow, which must be reported, so a checker that silently checks nothing fails the test too.
func TestWorkflowcheck(t *testing.T) {
	if testing.Short() {
		t.Skip("workflowcheck type-checks the SDK and takes about half a minute")
	}
	bin := findWorkflowcheck(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-config", "../workflowcheck.config.yaml", "./...", badPackage)
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

// findWorkflowcheck returns the checker from PATH or GOPATH/bin, or installs the pinned version
// into a temporary GOBIN. It skips only when that install fails for lack of network.
func findWorkflowcheck(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("workflowcheck"); err == nil {
		return p
	}
	if gopath, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(gopath)), "bin", "workflowcheck")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	gobin := t.TempDir()
	install := exec.Command("go", "install", workflowcheckModule)
	install.Env = append(os.Environ(), "GOBIN="+gobin)
	if out, err := install.CombinedOutput(); err != nil {
		if offline(string(out)) {
			t.Skipf("workflowcheck is not installed and installing it needs the network: %s", out)
		}
		t.Fatalf("installing %s: %v\n%s", workflowcheckModule, err, out)
	}
	return filepath.Join(gobin, "workflowcheck")
}

// offline recognises a go install that failed because the module proxy could not be reached.
func offline(out string) bool {
	for _, s := range []string{"dial tcp", "no such host", "connection refused", "network is unreachable", "i/o timeout", "TLS handshake timeout"} {
		if strings.Contains(out, s) {
			return true
		}
	}
	return false
}
