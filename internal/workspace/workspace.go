// Package workspace materializes a session's workspace from a git repository at one exact commit.
//
// A worker keeps, under its workspace root, one bare object cache per repository (cache/) and one
// private workspace per session (sessions/). The first session on a repository fetches it into the
// cache; later ones fetch only what the cache lacks. Each session's workspace is a repository of
// its own that shares nothing with the cache (the cache's packs are copied in, so nothing the
// session does reaches the cache or another session), checked out at the commit.
//
// Git runs here, outside the sandbox, on a repository someone else wrote. Everything it is told
// comes from the command line and an environment built from nothing (git.go): no hook, filter
// driver, LFS smudge, fsmonitor or submodule runs or is fetched, no configuration of the worker's
// user is read, and the token that fetches goes in the environment of the fetching git alone, never
// into a file, the workspace or a command the model runs. A symlink in the tree that leads out of
// the workspace is checked out as a plain file holding its target's text.
package workspace

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/store"
	"github.com/keelrun/keel/internal/tools/snapshot"
)

// Manager materializes workspaces under Root.
type Manager struct {
	// Root holds the caches and the workspaces; it must not be inside any work directory.
	Root string
	// GitHubURL is the base URL of the GitHub a repository written owner/name belongs to, as
	// contract.GitHubURL accepts it; empty means contract.DefaultGitHubURL.
	GitHubURL string
	// Token, when set, is sent as HTTP basic auth (x-access-token, as GitHub's app and personal
	// tokens take it) to TokenHost's https URLs, and to its plain http URLs on loopback only.
	Token string
	// TokenHost is the host (host or host:port) the token is for; empty means GitHubURL's host.
	TokenHost string
	// Git is the git binary; empty means "git" on PATH.
	Git string
	// NoPush keeps sessions' changes on the worker: Push reports NotePushOff and pushes nothing.
	NoPush bool
	// CacheBytes bounds the repositories' caches together: after a fetch, the least recently
	// used other caches go until they fit. 0 bounds nothing.
	CacheBytes int64
	// States, when set, is Keel's store, where each workspace's state is recorded after every
	// tool result that may have written (Record) and restored from by any worker whose copy is
	// missing or older (Ensure). nil keeps workspaces on this worker only.
	States store.Workspaces
	// Snapshots is the worker's snapshot store, through which a restore writes the recorded
	// files; a restore needs it.
	Snapshots *snapshot.Store
	// RecordBytes bounds the files a recorded workspace holds (the repository's packs aside); a
	// workspace over it is recorded as missing. 0 bounds nothing.
	RecordBytes int64
}

// Workspace is a materialized workspace.
type Workspace struct {
	// Dir is the session's work directory.
	Dir string
	// Commit is the commit it was checked out at.
	Commit string
	// Made is true when this call materialized the workspace; Fetched when the cache had to
	// fetch from the origin for it.
	Made, Fetched bool
	// Flattened lists the symlinks that led out of the workspace, checked out as plain files.
	Flattened []string
	// Restored, when set, says the workspace was restored from a record in the store rather
	// than checked out at the commit.
	Restored *Restored
}

// Dir is where a session's workspace lives on this worker, whether or not it exists yet.
func (m *Manager) Dir(sessionID string) string {
	return filepath.Join(m.sessionDir(sessionID), "work")
}

func (m *Manager) sessionDir(sessionID string) string {
	return filepath.Join(m.Root, "sessions", digest(sessionID))
}

