// Package snapshot keeps the state of a session's work directory after each turn, so that
// `starter fork --turn N` can start from the files as they were after turn N instead of as they
// are now. A snapshot is a manifest (every file's path, mode, size and content hash) plus the
// contents, stored once by hash, in a folder of Keel's state directory, never inside a work
// directory. Taking one re-reads only the files whose size or modification time changed since the
// session's last snapshot, so a turn costs about what it changed.
//
// Everything in a work directory was written by the model, and the worker and the starter that
// read and restore it run as root: the walk opens every folder under the one above it without
// following a symbolic link, opens nothing that could block, and stores only regular files,
// folders and links; a restore writes only what the manifest holds, each path checked and created
// under the target's own descriptor with no link followed at any component.
package snapshot

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// MaxFileSize is the largest file a snapshot keeps; bigger ones are listed as skipped, and a fork
// does not have them.
const MaxFileSize = 8 << 20

// MaxEntries bounds the files and folders one snapshot walks; past it the rest are skipped.
const MaxEntries = 50_000

// MaxSkipped bounds the paths a manifest lists as skipped; past it they are only counted.
const MaxSkipped = 1000

// MaxDepth bounds how deep the walk goes: each level holds a descriptor while the walk is below it.
const MaxDepth = 256

// ErrNone means no snapshot covers the turn asked for.
var ErrNone = errors.New("no snapshot of the work directory")

// Entry is one file, folder or symbolic link of a snapshot.
type Entry struct {
	Path Name        `json:"path"`
	Mode fs.FileMode `json:"mode"`
	Size int64       `json:"size,omitempty"`
	// ModTime is the file's modification time in nanoseconds, to tell an unchanged file without
	// reading it.
	ModTime int64  `json:"mtime,omitempty"`
	Hash    string `json:"hash,omitempty"`
	Link    Name   `json:"link,omitempty"`
}

// Manifest is the work directory after one turn.
type Manifest struct {
	Turn    int     `json:"turn"`
	Entries []Entry `json:"entries"`
	// Skipped are the files left out: over MaxFileSize, past MaxEntries or MaxDepth, not a
	// regular file, folder or link, unreadable, or new content past a size limit.
	Skipped []Name `json:"skipped,omitempty"`
	// SkippedMore counts the skipped paths past MaxSkipped, not listed.
	SkippedMore int `json:"skipped_more,omitempty"`
	// Limit, when set, says which size limit left new content out of this snapshot.
	Limit string `json:"limit,omitempty"`
	// Missing, when set, says why there is no snapshot of this turn (a size limit, or prune):
	// the manifest is only a marker, so the turn is not mistaken for one that changed nothing.
	Missing string `json:"missing,omitempty"`
}

// Store keeps the snapshots of every session under Root.
type Store struct {
	Root string
	// SessionMax bounds what one session's snapshots add to the store over its life (new
	// contents and manifests), TotalMax everything under Root; 0 is no bound. Past either, new
	// contents are left out of a snapshot (listed as skipped, with Limit saying why).
	SessionMax, TotalMax int64

	// mu is held by Prune alone and shared by snapshots, which lock their session's stripe: one
	// session's snapshots are taken one at a time (each goes on from the last), while other
	// sessions' are taken beside them, so a worker running many sessions does not queue every
	// tool call behind every other session's walk.
	mu      sync.RWMutex
	stripes [sessionStripes]sync.Mutex
	// totalMu guards total and totalWhen.
	totalMu sync.Mutex
	// total is what Root holds as far as this store knows, -1 before it was measured; measured
	// again when a limit would refuse something and the last count is older than a minute, so
	// space another process freed (prune) is seen. Two sessions storing the same new content at
	// once both count it, which the next measurement corrects.
	total     int64
	totalWhen time.Time
}

// sessionStripes is how many locks the sessions' snapshots share, by a hash of the session ID.
const sessionStripes = 64

