package activities

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"go.temporal.io/sdk/activity"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/tools/gitview"
	"github.com/keelrun/keel/internal/tools/snapshot"
)

// Notes of a change list that could not be made.
const (
	noSnapshots = "this worker keeps no snapshots of work directories, so the files the session changed are not listed"
	noSnapshot  = "no snapshot of this session's work directory on the worker that looked: it changed nothing with a tool, or its tools ran on another worker (each keeps its own)"
	noGit       = "git is not installed on the worker, so files git would not show are not named"
)

// ReviewChanges lists what a session created, changed and deleted in its work directory, from
// its first and last snapshots, and asks git which of those git status would not show, so that
// nothing the session did is hidden from the person who reviews it. It reads the store and runs
// git's plumbing only (internal/tools/gitview): nothing the model wrote runs. A failure is a note
// in the answer, never an error: the session's end does not wait on it.
func (a *Activities) ReviewChanges(ctx context.Context, req contract.ReviewRequest) (contract.Changes, error) {
	if a.Snapshots == nil {
		return contract.Changes{Note: noSnapshots}, nil
	}
	changes, note, err := a.Snapshots.SessionChanges(req.SessionID)
	var missing *snapshot.MissingError
	switch {
	case errors.Is(err, snapshot.ErrNone):
		return contract.Changes{Note: noSnapshot}, nil
	case errors.As(err, &missing):
		return contract.Changes{Note: missing.Error()}, nil
	case err != nil:
		activity.GetLogger(ctx).Warn("reading the session's snapshots to list its changes", "error", err)
		return contract.Changes{Note: "the session's snapshots could not be read, so the files it changed are not listed"}, nil
	}
	changes, routine := withoutRoutineGit(changes)
	if routine > 0 {
		note = joinNotes(note, fmt.Sprintf("%d changes to git's objects, refs, logs and index (what git add and git commit write) are not listed", routine))
	}
	var present, deleted []string
	for _, c := range changes {
		if c.Kind() == contract.FileDeleted {
			deleted = append(deleted, string(c.Path))
		} else {
			present = append(present, string(c.Path))
		}
	}
	hidden, err := gitview.Hidden(ctx, req.Workdir, present, deleted)
	for _, c := range changes {
		if inGitFolder(string(c.Path)) {
			hidden[string(c.Path)] = "in git's own folder, which git status never shows"
		}
	}
	switch {
	case errors.Is(err, gitview.ErrNoGit):
		note = joinNotes(note, noGit)
	case err != nil:
		activity.GetLogger(ctx).Warn("asking git which changed files it would not show", "error", err)
		note = joinNotes(note, "git could not say of every file whether it would show it, so some hidden files may not be named")
	}
	return changeList(changes, hidden, note), nil
}

// routineGit are the entries of a git folder that git add, commit and checkout write: a change
// there is the repository's history moving, not a file to review.
var routineGit = []string{"objects/", "refs/", "logs/", "index", "HEAD", "ORIG_HEAD", "FETCH_HEAD", "COMMIT_EDITMSG", "packed-refs", "description"}

// gitComponent is the position of a path's last ".git" component and what follows it, or -1.
func gitComponent(p string) (int, string) {
	parts := strings.Split(p, "/")
	for i := len(parts) - 2; i >= 0; i-- {
		if parts[i] == ".git" {
			return i, strings.Join(parts[i+1:], "/")
		}
	}
	return -1, ""
}

// inGitFolder reports whether p lies in a .git folder.
func inGitFolder(p string) bool {
	i, _ := gitComponent(p)
	return i >= 0
}

// withoutRoutineGit drops the changes to git's routine entries (routineGit, also in a
// submodule's folder modules/NAME/, whose name may hold slashes) and counts them.
func withoutRoutineGit(changes []snapshot.Change) ([]snapshot.Change, int) {
	kept := changes[:0:0]
	dropped := 0
	for _, c := range changes {
		if routineGitPath(string(c.Path)) {
			dropped++
			continue
		}
		kept = append(kept, c)
	}
	return kept, dropped
}

// routineGitPath reports whether p is one of routineGit in a .git folder or a submodule's.
func routineGitPath(p string) bool {
	i, rest := gitComponent(p)
	if i < 0 {
		return false
	}
	tails := []string{rest}
	if strings.HasPrefix(rest, "modules/") {
		for j := range len(rest) {
			if rest[j] == '/' {
				tails = append(tails, rest[j+1:])
			}
		}
	}
	for _, t := range tails {
		for _, r := range routineGit {
			if t == r || strings.HasSuffix(r, "/") && strings.HasPrefix(t, r) {
				return true
			}
		}
	}
	return false
}

// changeList is the bounded list of a session's changes: the files git would not show first,
// then the rest, each part by path, with every kind counted.
func changeList(changes []snapshot.Change, hidden map[string]string, note string) contract.Changes {
	out := contract.Changes{Note: note}
	files := make([]contract.FileChange, 0, len(changes))
	for _, c := range changes {
		f := contract.FileChange{Path: clipBytes(snapshot.Printable(string(c.Path)), maxNamed), Change: c.Kind(), Hidden: clipBytes(hidden[string(c.Path)], maxNamed)}
		switch c.Kind() {
		case contract.FileCreated:
			out.Created++
		case contract.FileChanged:
			out.Changed++
		case contract.FileDeleted:
			out.Deleted++
		}
		if f.Hidden != "" {
			out.Hidden++
		}
		files = append(files, f)
	}
	sort.SliceStable(files, func(i, j int) bool { return files[i].Hidden != "" && files[j].Hidden == "" })
	if len(files) > contract.MaxListedChanges {
		out.More = len(files) - contract.MaxListedChanges
		files = files[:contract.MaxListedChanges]
	}
	out.Files = files
	return out
}

// maxNamed bounds a path or reason of the list: the model chose both (a name, a .gitignore
// line), and the list travels in the session's result.
const maxNamed = 300

func joinNotes(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
