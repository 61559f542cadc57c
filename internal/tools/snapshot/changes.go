package snapshot

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// Change is one path that differs between two snapshots: Before or After is nil where the path
// is absent.
type Change struct {
	Path          Name
	Before, After *Entry
}

// Changes are the paths that differ between before and after, in path order: added, removed, or
// changed in content, mode, kind or link target (a modification time alone is no change). A path
// either snapshot skipped is not compared: its state there is not known.
func Changes(before, after Manifest) []Change {
	skipped := map[Name]bool{}
	for _, n := range append(append([]Name(nil), before.Skipped...), after.Skipped...) {
		skipped[n] = true
	}
	b, a := index(before), index(after)
	var out []Change
	for p, eb := range b {
		if skipped[p] {
			continue
		}
		if ea, ok := a[p]; !ok {
			out = append(out, Change{Path: p, Before: eb})
		} else if !same(*eb, *ea) {
			out = append(out, Change{Path: p, Before: eb, After: ea})
		}
	}
	for p, ea := range a {
		if _, ok := b[p]; !ok && !skipped[p] {
			out = append(out, Change{Path: p, After: ea})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func index(m Manifest) map[Name]*Entry {
	out := make(map[Name]*Entry, len(m.Entries))
	for i := range m.Entries {
		out[m.Entries[i].Path] = &m.Entries[i]
	}
	return out
}

// same says whether two entries of one path hold the same thing.
func same(a, b Entry) bool {
	if a.Mode.Type() != b.Mode.Type() {
		return false
	}
	switch {
	case a.Mode.IsDir():
		return true
	case a.Mode.Type() == os.ModeSymlink:
		return a.Link == b.Link
	}
	return a.Hash == b.Hash && a.Size == b.Size && a.Mode.Perm() == b.Mode.Perm()
}

// ErrTooBig means a stored file is larger than the caller wants to read.
var ErrTooBig = errors.New("larger than the bound")

// Content is a file entry's stored content, read from the store only (never from a work
// directory), at most limit bytes: ErrTooBig past it. The blob is opened without following a link
// and without blocking, and must be a regular file of the size the entry says.
func (s *Store) Content(e Entry, limit int64) ([]byte, error) {
	if !e.Mode.IsRegular() || !hashPattern.MatchString(e.Hash) {
		return nil, fmt.Errorf("%s has no stored content", Printable(string(e.Path)))
	}
	if e.Size > limit {
		return nil, ErrTooBig
	}
	f, err := os.OpenFile(s.blobPath(e.Hash), readFlags, 0)
	if err != nil {
		return nil, fmt.Errorf("reading the stored content of %s: %w", Printable(string(e.Path)), err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("the stored content of %s is not a file", Printable(string(e.Path)))
	}
	b, err := io.ReadAll(io.LimitReader(f, e.Size+1))
	if err != nil {
		return nil, fmt.Errorf("reading the stored content of %s: %w", Printable(string(e.Path)), err)
	}
	if int64(len(b)) != e.Size {
		return nil, fmt.Errorf("the stored content of %s has %d bytes, the snapshot says %d", Printable(string(e.Path)), len(b), e.Size)
	}
	return b, nil
}

// Turns are the turns a session has snapshots of, in order (markers of missing ones included).
func (s *Store) Turns(session string) ([]int, error) { return s.turns(session) }

// Load is the manifest of one turn's snapshot exactly (Find looks for the last one at or before
// a turn): a *MissingError when it is only a marker. It is checked as if hostile.
func (s *Store) Load(session string, turn int) (Manifest, error) {
	m, err := s.load(session, turn)
	if err != nil {
		return m, err
	}
	if m.Missing != "" {
		return m, &MissingError{Turn: m.Turn, Reason: m.Missing}
	}
	if err := Check(m); err != nil {
		return m, fmt.Errorf("the snapshot of turn %d: %w", turn, err)
	}
	return m, nil
}

// ConflictError says the work directory no longer holds what a snapshot says for some paths, so
// a revert would throw away changes made since: nothing was changed.
type ConflictError struct {
	Paths []string
}

func (e *ConflictError) Error() string {
	shown := e.Paths
	if len(shown) > 3 {
		shown = shown[:3]
	}
	more := ""
	if len(e.Paths) > 3 {
		more = fmt.Sprintf(" and %d more", len(e.Paths)-3)
	}
	return fmt.Sprintf("%s changed since the snapshot (%s%s)", countPaths(len(e.Paths)), strings.Join(shown, ", "), more)
}

func countPaths(n int) string {
	if n == 1 {
		return "1 path"
	}
	return fmt.Sprintf("%d paths", n)
}

// State says how the work directory holds the paths that differ between two snapshots.
type State int

const (
	// AsAfter: every changed path is as the later snapshot has it.
	AsAfter State = iota
	// AsBefore: every changed path is as the earlier snapshot has it (already reverted).
	AsBefore
	// Mixed: some path is neither (changed since, or half reverted).
	Mixed
)

// Compare says whether the work directory holds the changes between before and after as after
// has them, as before has them, or neither, and which paths are neither. Every path is opened
// under a descriptor of workdir without following a link at any component, files without
// blocking, and a file is read only when its size matches (at most MaxFileSize).
func Compare(workdir string, changes []Change) (State, []string, error) {
	root, err := openWorkdir(workdir)
	if err != nil {
		return Mixed, nil, err
	}
	defer unix.Close(root)
	after, before := true, true
	var neither []string
	for _, c := range changes {
		isAfter, isBefore := holds(root, c.Path, c.After), holds(root, c.Path, c.Before)
		after, before = after && isAfter, before && isBefore
		if !isAfter && !isBefore {
			neither = append(neither, Printable(string(c.Path)))
		}
	}
	switch {
	case after:
		return AsAfter, nil, nil
	case before:
		return AsBefore, nil, nil
	}
	return Mixed, neither, nil
}

func openWorkdir(workdir string) (int, error) {
	fd, err := unix.Open(workdir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return -1, fmt.Errorf("opening the work directory %s: %w", workdir, err)
	}
	return fd, nil
}

// openParent opens the folder that holds path under root, no link followed on the way; the
// caller closes dir when it is not root.
func openParent(root int, path Name) (dir int, name string, err error) {
	parts := strings.Split(string(path), "/")
	dir = root
	for _, c := range parts[:len(parts)-1] {
		next, err := unix.Openat(dir, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if dir != root {
			unix.Close(dir)
		}
		if err != nil {
			return -1, "", err
		}
		dir = next
	}
	return dir, parts[len(parts)-1], nil
}

// holds says whether the path under root is as e has it (absent when e is nil).
func holds(root int, path Name, e *Entry) bool {
	dir, name, err := openParent(root, path)
	if err != nil {
		// A folder on the way is missing (or not a folder): the path is absent.
		return e == nil && (errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR))
	}
	if dir != root {
		defer unix.Close(dir)
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return e == nil && errors.Is(err, unix.ENOENT)
	}
	if e == nil {
		return false
	}
	switch {
	case e.Mode.IsDir():
		return st.Mode&unix.S_IFMT == unix.S_IFDIR
	case e.Mode.Type() == os.ModeSymlink:
		if st.Mode&unix.S_IFMT != unix.S_IFLNK {
			return false
		}
		buf := make([]byte, 4096)
		n, err := unix.Readlinkat(dir, name, buf)
		return err == nil && n < len(buf) && string(buf[:n]) == string(e.Link)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size != e.Size || e.Size > MaxFileSize {
		return false
	}
	fd, err := unix.Openat(dir, name, readFlags, 0)
	if err != nil {
		return false
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	if fst, err := f.Stat(); err != nil || !fst.Mode().IsRegular() {
		return false
	}
	h, err := hashOf(io.LimitReader(f, e.Size+1))
	return err == nil && h == e.Hash
}

// Revert puts every changed path back as before has it, in workdir, after Compare found them all
// as after has them (otherwise a *ConflictError, and nothing is changed). What after added is
// removed (folders only when empty), what it removed or changed is written again from the store:
// a file through a new file beside it renamed over the path, never through the old one, so a
// link the model left cannot redirect the write. Every path is reached under a descriptor of
// workdir with no link followed at any component.
func (s *Store) Revert(workdir string, changes []Change) error {
	st, neither, err := Compare(workdir, changes)
	if err != nil {
		return err
	}
	if st != AsAfter {
		if len(neither) == 0 {
			for _, c := range changes {
				neither = append(neither, Printable(string(c.Path)))
			}
		}
		return &ConflictError{Paths: neither}
	}
	root, err := openWorkdir(workdir)
	if err != nil {
		return err
	}
	defer unix.Close(root)
	// Remove first, deepest paths first, what before does not have in the same kind.
	for i := len(changes) - 1; i >= 0; i-- {
		c := changes[i]
		if c.After == nil || (c.Before != nil && c.Before.Mode.Type() == c.After.Mode.Type()) {
			continue
		}
		if err := removeAt(root, c.Path, c.After.Mode.IsDir()); err != nil {
			return fmt.Errorf("removing %s: %w", Printable(string(c.Path)), err)
		}
	}
	// Then write, shallow paths first, what before has.
	for _, c := range changes {
		if c.Before == nil {
			continue
		}
		if err := s.putAt(root, *c.Before, c.After != nil && c.After.Mode.Type() == c.Before.Mode.Type()); err != nil {
			return fmt.Errorf("restoring %s: %w", Printable(string(c.Path)), err)
		}
	}
	return nil
}

func removeAt(root int, path Name, isDir bool) error {
	dir, name, err := openParent(root, path)
	if err != nil {
		return err
	}
	if dir != root {
		defer unix.Close(dir)
	}
	flags := 0
	if isDir {
		flags = unix.AT_REMOVEDIR
	}
	return unix.Unlinkat(dir, name, flags)
}

// putAt writes one entry of a snapshot at its path; exists says a thing of the same kind is there.
func (s *Store) putAt(root int, e Entry, exists bool) error {
	dir, name, err := openParent(root, e.Path)
	if err != nil {
		return err
	}
	if dir != root {
		defer unix.Close(dir)
	}
	switch {
	case e.Mode.IsDir():
		if exists {
			return unix.Fchmodat(dir, name, uint32(e.Mode.Perm()|0o700), 0)
		}
		return unix.Mkdirat(dir, name, uint32(e.Mode.Perm()|0o700))
	case e.Mode.Type() == os.ModeSymlink:
		if exists {
			if err := unix.Unlinkat(dir, name, 0); err != nil {
				return err
			}
		}
		return unix.Symlinkat(string(e.Link), dir, name)
	}
	tmp := fmt.Sprintf(".%s.keel-undo", name)
	if len(tmp) > 255 {
		tmp = ".keel-undo"
	}
	// O_EXCL: a file of that name left in the work directory is an error, not overwritten.
	if err := s.restoreAt(dir, Entry{Path: Name(tmp), Mode: e.Mode, Size: e.Size, Hash: e.Hash}); err != nil {
		if !errors.Is(err, unix.EEXIST) {
			_ = unix.Unlinkat(dir, tmp, 0)
		}
		return err
	}
	return unix.Renameat(dir, tmp, dir, name)
}

func hashOf(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