// lockSession takes the store for one session's snapshot and returns its release.
func (s *Store) lockSession(session string) (unlock func()) {
	h := fnv.New32a()
	_, _ = h.Write([]byte(session))
	stripe := &s.stripes[h.Sum32()%sessionStripes]
	s.mu.RLock()
	stripe.Lock()
	return func() { stripe.Unlock(); s.mu.RUnlock() }
}

// New is a store of snapshots under root (a folder of Keel's state directory).
func New(root string) *Store { return &Store{Root: root, total: -1} }

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

// hashPattern is a content hash as the store names blobs; a manifest's hash must be one.
var hashPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

func (s *Store) blobPath(hash string) string {
	return filepath.Join(s.Root, "blobs", hash[:2], hash)
}

// EnsureBase records the work directory as it is now as the state after turn 0, unless the
// session has a snapshot already: called before the first change a session makes, it keeps the
// state the session started from, which every turn before that change left as it was.
func (s *Store) EnsureBase(session, workdir string) error {
	defer s.lockSession(session)()
	if turns, err := s.turns(session); err != nil || len(turns) > 0 {
		return err
	}
	_, err := s.take(session, 0, workdir)
	return err
}

// Take records the work directory as it is now as the state after turn (replacing an earlier
// snapshot of the same turn: the last change of a turn is what the turn left). A *LimitError
// says a size limit left new content out, or the whole snapshot: the manifest returned says what.
func (s *Store) Take(session string, turn int, workdir string) (Manifest, error) {
	defer s.lockSession(session)()
	return s.take(session, turn, workdir)
}

// LimitError says a size limit was reached while taking a snapshot.
type LimitError struct {
	Turn int
	// Reason names the limit and its setting.
	Reason string
	// Whole is set when no snapshot of the turn could be kept at all, not only some contents.
	Whole bool
	// Skipped counts the files whose new content was left out.
	Skipped int
}

func (e *LimitError) Error() string {
	if e.Whole {
		return fmt.Sprintf("no snapshot of the work directory after turn %d was kept: %s", e.Turn, e.Reason)
	}
	return fmt.Sprintf("the snapshot of the work directory after turn %d left out %d changed file(s): %s", e.Turn, e.Skipped, e.Reason)
}

// walker is one walk of a work directory.
type walker struct {
	s       *Store
	session string
	prev    map[Name]Entry
	m       Manifest
	usage   int64
	limited int
}

func (s *Store) take(session string, turn int, workdir string) (Manifest, error) {
	w := &walker{s: s, session: session, prev: map[Name]Entry{}, m: Manifest{Turn: turn}, usage: s.usage(session)}
	if turns, err := s.turns(session); err == nil && len(turns) > 0 {
		if m, err := s.load(session, turns[len(turns)-1]); err == nil {
			for _, e := range m.Entries {
				w.prev[e.Path] = e
			}
		}
	}
	root, err := unix.Open(filepath.Clean(workdir), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return w.m, fmt.Errorf("opening the work directory %s for its snapshot: %w", workdir, err)
	}
	w.walk(root, "", 0)
	m := w.m
	b, err := json.Marshal(m)
	if err != nil {
		return m, err
	}
	if reason := s.refuse(w.usage, int64(len(b))); reason != "" {
		s.saveUsage(session, w.usage)
		marker := Manifest{Turn: turn, Missing: reason}
		return marker, errors.Join(&LimitError{Turn: turn, Reason: reason, Whole: true}, s.save(session, marker))
	}
	if err := s.save(session, m); err != nil {
		return m, err
	}
	w.usage += diskSize(int64(len(b)))
	s.grow(diskSize(int64(len(b))))
	s.saveUsage(session, w.usage)
	if w.limited > 0 {
		return m, &LimitError{Turn: turn, Reason: m.Limit, Skipped: w.limited}
	}
	return m, nil
}