// Ensure returns the session's workspace, making it when this worker has none or its copy is
// older than the store's newest record (another worker went on with the session): an up-to-date
// copy is the session's own, as its tools left it, and is never checked out again. A workspace
// is made from the store's newest record of it when there is one, else from the record src.From
// names (a fork), else from a checkout of the commit. Two calls for one session at once make it
// once. A record that cannot be restored is a *RestoreError: the session must not go on from
// other files than its transcript says.
func (m *Manager) Ensure(ctx context.Context, sessionID string, src contract.Source) (Workspace, error) {
	if err := src.Check(); err != nil {
		return Workspace{}, fmt.Errorf("checking the session's source: %w", err)
	}
	sdir := m.sessionDir(sessionID)
	if err := os.MkdirAll(sdir, 0o700); err != nil {
		return Workspace{}, fmt.Errorf("making the session's directory: %w", err)
	}
	unlock, err := lock(ctx, filepath.Join(sdir, "lock"))
	if err != nil {
		return Workspace{}, err
	}
	defer unlock()
	work := filepath.Join(sdir, "work")
	latest, err := m.latest(ctx, sessionID)
	if err != nil {
		return Workspace{}, err
	}
	if commit, err := os.ReadFile(filepath.Join(sdir, "ready")); err == nil && (latest == nil || matches(sdir, latest.Seq)) {
		touch(filepath.Join(sdir, "ready"))
		return Workspace{Dir: work, Commit: strings.TrimSpace(string(commit))}, nil
	}
	rec := latest
	if rec == nil {
		if rec, err = m.from(ctx, src); err != nil {
			return Workspace{}, err
		}
	}
	var ws Workspace
	if rec != nil {
		ws, err = m.restore(ctx, src, *rec, sdir)
		ws.Restored = &Restored{Turn: rec.Turn, CallID: rec.CallID, Session: rec.Session, Own: rec == latest}
	} else {
		ws, err = m.materialize(ctx, src, sdir)
	}
	if err != nil {
		return Workspace{}, err
	}
	// A copy older than the record goes: its files are not the session's any more.
	_ = os.Remove(filepath.Join(sdir, "ready"))
	_ = os.Remove(filepath.Join(sdir, recordedMark))
	if err := os.RemoveAll(work); err != nil {
		return Workspace{}, fmt.Errorf("removing the outdated workspace: %w", err)
	}
	if err := os.Rename(ws.Dir, work); err != nil {
		return Workspace{}, fmt.Errorf("putting the workspace in place: %w", err)
	}
	ws.Dir, ws.Made = work, true
	if latest != nil {
		if err := os.WriteFile(filepath.Join(sdir, recordedMark), []byte(strconv.FormatInt(latest.Seq, 10)), 0o600); err != nil {
			return Workspace{}, fmt.Errorf("marking the workspace restored: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(sdir, "ready"), []byte(ws.Commit+"\n"), 0o600); err != nil {
		return Workspace{}, fmt.Errorf("marking the workspace ready: %w", err)
	}
	return ws, nil
}

// materialize fetches src into the cache and makes a workspace of it in a fresh directory in sdir.
func (m *Manager) materialize(ctx context.Context, src contract.Source, sdir string) (Workspace, error) {
	origin, err := m.origin(src.Repo)
	if err != nil {
		return Workspace{}, err
	}
	g, err := m.git()
	if err != nil {
		return Workspace{}, err
	}
	cache, commit, fetched, err := m.fetch(ctx, g, origin, src)
	if err != nil {
		return Workspace{}, err
	}
	if fetched && m.CacheBytes > 0 {
		if _, _, _, err := m.boundCaches(m.CacheBytes, cache, false); err != nil {
			return Workspace{}, fmt.Errorf("bounding the caches: %w", err)
		}
	}
	// A leftover of a materialization cut short is removed, never reused.
	old, _ := filepath.Glob(filepath.Join(sdir, "work.*"))
	for _, o := range old {
		_ = os.RemoveAll(o)
	}
	tmp := filepath.Join(sdir, "work."+randomHex())
	if err := checkout(ctx, g, cache, commit, tmp); err != nil {
		_ = os.RemoveAll(tmp)
		return Workspace{}, fmt.Errorf("checking out %s at %s: %w", origin, commit, err)
	}
	flat, err := flattenEscapingLinks(ctx, g, tmp)
	if err != nil {
		_ = os.RemoveAll(tmp)
		return Workspace{}, fmt.Errorf("checking the symlinks of %s at %s: %w", origin, commit, err)
	}
	return Workspace{Dir: tmp, Commit: commit, Fetched: fetched, Flattened: flat}, nil
}

// origin is the URL the repository repo is fetched from and pushed to: owner/name is a
// repository of the worker's GitHub (GitHubURL).
func (m *Manager) origin(repo string) (string, error) {
	return contract.RepoURL(repo, m.GitHubURL)
}

// git is the manager's git runner, with its empty home made.
func (m *Manager) git() (git, error) {
	bin := m.Git
	if bin == "" {
		bin = "git"
	}
	home := filepath.Join(m.Root, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return git{}, fmt.Errorf("making git's empty home: %w", err)
	}
	return git{bin: bin, home: home}, nil
}

// fetch brings the commit src names into the repository's cache, fetching from the origin only
// what the cache lacks, and returns the cache and the commit. Each commit a session used is kept
// by a ref of its own (refs/keel/commits/SHA), so it stays in the cache.
func (m *Manager) fetch(ctx context.Context, g git, origin string, src contract.Source) (cache, commit string, fetched bool, err error) {
	cache = filepath.Join(m.Root, "cache", digest(origin)+".git")
	if err := os.MkdirAll(filepath.Dir(cache), 0o700); err != nil {
		return "", "", false, fmt.Errorf("making the cache directory: %w", err)
	}
	unlock, err := lock(ctx, cache+".lock")
	if err != nil {
		return "", "", false, err
	}
	defer unlock()
	if err := m.initCache(ctx, g, cache); err != nil {
		return "", "", false, err
	}
	auth := m.auth(origin)
	has := func(c string) bool {
		_, err := g.run(ctx, cache, nil, "cat-file", "-e", c+"^{commit}")
		return err == nil
	}
	commit = src.Commit
	switch {
	case commit != "" && has(commit):
	case commit != "":
		fetched = true
		// Servers that allow a commit in a want (GitHub, protocol v2) send just its history;
		// others send their branches and tags, which hold it if it is reachable at all.
		if _, err := g.run(ctx, cache, auth, "fetch", "--no-tags", "--quiet", "--", origin, commit); err != nil || !has(commit) {
			if _, err2 := g.run(ctx, cache, auth, "fetch", "--no-tags", "--quiet", "--", origin,
				"+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"); err2 != nil {
				return "", "", false, fmt.Errorf("fetching %s: %w", origin, errors.Join(err, err2))
			}
			if !has(commit) {
				return "", "", false, fmt.Errorf("commit %s is not in %s", commit, origin)
			}
		}
	default:
		fetched = true
		if _, err := g.run(ctx, cache, auth, "fetch", "--no-tags", "--quiet", "--", origin, "+"+src.Ref+":refs/keel/fetched"); err != nil {
			return "", "", false, fmt.Errorf("fetching %s of %s: %w", src.Ref, origin, err)
		}
		out, err := g.run(ctx, cache, nil, "rev-parse", "--verify", "--end-of-options", "refs/keel/fetched^{commit}")
		if err != nil {
			return "", "", false, fmt.Errorf("resolving %s of %s: %w", src.Ref, origin, err)
		}
		commit = strings.TrimSpace(out)
	}
	if _, err := g.run(ctx, cache, nil, "update-ref", "refs/keel/commits/"+commit, commit); err != nil {
		return "", "", false, fmt.Errorf("keeping %s in the cache: %w", commit, err)
	}
	touch(filepath.Join(cache, "keel-used"))
	return cache, commit, fetched, nil
}

// initCache makes the bare cache of a repository if it is not there yet, in a directory of its
// own renamed into place, so a cache is either whole or absent.
func (m *Manager) initCache(ctx context.Context, g git, cache string) error {
	if _, err := os.Stat(filepath.Join(cache, "HEAD")); err == nil {
		return nil
	}
	tmp := cache + ".new"
	_ = os.RemoveAll(tmp)
	if _, err := g.run(ctx, "", nil, "init", "--quiet", "--bare", "--template=", tmp); err != nil {
		return fmt.Errorf("making a cache: %w", err)
	}
	if err := os.Rename(tmp, cache); err != nil {
		return fmt.Errorf("putting a cache in place: %w", err)
	}
	return nil
}

// auth is the configuration that sends the token to origin, or nil: only to the token's host,
// and over plain http only on loopback.
func (m *Manager) auth(origin string) []string {
	if m.Token == "" {
		return nil
	}
	u, err := url.Parse(origin)
	host := m.TokenHost
	if host == "" {
		host = m.gitHubHost()
	}
	if err != nil || !strings.EqualFold(u.Host, host) || (u.Scheme != "https" && !contract.Loopback(origin)) {
		return nil
	}
	basic := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + m.Token))
	return []string{"http." + u.Scheme + "://" + u.Host + "/.extraHeader=Authorization: Basic " + basic}
}

