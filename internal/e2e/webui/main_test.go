// Package webui checks what the Temporal Web UI shows of Keel's sessions, through a headless
// Chromium against a real dev server with its UI on, the real starter and its worker. It is a
// package of its own so that no other end-to-end test waits for Chromium's install.
package webui

import (
	"context"
	"fmt"
	"net"
	"os"
	"testing"

	"github.com/keelrun/keel/internal/devkit/devserver"
	"github.com/keelrun/keel/internal/devkit/testenv"
)

var (
	env         *testenv.Env
	starter     string
	temporalCLI string
	// uiPort is the port the dev server serves its Web UI on.
	uiPort int
)

func TestMain(m *testing.M) {
	testenv.Main(m, "webui", testenv.EveryTest, setup)
}

// setup installs Chromium if it is missing, starts a dev server with its Web UI, builds the
// starter and finds the temporal CLI.
func setup(ctx context.Context) (func(), error) {
	if err := testenv.EnsureCommand(ctx, "chromium", "chromium"); err != nil {
		return nil, err
	}
	cli, err := devserver.FindCLI(ctx, os.Stderr)
	if err != nil {
		return nil, fmt.Errorf("finding the temporal CLI: %w", err)
	}
	temporalCLI = cli
	if uiPort, err = freePort(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "keel-webui-")
	if err != nil {
		return nil, err
	}
	srv, err := devserver.Start(ctx, devserver.Options{UIPort: uiPort, Progress: os.Stderr})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting the dev server with its Web UI: %w", err)
	}
	env = &testenv.Env{Server: srv, Dir: dir}
	if err := env.BuildAll(ctx, "./starter"); err != nil {
		env.Close()
		return nil, err
	}
	if starter, err = env.Build("./starter"); err != nil {
		env.Close()
		return nil, err
	}
	return env.Close, nil
}

// freePort is a loopback port nothing listens on right now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port for the Web UI: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
