// Package e2e runs Keel's starter as a real process against a real Temporal dev server, with the
// fake gateway over HTTP and real tools in temporary directories.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/devkit/testenv"
)

var (
	env     *testenv.Env
	starter string
)

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	var err error
	env, err = testenv.Start(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: starting the dev server:", err)
		os.Exit(1)
	}
	starter, err = env.Build("./starter")
	if err != nil {
		env.Close()
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	code := m.Run()
	env.Close()
	os.Exit(code)
}

// startStarter starts the starter with args and the test's environment.
func startStarter(t *testing.T, extraEnv []string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(starter, args...)
	cmd.Env = env.StarterEnv(t, extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the starter: %v", err)
	}
	return cmd, &stdout, &stderr
}

// runStarter runs the starter to the end.
func runStarter(t *testing.T, extraEnv []string, args ...string) testenv.Run {
	t.Helper()
	cmd, stdout, stderr := startStarter(t, extraEnv, args...)
	r, err := testenv.Finish(cmd, stdout, stderr)
	if err != nil {
		t.Fatalf("starter %v: %v\nstderr:\n%s", args, err, r.Stderr)
	}
	return r
}
