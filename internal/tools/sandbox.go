package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/keelrun/keel/internal/tools/sandbox"
)

// place is a path resolved inside the work directory: abs is where the tool operates (symbolic
// links resolved), rel is the name shown to the model, relative to the work directory.
type place struct {
	abs string
	rel string
}

// resolve confines p to root (a resolved, absolute path). It cleans p, refuses `..` escapes, then
// resolves symbolic links in the deepest part of the path that exists and refuses anything whose
// resolved location is outside root. The second result is the refusal, written for the model; it is
// empty when the path is fine.
func resolve(root, p string) (place, string) {
	if p == "" {
		p = "."
	}
	shown := named(p)
	candidate := filepath.Join(root, filepath.Clean(p))
	if filepath.IsAbs(p) {
		candidate = filepath.Clean(p)
	} else if c := filepath.Clean(p); c == ".." || strings.HasPrefix(c, ".."+string(filepath.Separator)) {
		return place{}, fmt.Sprintf("The path %s is outside the work directory; nothing was read or changed. "+
			"Use a path inside the work directory, relative to it, such as \"calc.go\".", shown)
	}
	existing, rest, err := deepestExisting(candidate)
	if err != nil {
		return place{}, fmt.Sprintf("The path %s cannot be reached; nothing was read or changed. Use list_dir to pick another path.", shown)
	}
	resolved, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return place{}, fmt.Sprintf("The path %s goes through a symbolic link that points nowhere; nothing was read or changed. "+
			"Use list_dir to pick another path.", shown)
	}
	final := filepath.Join(resolved, rest)
	if !within(root, final) {
		if filepath.IsAbs(p) && !within(root, candidate) {
			return place{}, "The path you gave is absolute and outside the work directory; nothing was read or changed. " +
				"Use a path relative to the work directory, such as \"calc.go\"."
		}
		return place{}, fmt.Sprintf("The path %s leads outside the work directory through a symbolic link; nothing was read or changed. "+
			"Use a path that stays inside the work directory.", shown)
	}
	rel := filepath.Clean(p)
	if filepath.IsAbs(p) {
		rel, _ = filepath.Rel(root, final)
	}
	return place{abs: final, rel: filepath.ToSlash(rel)}, ""
}

// deepestExisting splits path into its longest existing prefix and the part below it that does
// not exist yet (which therefore holds no symbolic links).
func deepestExisting(path string) (existing, rest string, err error) {
	cur := path
	for {
		_, err := os.Lstat(cur)
		if err == nil {
			return cur, rest, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", "", fmt.Errorf("checking %s: %w", cur, err)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return "", "", fmt.Errorf("checking %s: %w", path, err)
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// gitControlled reports whether abs (a path resolve returned) is in one of git's own folders in
// root, or is a .git entry itself: a .git component at any depth (any case), or inside a git
// folder a .git file or link names (sandbox.GitDirs). The file tools write none of it, because
// git runs what some of those files say as whoever types git on the host; commands change the
// repository through git itself, and the sandbox keeps its control files read-only.
func gitControlled(root, abs string) bool {
	if rel, err := filepath.Rel(root, abs); err == nil {
		for _, part := range strings.Split(filepath.ToSlash(rel), "/") {
			if strings.EqualFold(part, ".git") {
				return true
			}
		}
	}
	for _, d := range sandbox.GitDirs(root) {
		if within(d, abs) {
			return true
		}
	}
	return false
}

// gitRefusal tells the model that tool did not write rel, which is in git's own folder, and what
// to do instead.
func gitRefusal(tool, rel string) string {
	return fmt.Sprintf("%q is in git's own folder, which is read-only to the model (git runs the configuration and hooks kept there "+
		"as the user on the host), so %s did not write it; nothing changed. Use git commands in run_command to change the repository "+
		"(git add, git commit, git checkout), and edit the files of the work tree instead.", rel, tool)
}

// within reports whether path is root or below it.
func within(root, path string) bool {
	return path == root || strings.HasPrefix(path, root+string(filepath.Separator))
}

// named is a path as the model may see it in a message: cleaned, relative and quoted. An absolute
// path is not repeated back; "that path" stands in for it.
func named(p string) string {
	if filepath.IsAbs(p) {
		return "that path"
	}
	if p == "" {
		p = "."
	}
	return fmt.Sprintf("%q", filepath.ToSlash(filepath.Clean(p)))
}
