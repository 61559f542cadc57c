package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/contract"
)

// Notes of a branch that was not pushed.
const (
	NotePushOff     = "pushing sessions' branches is off on the worker that ended the session (workspaces.push)"
	NoteNoChanges   = "the session changed no file git would commit, so no branch was pushed"
	NoteNoWorkspace = "the session's workspace is not on the worker that ended it (its earlier worker is gone), so no branch was pushed"
)

// pushing are the settings of the git that commits and pushes a session's workspace, on top of
// hardened: nothing signs, no tag or submodule goes along, nothing of the workspace's own
// configuration or git folder is read (the model wrote both; git is pointed at the cache).
var pushing = []string{
	"core.untrackedCache=false",
	"core.autocrlf=false",
	"core.safecrlf=false",
	"core.excludesFile=/dev/null",
	"commit.gpgSign=false",
	"push.gpgSign=false",
	"push.followTags=false",
	"push.recurseSubmodules=no",
	"push.negotiate=false",
	"push.useBitmaps=false",
	"user.useConfigOnly=false",
}

// Push commits the final tree of the workspace the session sessionID worked in (src.WorkspaceOf)
// on top of the commit it was made at, and pushes that commit to the origin as
// contract.BranchName(sessionID), creating the branch or finding it already there (a retry).
//
// The model had the workspace's .git for the whole session, so nothing of it is used: git runs
// with the repository's bare cache as its git directory and the workspace as its work tree, a
// fresh index and object directory of Keel's own (the cache's objects read through an
// alternate, so the cache gains nothing), the start commit recorded when Keel made the workspace
// as the parent, and a refspec naming exactly one branch. git never enters a folder named .git,
// so the workspace's git folder is not in the tree. A branch not pushed for a reason that is no
// error (pushing off, no change, no workspace here) comes back with its Note; an error is the
// caller's to retry.
func (m *Manager) Push(ctx context.Context, req contract.PushRequest) (contract.Branch, error) {
	br := contract.Branch{Repo: req.Source.Repo, Name: contract.BranchName(req.SessionID)}
	if m.NoPush {
		br.Note = NotePushOff
		return br, nil
	}
	origin, err := m.origin(req.Source.Repo)
	if err != nil {
		return br, err
	}
	name := req.Source.WorkspaceOf(req.SessionID)
	sdir := m.sessionDir(name)
	// What is pushed is the session's newest recorded state: this worker's copy may be missing
	// or older (the session's last calls ran elsewhere).
	if latest, err := m.latest(ctx, name); err != nil {
		return br, err
	} else if latest != nil {
		if _, err := m.Ensure(ctx, name, req.Source); err != nil {
			return br, fmt.Errorf("bringing the workspace to its newest record before the push: %w", err)
		}
	}
	if _, err := os.Lstat(filepath.Join(sdir, "ready")); errors.Is(err, os.ErrNotExist) {
		br.Note = NoteNoWorkspace
		return br, nil
	}
	unlock, err := lock(ctx, filepath.Join(sdir, "lock"))
	if err != nil {
		return br, err
	}
	defer unlock()
	start, err := readStart(sdir)
	if err != nil {
		return br, err
	}
	g, err := m.git()
	if err != nil {
		return br, err
	}
	// The cache may have been pruned since the workspace was made: fetching the start commit
	// again costs nothing when it is there.
	cache, _, _, err := m.fetch(ctx, g, origin, contract.Source{Repo: req.Source.Repo, Commit: start})
	if err != nil {
		return br, fmt.Errorf("finding the start commit %s in the cache: %w", start, err)
	}
	tmp := filepath.Join(sdir, "push."+randomHex())
	if err := os.MkdirAll(filepath.Join(tmp, "objects"), 0o700); err != nil {
		return br, fmt.Errorf("making the push's object directory: %w", err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	work := filepath.Join(sdir, "work")
	at := req.At.UTC().Format(time.RFC3339)
	env := []string{
		"GIT_INDEX_FILE=" + filepath.Join(tmp, "index"),
		"GIT_OBJECT_DIRECTORY=" + filepath.Join(tmp, "objects"),
		"GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(cache, "objects"),
		"GIT_AUTHOR_NAME=Keel", "GIT_AUTHOR_EMAIL=keel@localhost", "GIT_AUTHOR_DATE=" + at,
		"GIT_COMMITTER_NAME=Keel", "GIT_COMMITTER_EMAIL=keel@localhost", "GIT_COMMITTER_DATE=" + at,
	}
	cfg := append([]string(nil), pushing...)
	run := func(extra []string, args ...string) (string, error) {
		full := append([]string{"--git-dir=" + cache, "--work-tree=" + work}, args...)
		out, err := g.runEnv(ctx, work, append(cfg, extra...), env, full...)
		return strings.TrimSpace(out), err
	}
	if _, err := run(nil, "read-tree", start); err != nil {
		return br, fmt.Errorf("reading the start commit %s: %w", start, err)
	}
	if _, err := run(nil, "add", "--all", "--", "."); err != nil {
		return br, fmt.Errorf("adding the workspace's files: %w", err)
	}
	tree, err := run(nil, "write-tree")
	if err != nil {
		return br, fmt.Errorf("writing the workspace's tree: %w", err)
	}
	if was, err := run(nil, "rev-parse", "--verify", "--end-of-options", start+"^{tree}"); err != nil {
		return br, fmt.Errorf("reading the start commit's tree: %w", err)
	} else if was == tree {
		br.Note = NoteNoChanges
		return br, nil
	}
	commit, err := run(nil, "commit-tree", tree, "-p", start, "-m", commitMessage(req.Message))
	if err != nil {
		return br, fmt.Errorf("committing the workspace's tree: %w", err)
	}
	if _, err := run(m.auth(origin), "push", "--quiet", "--no-verify", "--no-follow-tags", "--", origin,
		commit+":refs/heads/"+br.Name); err != nil {
		return br, fmt.Errorf("pushing %s to %s: %w", br.Name, origin, err)
	}
	br.Commit, br.Parent, br.Pushed = commit, start, true
	return br, nil
}

// readStart is the commit Keel made the workspace at, from the file it wrote beside it.
func readStart(sdir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(sdir, "ready"))
	if err != nil {
		return "", fmt.Errorf("reading the workspace's start commit: %w", err)
	}
	c := strings.TrimSpace(string(b))
	if (len(c) != 40 && len(c) != 64) || strings.Trim(c, "0123456789abcdef") != "" {
		return "", fmt.Errorf("the workspace's start commit %q is not a commit SHA", c)
	}
	return c, nil
}

// commitMessage is a message git takes as an argument: bounded, no NUL, never empty.
func commitMessage(m string) string {
	m = strings.ReplaceAll(m, "\x00", "")
	if len(m) > contract.MaxCommitMessage {
		m = m[:contract.MaxCommitMessage]
	}
	if strings.TrimSpace(m) == "" {
		m = "Keel session"
	}
	return m
}
