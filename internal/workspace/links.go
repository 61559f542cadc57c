package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// maxHops bounds how many symlinks one resolution follows, as the kernel's own limit does.
const maxHops = 40

// flattenEscapingLinks replaces each symlink of the checked-out tree whose target leads out of
// dir (absolute, or through ".." above dir, directly or through other links of the tree) with a
// plain file holding the target's text, as git writes symlinks where they are not supported, and
// tells git to take that file as unchanged. Keel's own code and the tools then cannot be led out
// of the workspace by a link the repository brought.
func flattenEscapingLinks(ctx context.Context, g git, dir string) ([]string, error) {
	out, err := g.run(ctx, dir, nil, "ls-files", "-s", "-z")
	if err != nil {
		return nil, err
	}
	var links []string
	for _, entry := range strings.Split(out, "\x00") {
		meta, path, ok := strings.Cut(entry, "\t")
		if ok && strings.HasPrefix(meta, "120000 ") {
			links = append(links, path)
		}
	}
	var escaping []string
	for _, l := range links {
		if leadsOut(dir, l) {
			escaping = append(escaping, l)
		}
	}
	for _, l := range escaping {
		p := filepath.Join(dir, filepath.FromSlash(l))
		target, err := os.Readlink(p)
		if err != nil {
			return nil, err
		}
		if err := os.Remove(p); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, []byte(target), 0o644); err != nil {
			return nil, fmt.Errorf("writing %s as a plain file: %w", l, err)
		}
		if _, err := g.run(ctx, dir, nil, "update-index", "--assume-unchanged", "--", l); err != nil {
			return nil, err
		}
	}
	return escaping, nil
}

// leadsOut says whether the symlink at rel (slash-separated, relative to root) resolves, or would
// resolve once its target exists, to somewhere outside root. It follows the tree's links as the
// kernel would, with root standing for the top.
func leadsOut(root, rel string) bool {
	hops := 0
	base := strings.Split(rel, "/")
	target, err := os.Readlink(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return true
	}
	_, ok := resolveIn(root, base[:len(base)-1], target, &hops)
	return !ok
}

// resolveIn resolves target from the directory base (path components under root) and returns the
// components it ends at; ok is false when it leaves root or follows too many links.
func resolveIn(root string, base []string, target string, hops *int) ([]string, bool) {
	if filepath.IsAbs(target) {
		return nil, false
	}
	stack := append([]string(nil), base...)
	for _, c := range strings.Split(filepath.ToSlash(target), "/") {
		switch c {
		case "", ".":
			continue
		case "..":
			if len(stack) == 0 {
				return nil, false
			}
			stack = stack[:len(stack)-1]
			continue
		}
		p := filepath.Join(append([]string{root}, append(stack, c)...)...)
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			stack = append(stack, c)
			continue
		}
		if *hops++; *hops > maxHops {
			return nil, false
		}
		next, err := os.Readlink(p)
		if err != nil {
			return nil, false
		}
		var ok bool
		if stack, ok = resolveIn(root, stack, next, hops); !ok {
			return nil, false
		}
	}
	return stack, true
}
