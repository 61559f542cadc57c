//go:build unix

package sandbox

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
)

// git runs what some files of a repository say: the configuration (core.fsmonitor, aliases,
// core.hooksPath, includes), the hooks, info/exclude and info/attributes, and the pointers that
// say where the configuration is (commondir, a .git file's gitdir: line). Whoever types git in
// the work directory on the host runs them as themselves. A sandboxed command may change the
// repository's objects, refs, index and HEAD (git add, git commit, git checkout), so the git
// folder stays writable, but these entries are bound read-only over themselves, and the git
// folders themselves are bound over themselves, so that neither can be moved aside and replaced.
// An entry that did not exist when the command started cannot be covered without creating it on
// the host, so the worker removes what a command created there once the command has ended (when
// nothing of the command runs any more), and restores a symbolic link the command replaced.

// GitControl are the entries of a git folder that git executes or obeys.
var GitControl = []string{"config", "config.worktree", "commondir", "hooks", "info"}

// Bounds on the search for the git folders of submodules below a git folder's modules folder.
const (
	gitModulesDepth   = 6
	gitModulesEntries = 4096
)

// GitDirs lists the git folders of the repository whose work tree is root (an absolute, resolved
// path), as resolved paths inside root: root/.git when it is a folder, the folder a .git file
// (gitdir: ...) or a .git link names when that lies inside root, and below each, the git
// folders of its submodules (modules/NAME, nested), and the git folder of each submodule the
// index records (a gitlink) whose .git lies inside root. A git folder outside root is not in
// any sandbox's view, and nothing of the model's reaches it.
func GitDirs(root string) []string {
	top := gitDirOf(root)
	if top == "" {
		return nil
	}
	out := []string{top}
	budget := gitModulesEntries
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		if depth > gitModulesDepth || budget <= 0 {
			return
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range entries {
			budget--
			if budget <= 0 {
				return
			}
			if !e.IsDir() { // a link is not followed
				continue
			}
			sub := filepath.Join(dir, e.Name())
			if info, err := os.Lstat(filepath.Join(sub, "HEAD")); err == nil && info.Mode().IsRegular() {
				out = append(out, sub)
				walk(filepath.Join(sub, "modules"), depth+1)
				continue
			}
			walk(sub, depth+1) // a submodule's name may hold slashes
		}
	}
	for i := 0; i < len(out); i++ {
		walk(filepath.Join(out[i], "modules"), 0)
	}
	// The git folders of the submodules the index records, wherever their .git names them
	// inside root: git status looks into each with its own configuration.
	for _, wt := range gitlinkTrees(root, top) {
		if d := gitDirAt(root, wt); d != "" && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// gitlinkTrees are the work trees, inside root, of the submodules the index of the git folder
// top records; a path that would leave root is not one.
func gitlinkTrees(root, top string) []string {
	var trees []string
	for _, p := range Gitlinks(filepath.Join(top, "index")) {
		clean := filepath.Clean(filepath.FromSlash(p))
		if filepath.IsAbs(clean) || clean == "." || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
			continue
		}
		wt := filepath.Join(root, clean)
		// No link on the way: what is bound there must be in root.
		if r, err := filepath.EvalSymlinks(wt); err != nil || r != wt {
			continue
		}
		trees = append(trees, wt)
	}
	return trees
}

// gitDirOf is the git folder root/.git stands for when it lies inside root, or "".
func gitDirOf(root string) string { return gitDirAt(root, root) }

// gitDirAt is the git folder wt/.git stands for when it lies inside root (and is not root), or "".
func gitDirAt(root, wt string) string {
	dotgit := filepath.Join(wt, ".git")
	info, err := os.Lstat(dotgit)
	if err != nil {
		return ""
	}
	var dir string
	switch {
	case info.IsDir() && wt == root:
		return dotgit
	case info.IsDir():
		dir = dotgit
	case info.Mode()&fs.ModeSymlink != 0:
		dir = dotgit
	case info.Mode().IsRegular() && info.Size() < 4096:
		data, err := os.ReadFile(dotgit)
		if err != nil {
			return ""
		}
		line, _, _ := bytes.Cut(data, []byte("\n"))
		p, ok := strings.CutPrefix(strings.TrimSpace(string(line)), "gitdir:")
		if !ok {
			return ""
		}
		dir = strings.TrimSpace(p)
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(wt, dir)
		}
	default:
		return ""
	}
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil || !within(root, resolved) || resolved == root {
		return ""
	}
	if info, err := os.Stat(resolved); err != nil || !info.IsDir() {
		return ""
	}
	return resolved
}

// within reports whether path is root or below it.
func within(root, path string) bool {
	return path == root || strings.HasPrefix(path, root+string(filepath.Separator))
}

// gitEntry is one protected path as it was when a command started.
type gitEntry struct {
	path   string
	kind   fs.FileMode // fs.ModeDir, 0 for a regular file, fs.ModeSymlink, fs.ModeIrregular for missing
	target string      // a link's target
	uid    int
	gid    int
}

