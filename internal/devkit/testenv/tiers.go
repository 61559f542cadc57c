package testenv

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/devkit/devserver"
)

// FullSuiteCommand runs every test, the ones against a real Temporal dev server and PostgreSQL
// included. It is the README's second line and what CI runs. The timeout is above go test's
// default of 10 minutes because a test binary is killed a minute after its timeout counted from
// its start, and on a fresh machine a package's TestMain first waits minutes for the builds.
const FullSuiteCommand = "go test -timeout 45m ./..."

// FastTierCommand runs the fast tier: unit, workflow and replay tests, with no server and no
// PostgreSQL. Every test that needs one skips there through Needs or Main.
const FastTierCommand = "go test -short ./..."

// BuildBound is how long a package's TestMain may take to build and start what its tests need
// (Keel's Temporal server, the temporal CLI, Keel's commands), apart from go test's -timeout,
// whose alarm starts only once the tests run. On a fresh 2-core machine the server's first
// build took 5 min 17 s and the CLI's 3.5 min, and other packages compete for the cores.
const BuildBound = 20 * time.Minute

// fastTierNote ends every skip message of the fast tier, so a reader learns how to run the test.
const fastTierNote = "the fast tier (-short) runs without servers and PostgreSQL; the full suite (" + FullSuiteCommand + ") runs it"

// Needs skips t in the fast tier: it needs what (a Temporal dev server, PostgreSQL), which only the
// full suite provides. Outside the fast tier it does nothing: a test never skips because what it
// needs is missing; it fails and says what was missing.
func Needs(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("needs %s: %s", what, fastTierNote)
	}
}

// Scope says which of a package's tests need what its TestMain prepares.
type Scope int

const (
	// SomeTests: the package also has tests that need no server; they run in the fast tier, and the
	// ones that need a server call Needs.
	SomeTests Scope = iota
	// EveryTest: every test of the package needs what setup prepares, so the fast tier runs none of
	// them.
	EveryTest
)

// Main is TestMain for a package whose tests need something built first: Keel's Temporal server,
// a pinned tool, Keel's own commands. Outside the fast tier it runs setup before m.Run, under
// BuildBound and outside go test's -timeout, so no test's time includes a build. The builds say
// so on stderr and wait for another package's build of the same thing instead of running their
// own (devserver.FindServer, devserver.InstallTool). The teardown setup returns runs after the
// tests. In the fast tier setup does not run; with EveryTest no test runs either, and the package
// says why.
func Main(m *testing.M, name string, scope Scope, setup func(ctx context.Context) (teardown func(), err error)) {
	flag.Parse()
	if testing.Short() {
		if scope == EveryTest {
			fmt.Fprintf(os.Stderr, "%s: every test here needs a Temporal dev server; %s\n", name, fastTierNote)
			if err := flag.Set("test.run", "^$"); err != nil {
				fmt.Fprintln(os.Stderr, name+": selecting no tests:", err)
				os.Exit(1)
			}
		}
		os.Exit(m.Run())
	}
	ctx, cancel := context.WithTimeout(context.Background(), BuildBound)
	start := time.Now()
	teardown, err := setup(ctx)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: preparing the tests (%s): %v\n", name, time.Since(start).Round(time.Second), err)
		os.Exit(1)
	}
	if d := time.Since(start); d > 10*time.Second {
		fmt.Fprintf(os.Stderr, "%s: ready for the tests after %s of builds and start-up\n", name, d.Round(time.Second))
	}
	code := m.Run()
	if teardown != nil {
		teardown()
	}
	os.Exit(code)
}

// PrebuildServer is a setup for Main that builds Keel's Temporal server only: for packages whose
// tests start dev servers of their own.
func PrebuildServer(ctx context.Context) (func(), error) {
	if _, err := devserver.FindServer(ctx, os.Stderr); err != nil {
		return nil, err
	}
	return nil, nil
}

// DevServer starts a dev server of Keel's Temporal server for one test, on a free loopback port
// with state in memory, and returns its client; the server stops when the test ends. It skips in
// the fast tier. The package's TestMain (Main) has built the server, so this takes seconds.
func DevServer(t testing.TB, ctx context.Context) client.Client {
	t.Helper()
	Needs(t, "a Temporal dev server")
	srv, err := devserver.Start(ctx, devserver.Options{Progress: os.Stderr})
	if err != nil {
		t.Fatalf("starting a Temporal dev server: %v", err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	return srv.Client()
}
