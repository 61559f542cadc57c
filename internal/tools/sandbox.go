package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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