// gitMissing is the kind of a protected path that did not exist.
const gitMissing = fs.ModeIrregular

// gitGuard is what a command's sandbox protects of its work directory's repository.
type gitGuard struct {
	root    string
	dirs    []string
	entries []gitEntry
	// pins are the git folders bound over themselves (read-write), locks the entries bound
	// read-only over themselves.
	pins, locks []string
}

// guardGit looks at root's repository before a command.
func guardGit(root string) *gitGuard {
	g := &gitGuard{root: root, dirs: GitDirs(root)}
	dotgit := filepath.Join(root, ".git")
	g.note(dotgit)
	// A submodule's .git file (or link) is bound read-only over itself, like the top one, so its
	// gitdir: line cannot be pointed at a folder of the model's. One that does not exist yet is
	// left to the command (git submodule update writes it); the folder it names is looked at
	// after the command, as a new git folder.
	if len(g.dirs) > 0 {
		for _, wt := range gitlinkTrees(root, g.dirs[0]) {
			if info, err := os.Lstat(filepath.Join(wt, ".git")); err == nil && !info.IsDir() {
				g.note(filepath.Join(wt, ".git"))
			}
		}
	}
	for _, d := range g.dirs {
		if d != dotgit && !slices.ContainsFunc(g.entries, func(e gitEntry) bool { return e.path == d }) {
			g.note(d)
		}
		for _, name := range GitControl {
			g.note(filepath.Join(d, name))
		}
	}
	// Every folder between the work directory and what is bound is bound over itself too: a
	// folder that holds a mount point can still be renamed, and a new one put in its place.
	for _, p := range append(slices.Clone(g.pins), g.locks...) {
		for up := filepath.Dir(p); up != g.root && within(g.root, up); up = filepath.Dir(up) {
			if !slices.Contains(g.pins, up) {
				g.pins = append(g.pins, up)
			}
		}
	}
	byDepth := func(s []string) {
		sort.SliceStable(s, func(i, j int) bool { return strings.Count(s[i], "/") < strings.Count(s[j], "/") })
	}
	byDepth(g.pins)
	byDepth(g.locks)
	return g
}

// owner is the user and group that own a file.
func owner(info fs.FileInfo) (uid, gid int) {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), int(st.Gid)
	}
	return -1, -1
}

// note records one path and what the sandbox binds over it.
func (g *gitGuard) note(p string) {
	e := gitEntry{path: p, kind: gitMissing}
	info, err := os.Lstat(p)
	if err == nil {
		e.kind = info.Mode().Type()
		e.uid, e.gid = owner(info)
	}
	switch {
	case err != nil:
	case e.kind == fs.ModeSymlink:
		e.target, _ = os.Readlink(p)
		// What the link leads to inside the work directory is locked in its place.
		if to, err := filepath.EvalSymlinks(p); err == nil && within(g.root, to) && to != g.root && !slices.Contains(g.dirs, to) && !slices.Contains(g.locks, to) {
			g.locks = append(g.locks, to)
		}
	case e.kind == fs.ModeDir && slices.Contains(g.dirs, p):
		g.pins = append(g.pins, p)
	case e.kind == fs.ModeDir || e.kind == 0:
		g.locks = append(g.locks, p)
	}
	g.entries = append(g.entries, e)
}

// restore undoes what a command did to the protected entries that were not bound over (those
// missing when it started, links) and to the control entries of git folders it created, and
// says which paths it changed, relative to the work directory. Call it once nothing of the
// command runs any more.
func (g *gitGuard) restore() []string {
	var undone []string
	say := func(p string) {
		if rel, err := filepath.Rel(g.root, p); err == nil {
			undone = append(undone, filepath.ToSlash(rel))
		}
	}
	for _, e := range g.entries {
		info, err := os.Lstat(e.path)
		switch {
		case e.kind == gitMissing && err == nil:
			if info.IsDir() && slices.Contains(GitDirs(g.root), e.path) {
				continue // a new git folder: its control entries are removed below
			}
			if os.RemoveAll(e.path) == nil {
				say(e.path)
			}
		case e.kind == fs.ModeSymlink:
			if err == nil && info.Mode().Type() == fs.ModeSymlink {
				if t, err := os.Readlink(e.path); err == nil && t == e.target {
					continue
				}
			}
			if err == nil {
				_ = os.RemoveAll(e.path)
			}
			if os.Symlink(e.target, e.path) == nil {
				_ = os.Lchown(e.path, e.uid, e.gid)
				say(e.path)
			}
		}
	}
	for _, d := range GitDirs(g.root) {
		if slices.Contains(g.dirs, d) {
			continue
		}
		for _, name := range GitControl {
			p := filepath.Join(d, name)
			if _, err := os.Lstat(p); err == nil && os.RemoveAll(p) == nil {
				say(p)
			}
		}
	}
	return undone
}