// gitHubHost is the host (host or host:port) of the worker's GitHub.
func (m *Manager) gitHubHost() string {
	base := m.GitHubURL
	if base == "" {
		base = contract.DefaultGitHubURL
	}
	u, err := url.Parse(base)
	if err != nil {
		return ""
	}
	return u.Host
}

// checkout makes a repository at dir holding the cache's objects, checked out at commit. The
// cache's packs are copied in as files (the kernel's copy, a reflink where the filesystem has
// them), so the workspace shares no inode and no file with the cache, and nothing it does reaches
// the cache. The cache keeps every object in packs (transfer.unpackLimit=1), so the packs are all.
func checkout(ctx context.Context, g git, cache, commit, dir string) error {
	if _, err := g.run(ctx, "", nil, "init", "--quiet", "--template=", dir); err != nil {
		return err
	}
	if err := copyPacks(filepath.Join(cache, "objects", "pack"), filepath.Join(dir, ".git", "objects", "pack")); err != nil {
		return fmt.Errorf("copying the cache's objects: %w", err)
	}
	_, err := g.run(ctx, dir, nil, "checkout", "--quiet", "--detach", commit)
	return err
}

// copyPacks copies every pack of src into dst, each index after its pack, so git never sees an
// index whose pack is not whole.
func copyPacks(src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	packs, err := filepath.Glob(filepath.Join(src, "pack-*.pack"))
	if err != nil {
		return err
	}
	for _, p := range packs {
		base := strings.TrimSuffix(filepath.Base(p), ".pack")
		for _, ext := range []string{".pack", ".rev", ".idx"} {
			if err := copyFile(filepath.Join(src, base+ext), filepath.Join(dst, base+ext)); err != nil && !(ext == ".rev" && errors.Is(err, os.ErrNotExist)) {
				return err
			}
		}
	}
	return nil
}

// copyFile copies a regular file of the cache (never a link) to a new file at dst.
func copyFile(src, dst string) error {
	in, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// lock takes an exclusive lock on path (made if missing) until the returned function is called,
// giving up when ctx ends.
func lock(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the lock %s: %w", filepath.Base(path), err)
	}
	var ferr error
	done := make(chan struct{})
	go func() { ferr = syscall.Flock(int(f.Fd()), syscall.LOCK_EX); close(done) }()
	select {
	case <-done:
		if ferr != nil {
			_ = f.Close()
			return nil, fmt.Errorf("taking the lock %s: %w", filepath.Base(path), ferr)
		}
		return func() { _ = f.Close() }, nil
	case <-ctx.Done():
		// The flock still waiting takes the lock when its holder lets go; the close then
		// releases it at once.
		go func() { <-done; _ = f.Close() }()
		return nil, fmt.Errorf("waiting for the lock %s: %w", filepath.Base(path), ctx.Err())
	}
}

// digest names a session's or a repository's directory: fixed length, no character from outside.
func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:32]
}

func randomHex() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
