package devserver

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// syncBuffer is a progress writer two goroutines can share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestCachedBuildBuildsOnce: two callers that want the same tool at once run one build; the
// second says it waits for the first and gets the first's binary; a later caller finds it built.
func TestCachedBuildBuildsOnce(t *testing.T) {
	t.Setenv("KEEL_CACHE_DIR", t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var builds atomic.Int32
	release := make(chan struct{})
	build := func(_ context.Context, out string) error {
		builds.Add(1)
		<-release
		return os.WriteFile(out, []byte("#!/bin/sh\n"), 0o755)
	}
	var first, second syncBuffer
	type result struct {
		bin string
		err error
	}
	done := make(chan result, 2)
	go func() {
		bin, err := cachedBuild(ctx, "tool-v1/tool", "the tool", "a moment", &first, build)
		done <- result{bin, err}
	}()
	waitUntil(t, func() bool { return builds.Load() == 1 })
	go func() {
		bin, err := cachedBuild(ctx, "tool-v1/tool", "the tool", "a moment", &second, build)
		done <- result{bin, err}
	}()
	waitUntil(t, func() bool { return strings.Contains(second.String(), "waiting for another process") })
	close(release)
	a, b := <-done, <-done
	if a.err != nil || b.err != nil || a.bin != b.bin {
		t.Fatalf("results %+v and %+v: want one binary, no errors", a, b)
	}
	if n := builds.Load(); n != 1 {
		t.Fatalf("%d builds ran, want 1", n)
	}
	if !strings.Contains(first.String(), "building the tool into "+a.bin) || !strings.Contains(first.String(), "built the tool in") {
		t.Errorf("the building caller said %q", first.String())
	}
	if bin, err := cachedBuild(ctx, "tool-v1/tool", "the tool", "a moment", nil, build); err != nil || bin != a.bin || builds.Load() != 1 {
		t.Fatalf("a later caller: %q, %v, %d builds; want the cached binary", bin, err, builds.Load())
	}
}

// TestCachedBuildFailureLeavesNothing: a failed build reports what was being built and leaves no
// file that a later caller would take for a finished build.
func TestCachedBuildFailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("KEEL_CACHE_DIR", dir)
	_, err := cachedBuild(context.Background(), "tool", "the tool", "a moment", nil, func(_ context.Context, out string) error {
		if err := os.WriteFile(out, []byte("half"), 0o755); err != nil {
			return err
		}
		return errors.New("compiler crashed")
	})
	if err == nil || !strings.Contains(err.Error(), "building the tool: compiler crashed") {
		t.Fatalf("error %v, want it to name the build and its cause", err)
	}
	for _, p := range []string{"tool", "tool.tmp"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
			t.Errorf("%s is left in the cache after a failed build", p)
		}
	}
}

func TestInstallToolNeedsVersion(t *testing.T) {
	t.Setenv("KEEL_CACHE_DIR", t.TempDir())
	for _, module := range []string{"github.com/temporalio/cli/cmd/temporal", "github.com/temporalio/cli/cmd/temporal@"} {
		if _, err := InstallTool(context.Background(), module, nil); err == nil || !strings.Contains(err.Error(), "needs an @version") {
			t.Errorf("%s: error %v, want one asking for the version", module, err)
		}
	}
}

// waitUntil polls cond until it holds, failing the test after ten seconds.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("the condition never held")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
