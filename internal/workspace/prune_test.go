package workspace

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/gitserver"
)

// TestPruneRemovesUnusedWorkspacesAndBoundsCaches: a workspace no tool used for keep_for goes
// and one used since stays; a dry run removes nothing; caches past the bound go least recently
// used first, the one a fetch just used never; a workspace whose lock is held stays whatever
// its age; a session whose cache went still pushes (the cache is fetched again).
func TestPruneRemovesUnusedWorkspacesAndBoundsCaches(t *testing.T) {
	srv := gitserver.Start(t, t.TempDir(), token)
	urlA, commitsA := origin(t, srv, "a", "one")
	urlB, commitsB := origin(t, srv, "b", "two")
	m := newManager(t, srv)
	ctx := context.Background()
	old := time.Now().Add(-30 * 24 * time.Hour)
	for _, s := range []struct {
		id  string
		src contract.Source
	}{{"old", contract.Source{Repo: urlA, Commit: commitsA[0]}}, {"fresh", contract.Source{Repo: urlB, Commit: commitsB[0]}},
		{"busy", contract.Source{Repo: urlA, Commit: commitsA[0]}}} {
		if _, err := m.Ensure(ctx, s.id, s.src); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"old", "busy"} {
		if err := os.Chtimes(filepath.Join(m.sessionDir(id), "ready"), old, old); err != nil {
			t.Fatal(err)
		}
	}
	unlock, err := lock(ctx, filepath.Join(m.sessionDir("busy"), "lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()

	dry, err := m.Prune(ctx, PruneOptions{KeepFor: 7 * 24 * time.Hour, DryRun: true})
	if err != nil || dry.Workspaces != 2 {
		t.Fatalf("dry run: %+v, %v; want 2 workspaces that would go", dry, err)
	}
	if _, err := os.Stat(m.Dir("old")); err != nil {
		t.Fatalf("the dry run removed a workspace: %v", err)
	}
	rep, err := m.Prune(ctx, PruneOptions{KeepFor: 7 * 24 * time.Hour})
	if err != nil || rep.Workspaces != 1 || rep.WorkspaceBytes == 0 {
		t.Fatalf("prune: %+v, %v; want the one unused, unlocked workspace removed", rep, err)
	}
	for id, want := range map[string]bool{"old": false, "fresh": true, "busy": true} {
		if _, err := os.Stat(m.Dir(id)); (err == nil) != want {
			t.Errorf("workspace %s present: %v, want %v", id, err == nil, want)
		}
	}

	// Cache a was used last by the Ensure of "busy", then b's is touched: a bound of one byte
	// removes a (the least recently used) first, then b.
	cacheA := filepath.Join(m.Root, "cache", digest(urlA)+".git")
	cacheB := filepath.Join(m.Root, "cache", digest(urlB)+".git")
	if err := os.Chtimes(filepath.Join(cacheA, "keel-used"), old, old); err != nil {
		t.Fatal(err)
	}
	left, n, _, err := m.boundCaches(1, cacheB, false)
	if err != nil || n != 1 || left == 0 {
		t.Fatalf("bounding the caches: left %d, removed %d, %v; want a's removed and b's kept", left, n, err)
	}
	if _, err := os.Stat(cacheA); err == nil {
		t.Error("the least recently used cache is still there")
	}
	if _, err := os.Stat(cacheB); err != nil {
		t.Error("the cache a fetch just used was removed")
	}

	// A session whose cache was pruned still pushes its changes.
	if err := os.WriteFile(filepath.Join(m.Dir("busy"), "NEW.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	unlock()
	br, err := m.Push(ctx, contract.PushRequest{SessionID: "busy", Source: contract.Source{Repo: urlA, Commit: commitsA[0]}, Message: "x", At: old})
	if err != nil || !br.Pushed {
		t.Errorf("pushing after the cache went: %+v, %v", br, err)
	}
}