// walk records the folder open as dir (rel below the work directory) and what is below it, and
// closes dir.
func (w *walker) walk(dir int, rel string, depth int) {
	f := os.NewFile(uintptr(dir), rel)
	defer f.Close()
	for {
		// In batches, so a folder of millions of names costs no more memory than a few.
		names, err := f.Readdirnames(1024)
		if len(names) == 0 || err != nil && !errors.Is(err, io.EOF) {
			return
		}
		sort.Strings(names)
		if !w.entries(dir, rel, depth, names) {
			return
		}
	}
}

// skip lists a path left out, up to MaxSkipped of them; the rest are only counted.
func (w *walker) skip(path Name) {
	if len(w.m.Skipped) < MaxSkipped {
		w.m.Skipped = append(w.m.Skipped, path)
	} else {
		w.m.SkippedMore++
	}
}

// entries records the names of one batch of the folder open as dir; false once MaxEntries is
// reached, when the rest of the folder is left out (the folder listed as skipped).
func (w *walker) entries(dir int, rel string, depth int, names []string) bool {
	for _, n := range names {
		path := Name(n)
		if rel != "" {
			path = Name(rel + "/" + n)
		}
		if len(w.m.Entries) >= MaxEntries {
			if rel == "" {
				w.skip(path)
				continue
			}
			w.skip(Name(rel))
			return false
		}
		var st unix.Stat_t
		if err := unix.Fstatat(dir, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			w.skip(path)
			continue
		}
		perm := fs.FileMode(st.Mode & 0o777)
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			if depth+1 >= MaxDepth {
				w.skip(path)
				continue
			}
			sub, err := unix.Openat(dir, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
			if err != nil {
				w.skip(path)
				continue
			}
			w.m.Entries = append(w.m.Entries, Entry{Path: path, Mode: fs.ModeDir | perm})
			w.walk(sub, string(path), depth+1)
		case unix.S_IFLNK:
			buf := make([]byte, unix.PathMax)
			k, err := unix.Readlinkat(dir, n, buf)
			if err != nil || k == 0 || k >= len(buf) {
				w.skip(path)
				continue
			}
			w.m.Entries = append(w.m.Entries, Entry{Path: path, Mode: fs.ModeSymlink | 0o777, Link: Name(buf[:k])})
		case unix.S_IFREG:
			if e, ok := w.file(dir, n, path, perm, &st); ok {
				w.m.Entries = append(w.m.Entries, e)
			} else {
				w.skip(path)
			}
		default:
			// Named pipes, sockets and devices: nothing a fork needs, and opening one may block.
			w.skip(path)
		}
	}
	return true
}

