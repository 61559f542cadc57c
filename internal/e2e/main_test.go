// Package e2e runs Keel's starter as a real process against a real Temporal dev server, with the
// fake gateway over HTTP and real tools in temporary directories.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/keelrun/keel/internal/devkit/devserver"
	"github.com/keelrun/keel/internal/devkit/testenv"
)

var (
	env     *testenv.Env
	starter string
	// temporalCLI is the temporal command a person pastes the Web UI's lines into; setup links it
	// beside the starter as "temporal".
	temporalCLI string
)

// commands are Keel's commands the tests run as processes; TestMain builds them all, so a test's
// env.Build returns at once.
var commands = []string{"./starter", "./worker", "./internal/devkit/recworker"}

func TestMain(m *testing.M) {
	if listen := os.Getenv(forwardListenEnv); listen != "" {
		// This binary runs as the frontend-only starter's forwarder (TestFrontendOnlyWatcher).
		forward(listen, os.Getenv(forwardSocketEnv))
		return
	}
	testenv.Main(m, "e2e", testenv.EveryTest, setup)
}

// setup starts the package's dev server (building Keel's Temporal server first if no build is
// cached), builds Keel's commands, installs tmux, zsh and bash-completion if they are missing and
// finds the temporal CLI (building the pinned one if needed), the CLI alongside the rest because
// its first build takes minutes.
func setup(ctx context.Context) (func(), error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cli := make(chan error, 1)
	go func() {
		var err error
		temporalCLI, err = devserver.FindCLI(ctx, os.Stderr)
		cli <- err
	}()
	err := startEnv(ctx)
	if err == nil {
		// The terminal tests type into a shell through tmux, a system package no test can build.
		err = testenv.EnsureCommand(ctx, "tmux", "tmux")
	}
	if err == nil {
		// The completion test drives zsh too, and bash with the library cobra's script needs.
		err = testenv.EnsureCommand(ctx, "zsh", "zsh")
	}
	if err == nil {
		err = testenv.EnsureFile(ctx, bashCompletion, "bash-completion")
	}
	if err == nil {
		// The frontend-only watcher runs in a network namespace of its own (ip netns).
		err = testenv.EnsureCommand(ctx, "ip", "iproute2")
	}
	if err != nil {
		cancel()
	}
	if cliErr := <-cli; err == nil && cliErr != nil {
		err = fmt.Errorf("finding the temporal CLI: %w", cliErr)
	}
	if err == nil {
		// Beside the starter, under the name a pasted line calls it by.
		err = os.Symlink(temporalCLI, filepath.Join(filepath.Dir(starter), "temporal"))
	}
	if err != nil {
		if env != nil {
			env.Close()
		}
		return nil, err
	}
	return env.Close, nil
}

// startEnv starts the dev server and builds Keel's commands.
func startEnv(ctx context.Context) error {
	var err error
	if env, err = testenv.Start(ctx); err != nil {
		return fmt.Errorf("starting the dev server: %w", err)
	}
	if err := env.BuildAll(ctx, commands...); err != nil {
		return err
	}
	starter, err = env.Build("./starter")
	return err
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
