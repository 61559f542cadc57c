package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"
)

// PruneOptions say what Prune keeps.
type PruneOptions struct {
	// KeepFor removes the workspaces no tool has used for longer; 0 keeps them all.
	KeepFor time.Duration
	// CacheBytes bounds the repositories' caches together; the least recently used go first.
	// 0 bounds nothing.
	CacheBytes int64
	// DryRun says what would go and removes nothing.
	DryRun bool
}

// PruneReport is what Prune removed, or would remove.
type PruneReport struct {
	// Workspaces and WorkspaceBytes count the sessions' workspaces removed and what they took.
	Workspaces     int
	WorkspaceBytes int64
	// Caches and CacheBytes count the repositories' caches removed and what they took;
	// CachesLeft is what the caches left take.
	Caches     int
	CacheBytes int64
	CachesLeft int64
}

// Prune removes the workspaces no tool has used for KeepFor (a session that ended long ago; one
// that comes back gets a fresh checkout of its commit and is told so) and, least recently used
// first, the repositories' caches past CacheBytes (a later session fetches its repository
// again). A workspace or cache in use (its lock held) is never removed. Nothing here follows a
// link: what the sessions wrote is removed as it lies.
func (m *Manager) Prune(ctx context.Context, o PruneOptions) (PruneReport, error) {
	var rep PruneReport
	if o.KeepFor > 0 {
		dirs, err := os.ReadDir(filepath.Join(m.Root, "sessions"))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return rep, fmt.Errorf("listing the workspaces: %w", err)
		}
		for _, d := range dirs {
			sdir := filepath.Join(m.Root, "sessions", d.Name())
			used, err := os.Lstat(filepath.Join(sdir, "ready"))
			if !d.IsDir() || err != nil || time.Since(used.ModTime()) < o.KeepFor {
				continue
			}
			size := treeSize(sdir)
			if !o.DryRun && !removeUnlocked(filepath.Join(sdir, "lock"), sdir) {
				continue
			}
			rep.Workspaces++
			rep.WorkspaceBytes += size
		}
	}
	left, n, bytes, err := m.boundCaches(o.CacheBytes, "", o.DryRun)
	rep.Caches, rep.CacheBytes, rep.CachesLeft = n, bytes, left
	return rep, err
}

// boundCaches removes the least recently used caches, never keep nor one whose lock is held,
// until the caches take at most max bytes (0: no bound). It returns what is left, and how many
// caches went and their size.
func (m *Manager) boundCaches(max int64, keep string, dryRun bool) (left int64, removed int, bytes int64, err error) {
	dir := filepath.Join(m.Root, "cache")
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, 0, 0, fmt.Errorf("listing the caches: %w", err)
	}
	type cache struct {
		path string
		size int64
		used time.Time
	}
	var caches []cache
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if !e.IsDir() || filepath.Ext(p) != ".git" {
			continue
		}
		used := time.Time{}
		if fi, err := os.Lstat(filepath.Join(p, "keel-used")); err == nil {
			used = fi.ModTime()
		}
		c := cache{path: p, size: treeSize(p), used: used}
		caches = append(caches, c)
		left += c.size
	}
	if max <= 0 {
		return left, 0, 0, nil
	}
	sort.Slice(caches, func(i, j int) bool { return caches[i].used.Before(caches[j].used) })
	for _, c := range caches {
		if left <= max {
			break
		}
		if c.path == keep {
			continue
		}
		if !dryRun && !removeUnlocked(c.path+".lock", c.path) {
			continue
		}
		left -= c.size
		removed++
		bytes += c.size
	}
	return left, removed, bytes, nil
}

// removeUnlocked removes dir when the lock at lockPath is free, holding it meanwhile; it says
// whether it did. A lock held means the directory is in use: it stays.
func removeUnlocked(lockPath, dir string) bool {
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return false
	}
	// Renamed aside first, so no one finds half a directory under its name.
	gone := filepath.Join(filepath.Dir(dir), ".gone-"+randomHex())
	if os.Rename(dir, gone) != nil {
		return false
	}
	_ = os.RemoveAll(gone)
	return true
}

// treeSize is the bytes of the regular files under dir, links not followed.
func treeSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// touch marks a workspace's or cache's file as used now (Prune's clock).
func touch(path string) {
	now := time.Now()
	if os.Chtimes(path, now, now) != nil {
		if f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|syscall.O_NOFOLLOW, 0o600); err == nil {
			_ = f.Close()
		}
	}
}