// file describes one regular file, storing its content unless an unchanged copy is stored
// already; false means it is left out of the snapshot.
func (w *walker) file(dir int, name string, path Name, perm fs.FileMode, st *unix.Stat_t) (Entry, bool) {
	if st.Size > MaxFileSize {
		return Entry{}, false
	}
	e := Entry{Path: path, Mode: perm, Size: st.Size, ModTime: st.Mtim.Nano()}
	if p, ok := w.prev[path]; ok && hashPattern.MatchString(p.Hash) && p.Size == e.Size && p.ModTime == e.ModTime && p.Mode == e.Mode {
		e.Hash = p.Hash
		return e, true
	}
	fd, err := unix.Openat(dir, name, readFlags, 0)
	if err != nil {
		return Entry{}, false
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	hash, cost, err := w.s.storeFile(f, func(size int64) string {
		if reason := w.s.refuse(w.usage, size); reason != "" {
			w.m.Limit = reason
			w.limited++
			return reason
		}
		return ""
	})
	if err != nil {
		return Entry{}, false
	}
	w.usage += cost
	e.Hash = hash
	return e, true
}

// readFlags open a file of the work directory without following a final symbolic link and
// without waiting: the walk saw a regular file, but the model may have swapped it since for a link
// to a host file the worker can read, or for a named pipe whose open would block the worker.
const readFlags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC

// errNotRegular marks a path that was no longer a regular file when it was opened.
var errNotRegular = errors.New("no longer a regular file")

// errLimit marks content left out because a size limit was reached.
var errLimit = errors.New("over a snapshot size limit")

// store copies a file's content into the blob store under its hash, if it is still a regular file
// once opened.
func (s *Store) store(path string) (string, error) {
	f, err := os.OpenFile(path, readFlags, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	hash, _, err := s.storeFile(f, nil)
	return hash, err
}

// storeFile copies an open file's content into the blob store under its hash. refuse, when set,
// is asked before a new content of that size is kept, and a reason it gives leaves it out. cost
// is what the store grew by.
func (s *Store) storeFile(f *os.File, refuse func(size int64) string) (hash string, cost int64, err error) {
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return "", 0, errNotRegular
	}
	if err := os.MkdirAll(s.Root, 0o700); err != nil {
		return "", 0, err
	}
	tmp, err := os.CreateTemp(s.Root, "blob-*")
	if err != nil {
		return "", 0, err
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	n, err := copySparse(tmp, io.TeeReader(io.LimitReader(f, MaxFileSize+1), h))
	if err == nil && n > MaxFileSize {
		err = errors.New("the file grew past the largest a snapshot keeps")
	}
	if err != nil {
		tmp.Close()
		return "", 0, err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	dst := s.blobPath(sum)
	if _, err := os.Stat(dst); err == nil {
		tmp.Close()
		// Touched, so that a prune running now sees it in use.
		now := time.Now()
		_ = os.Chtimes(dst, now, now)
		return sum, 0, nil
	}
	cost = allocated(tmp)
	if err := tmp.Close(); err != nil {
		return "", 0, err
	}
	if refuse != nil && refuse(cost) != "" {
		return "", 0, errLimit
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return "", 0, err
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return "", 0, err
	}
	s.grow(cost)
	return sum, cost, nil
}

// copySparse copies r to f, seeking over blocks of zeroes instead of writing them, so a sparse
// file stays sparse (and a file of zeroes becomes one); n is how many bytes r gave.
func copySparse(f *os.File, r io.Reader) (n int64, err error) {
	buf := make([]byte, 64<<10)
	for {
		k, rerr := io.ReadFull(r, buf)
		if k > 0 {
			if zero(buf[:k]) {
				_, err = f.Seek(int64(k), io.SeekCurrent)
			} else {
				_, err = f.Write(buf[:k])
			}
			if err != nil {
				return n, err
			}
			n += int64(k)
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			return n, f.Truncate(n)
		}
		if rerr != nil {
			return n, rerr
		}
	}
}

func zero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// allocated is the disk space an open file takes, in bytes (its blocks, not its length).
func allocated(f *os.File) int64 {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return 0
	}
	return st.Blocks * 512
}

// diskSize rounds a length up to whole 4 KiB blocks, about what a file of it takes on disk.
func diskSize(n int64) int64 { return (n + 4095) &^ 4095 }

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
	return turnsIn(s.dir(session))
}

func turnsIn(dir string) ([]int, error) {
	names, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing the snapshots in %s: %w", dir, err)
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
// kept, or they are kept by another worker's state directory); a *MissingError when that turn's
// snapshot was not kept (a size limit) or was pruned.
func (s *Store) Find(session string, turn int) (Manifest, error) {
	turns, err := s.turns(session)
	if err != nil {
		return Manifest{}, err
	}
	for i := len(turns) - 1; i >= 0; i-- {
		if turns[i] <= turn {
			m, err := s.load(session, turns[i])
			if err == nil && m.Missing != "" {
				return m, &MissingError{Turn: m.Turn, Reason: m.Missing}
			}
			return m, err
		}
	}
	return Manifest{}, ErrNone
}

// MissingError says the snapshot a turn needs was not kept or was pruned.
type MissingError struct {
	Turn   int
	Reason string
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("the snapshot of the work directory after turn %d is not kept: %s", e.Turn, e.Reason)
}
