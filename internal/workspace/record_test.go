package workspace

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/gitserver"
	"github.com/keelrun/keel/internal/store"
	"github.com/keelrun/keel/internal/tools/snapshot"
)

// TestRestoreMovesNoPackThroughALink: a recorded workspace whose .git/objects the model made a
// link to a host folder is restored elsewhere with the link as it was, and the fresh checkout's
// packs are not moved through it into the host folder.
func TestRestoreMovesNoPackThroughALink(t *testing.T) {
	srv := gitserver.Start(t, t.TempDir(), token)
	url, commits := origin(t, srv, "app", "one")
	st, err := store.OpenFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	host := func() *Manager {
		m := newManager(t, srv)
		m.States, m.Snapshots = st, snapshot.New(t.TempDir())
		return m
	}
	ctx := context.Background()
	src := contract.Source{Repo: url, Commit: commits[0]}
	a := host()
	ws, err := a.Ensure(ctx, "s", src)
	if err != nil {
		t.Fatal(err)
	}
	hostDir := t.TempDir()
	if err := os.Mkdir(filepath.Join(hostDir, "pack"), 0o755); err != nil {
		t.Fatal(err)
	}
	objects := filepath.Join(ws.Dir, ".git", "objects")
	if err := os.RemoveAll(objects); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(hostDir, objects); err != nil {
		t.Fatal(err)
	}
	m, err := a.Snapshots.Take("s", 1, ws.Dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := a.Fence(ctx, "s", time.Now(), "t")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Record(ctx, r, "s", 1, "c1", a.Snapshots, m); err != nil {
		t.Fatal(err)
	}
	got, err := host().Ensure(ctx, "s", src)
	if err != nil || got.Restored == nil {
		t.Fatalf("restore: %+v, %v", got, err)
	}
	if link, err := os.Readlink(filepath.Join(got.Dir, ".git", "objects")); err != nil || link != hostDir {
		t.Errorf("the restored .git/objects is %q, %v; want the link as recorded", link, err)
	}
	if names, _ := os.ReadDir(filepath.Join(hostDir, "pack")); len(names) > 0 {
		t.Errorf("the restore moved %d file(s) into the host folder the link names", len(names))
	}
	if b, _ := os.ReadFile(filepath.Join(got.Dir, "MARKER")); string(b) != "one" {
		t.Errorf("the restored MARKER is %q", b)
	}
}
