// Package snapshot keeps the state of a session's work directory after each turn, so that
// `starter fork --turn N` can start from the files as they were after turn N instead of as they
// are now. A snapshot is a manifest (every file's path, mode, size and content hash) plus the
// contents, stored once by hash, in a folder of Keel's state directory, never inside a work
// directory. Taking one re-reads only the files whose size or modification time changed since the
// session's last snapshot, so a turn costs about what it changed.
package snapshot

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// MaxFileSize is the largest file a snapshot keeps; bigger ones are listed as skipped, and a fork
// takes them as they are now.
const MaxFileSize = 8 << 20

// MaxEntries bounds the files and folders one snapshot walks; past it the rest are skipped.
const MaxEntries = 50_000

// ErrNone means no snapshot covers the turn asked for.
var ErrNone = errors.New("no snapshot of the work directory")

// Entry is one file, folder or symbolic link of a snapshot.
type Entry struct {
	Path string      `json:"path"`
	Mode fs.FileMode `json:"mode"`
	Size int64       `json:"size,omitempty"`
	// ModTime is the file's modification time in nanoseconds, to tell an unchanged file without
	// reading it.
	ModTime int64  `json:"mtime,omitempty"`
	Hash    string `json:"hash,omitempty"`
	Link    string `json:"link,omitempty"`
}

// Manifest is the work directory after one turn.
type Manifest struct {
	Turn    int     `json:"turn"`
	Entries []Entry `json:"entries"`
	// Skipped are the files left out: over MaxFileSize, past MaxEntries, or unreadable.
	Skipped []string `json:"skipped,omitempty"`
}

// Store keeps the snapshots of every session under Root.
type Store struct {
	Root string
	mu   sync.Mutex
}

// New is a store of snapshots under root (a folder of Keel's state directory).
func New(root string) *Store { return &Store{Root: root} }

// Dir is where a worker with the state directory stateDir keeps snapshots, and where fork looks.
func Dir(stateDir string) string { return filepath.Join(stateDir, "snapshots") }

// unsafe matches what a session ID may not carry into a folder name.
var unsafe = regexp.MustCompile(`[^A-Za-z0-9._-]`)

func (s *Store) dir(session string) string {
	return filepath.Join(s.Root, unsafe.ReplaceAllString(session, "_"))
}

func (s *Store) manifestPath(session string, turn int) string {
	return filepath.Join(s.dir(session), "turn-"+strconv.Itoa(turn)+".json")
}

func (s *Store) blobPath(hash string) string {
	return filepath.Join(s.Root, "blobs", hash[:2], hash)
}

// EnsureBase records the work directory as it is now as the state after turn 0, unless the
// session has a snapshot already: called before the first change a session makes, it keeps the
// state the session started from, which every turn before that change left as it was.
func (s *Store) EnsureBase(session, workdir string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if turns, err := s.turns(session); err != nil || len(turns) > 0 {
		return err
	}
	_, err := s.take(session, 0, workdir)
	return err
}

// Take records the work directory as it is now as the state after turn (replacing an earlier
// snapshot of the same turn: the last change of a turn is what the turn left).
func (s *Store) Take(session string, turn int, workdir string) (Manifest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.take(session, turn, workdir)
}

func (s *Store) take(session string, turn int, workdir string) (Manifest, error) {
	prev := map[string]Entry{}
	if turns, err := s.turns(session); err == nil && len(turns) > 0 {
		if m, err := s.load(session, turns[len(turns)-1]); err == nil {
			for _, e := range m.Entries {
				prev[e.Path] = e
			}
		}
	}
	m := Manifest{Turn: turn}
	root := filepath.Clean(workdir)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if path == root {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if err != nil || len(m.Entries) >= MaxEntries {
			m.Skipped = append(m.Skipped, rel)
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		e, ok := s.entry(path, rel, d, prev)
		if !ok {
			m.Skipped = append(m.Skipped, rel)
			return nil
		}
		m.Entries = append(m.Entries, e)
		return nil
	})
	if err != nil {
		return m, fmt.Errorf("walking the work directory %s for its snapshot: %w", workdir, err)
	}
	return m, s.save(session, m)
}

