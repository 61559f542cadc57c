package mcp

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/flakymcp/flaky"
	"github.com/keelrun/keel/internal/tools/toolspec/feedbacktest"
)

// buildFlaky compiles the flaky MCP server command into a temporary directory.
func buildFlaky(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "flakymcp")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/keelrun/keel/internal/devkit/flakymcp").CombinedOutput()
	if err != nil {
		t.Fatalf("building the flaky server: %v\n%s", err, out)
	}
	return bin
}

// serveFlaky serves an in-process flaky server over streamable HTTP on loopback and returns its
// URL and call counts.
func serveFlaky(t *testing.T) (string, *flaky.Counts) {
	t.Helper()
	counts := &flaky.Counts{}
	srv := httptest.NewServer(flaky.Handler(flaky.NewServer(counts)))
	t.Cleanup(srv.Close)
	return srv.URL, counts
}

// deadURL is a loopback URL on which nothing listens.
func deadURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/mcp"
}

// newManager returns a manager that is closed when the test ends.
func newManager(t *testing.T, servers ...ServerConfig) *Manager {
	t.Helper()
	m := NewManager(servers)
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("closing the manager: %v", err)
		}
	})
	return m
}

// testCtx bounds a test's calls so that a hang fails instead of stalling the run.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// assertFeedback checks an error result: IsError set, wording rules kept, and the given phrases
// present.
func assertFeedback(t *testing.T, res contract.ToolResult, phrases ...string) {
	t.Helper()
	if !res.IsError {
		t.Fatalf("want an error result, got %+v", res)
	}
	feedbacktest.Check(t, res.Content)
	for _, p := range phrases {
		if !strings.Contains(res.Content, p) {
			t.Errorf("feedback %q does not contain %q", res.Content, p)
		}
	}
}

// newHTTPServer serves h on loopback; the test may close it early.
func newHTTPServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}
