package snapshot

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Restore writes a snapshot's files into dst, which must not exist yet or be empty, and nothing
// else: files the snapshot skipped are not written, and nothing is read from any other place than
// the store. The manifest is checked first as if hostile (each path relative, without "." or ".."
// or empty components, no NUL, no two alike; each content hash well formed), and each entry is
// created under a descriptor of dst, opening every folder on its way without following a symbolic
// link, so no path can land outside dst, whatever links the snapshot holds.
func (s *Store) Restore(m Manifest, dst string) error {
	if m.Missing != "" {
		return &MissingError{Turn: m.Turn, Reason: m.Missing}
	}
	if err := Check(m); err != nil {
		return fmt.Errorf("restoring the snapshot of turn %d: %w", m.Turn, err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dst, err)
	}
	root, err := unix.Open(dst, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening %s: %w", dst, err)
	}
	defer unix.Close(root)
	for _, e := range m.Entries {
		if err := s.restoreAt(root, e); err != nil {
			return fmt.Errorf("restoring %s from the snapshot of turn %d: %w", Printable(string(e.Path)), m.Turn, err)
		}
	}
	return nil
}

// Check refuses a manifest a restore must not follow: a path that is absolute, empty, has an
// empty, "." or ".." component or a NUL, or appears twice; an entry that is neither a folder, a
// link nor a file; a file whose hash is not one the store names blobs by.
func Check(m Manifest) error {
	seen := make(map[Name]bool, len(m.Entries))
	for _, e := range m.Entries {
		p := string(e.Path)
		if p == "" || strings.HasPrefix(p, "/") || strings.IndexByte(p, 0) >= 0 {
			return fmt.Errorf("the path %s is not one a work directory can hold", Printable(p))
		}
		for c := range strings.SplitSeq(p, "/") {
			if c == "" || c == "." || c == ".." {
				return fmt.Errorf("the path %s is not one a work directory can hold", Printable(p))
			}
		}
		if seen[e.Path] {
			return fmt.Errorf("the path %s appears twice", Printable(p))
		}
		seen[e.Path] = true
		switch {
		case e.Mode.IsDir():
		case e.Mode.Type() == os.ModeSymlink:
			if e.Link == "" || strings.IndexByte(string(e.Link), 0) >= 0 {
				return fmt.Errorf("the link %s has no valid target", Printable(p))
			}
		case e.Mode.IsRegular():
			if !hashPattern.MatchString(e.Hash) || e.Size < 0 || e.Size > MaxFileSize {
				return fmt.Errorf("the file %s has no valid content", Printable(p))
			}
		default:
			return fmt.Errorf("%s is neither a file, a folder nor a link", Printable(p))
		}
	}
	return nil
}

// restoreAt creates one entry under the folder open as root.
func (s *Store) restoreAt(root int, e Entry) error {
	parts := strings.Split(string(e.Path), "/")
	dir := root
	for _, c := range parts[:len(parts)-1] {
		next, err := unix.Openat(dir, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if dir != root {
			unix.Close(dir)
		}
		if err != nil {
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
				return fmt.Errorf("a folder on its way is not a folder of the snapshot")
			}
			return err
		}
		dir = next
	}
	if dir != root {
		defer unix.Close(dir)
	}
	name := parts[len(parts)-1]
	switch {
	case e.Mode.IsDir():
		return unix.Mkdirat(dir, name, uint32(e.Mode.Perm()|0o700))
	case e.Mode.Type() == os.ModeSymlink:
		return unix.Symlinkat(string(e.Link), dir, name)
	}
	src, err := os.OpenFile(s.blobPath(e.Hash), readFlags, 0)
	if err != nil {
		return err
	}
	defer src.Close()
	fd, err := unix.Openat(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(e.Mode.Perm()))
	if err != nil {
		return err
	}
	out := os.NewFile(uintptr(fd), name)
	n, err := copySparse(out, io.LimitReader(src, e.Size+1))
	if err == nil && n != e.Size {
		err = fmt.Errorf("the stored content has %d bytes, the snapshot says %d", n, e.Size)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