// entry describes one walked path, storing a file's content unless an unchanged copy is stored
// already; false means it is left out of the snapshot.
func (s *Store) entry(path, rel string, d fs.DirEntry, prev map[string]Entry) (Entry, bool) {
	info, err := d.Info()
	if err != nil {
		return Entry{}, false
	}
	e := Entry{Path: filepath.ToSlash(rel), Mode: info.Mode()}
	switch {
	case info.IsDir():
		return e, true
	case info.Mode()&fs.ModeSymlink != 0:
		e.Link, err = os.Readlink(path)
		return e, err == nil
	case !info.Mode().IsRegular() || info.Size() > MaxFileSize:
		return Entry{}, false
	}
	e.Size, e.ModTime = info.Size(), info.ModTime().UnixNano()
	if p, ok := prev[e.Path]; ok && p.Hash != "" && p.Size == e.Size && p.ModTime == e.ModTime && p.Mode == e.Mode {
		e.Hash = p.Hash
		return e, true
	}
	if e.Hash, err = s.store(path); err != nil {
		return Entry{}, false
	}
	return e, true
}

// readFlags open a file of the work directory without following a final symbolic link and
// without waiting: the walk saw a regular file, but the model may have swapped it since for a link
// to a host file the worker can read, or for a named pipe whose open would block the worker.
const readFlags = os.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_NOCTTY

// errNotRegular marks a path that was no longer a regular file when it was opened.
var errNotRegular = errors.New("no longer a regular file")

// store copies a file's content into the blob store under its hash, if it is still a regular file
// once opened.
func (s *Store) store(path string) (string, error) {
	f, err := os.OpenFile(path, readFlags, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return "", errNotRegular
	}
	if err := os.MkdirAll(s.Root, 0o700); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(s.Root, "blob-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(f, MaxFileSize+1)); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	dst := s.blobPath(sum)
	if _, err := os.Stat(dst); err == nil {
		return sum, nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return "", err
	}
	return sum, os.Rename(tmp.Name(), dst)
}

func (s *Store) save(session string, m Manifest) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.dir(session), 0o700); err != nil {
		return fmt.Errorf("creating the snapshot folder of %s: %w", session, err)
	}
	path := s.manifestPath(session, m.Turn)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("writing the snapshot of turn %d of %s: %w", m.Turn, session, err)
	}
	return os.Rename(tmp, path)
}

func (s *Store) load(session string, turn int) (Manifest, error) {
	var m Manifest
	b, err := os.ReadFile(s.manifestPath(session, turn))
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("decoding the snapshot of turn %d of %s: %w", turn, session, err)
	}
	return m, nil
}

// turns are the turns a session has snapshots of, in order.
func (s *Store) turns(session string) ([]int, error) {
	names, err := os.ReadDir(s.dir(session))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing the snapshots of %s: %w", session, err)
	}
	var turns []int
	for _, n := range names {
		num, ok := strings.CutSuffix(strings.TrimPrefix(n.Name(), "turn-"), ".json")
		if t, err := strconv.Atoi(num); ok && err == nil {
			turns = append(turns, t)
		}
	}
	sort.Ints(turns)
	return turns, nil
}

// Find is the state after turn: the snapshot of the last turn at or before it that changed the
// work directory. ErrNone when the session has none that early (it started before snapshots were
// kept, or they are kept by another worker's state directory).
func (s *Store) Find(session string, turn int) (Manifest, error) {
	turns, err := s.turns(session)
	if err != nil {
		return Manifest{}, err
	}
	for i := len(turns) - 1; i >= 0; i-- {
		if turns[i] <= turn {
			return s.load(session, turns[i])
		}
	}
	return Manifest{}, ErrNone
}

// Restore writes a snapshot's files into dst, which must not exist yet or be empty. Files the
// snapshot skipped are not written; the caller decides what to do about them.
func (s *Store) Restore(m Manifest, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dst, err)
	}
	for _, e := range m.Entries {
		path := filepath.Join(dst, filepath.FromSlash(e.Path))
		if !strings.HasPrefix(path, filepath.Clean(dst)+string(filepath.Separator)) {
			return fmt.Errorf("restoring the snapshot: %q lies outside the work directory", e.Path)
		}
		if err := s.restore(e, path); err != nil {
			return fmt.Errorf("restoring %s from the snapshot of turn %d: %w", e.Path, m.Turn, err)
		}
	}
	return nil
}

func (s *Store) restore(e Entry, path string) error {
	switch {
	case e.Mode.IsDir():
		return os.MkdirAll(path, e.Mode.Perm()|0o700)
	case e.Link != "":
		return os.Symlink(e.Link, path)
	}
	src, err := os.Open(s.blobPath(e.Hash))
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, e.Mode.Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}
