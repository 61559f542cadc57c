package snapshot

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Settings of the retention, named in what prune writes into the markers it leaves.
const (
	KeepBytesSetting = "snapshots.keep_mb"
	KeepForSetting   = "snapshots.keep_for"
)

// orphanGrace is how old a content no snapshot refers to must be before prune removes it: a
// worker taking a snapshot right now stores contents before its manifest.
const orphanGrace = 10 * time.Minute

// PruneOptions say what to keep.
type PruneOptions struct {
	// KeepFor removes every snapshot of a session whose newest one is older; 0 keeps any age.
	KeepFor time.Duration
	// KeepBytes then removes the oldest snapshots (each session's newest last) until the store
	// takes at most this much; 0 keeps any size.
	KeepBytes int64
	// DryRun only reports what would go.
	DryRun bool
	// Now is the time ages are measured from; zero is the present.
	Now time.Time
}

// Pruned is what prune removed (or would remove) of one session.
type Pruned struct {
	// Session is the session's folder under the store (its ID, with characters a folder name
	// may not carry replaced by "_").
	Session string
	// Turns are the turns whose snapshots go; Whole says the session's folder goes entirely.
	Turns []int
	Whole bool
	// Why is "age" or "size".
	Why string
}

// PruneReport says what the store took before and after, and what went.
type PruneReport struct {
	Before, After int64
	Sessions      []Pruned
	// Contents and ContentBytes count the stored contents no remaining snapshot refers to.
	Contents     int
	ContentBytes int64
}

type turnFile struct {
	session string
	turn    int
	path    string
	mtime   time.Time
	size    int64
	hashes  []string
	marker  bool
	removed bool
}

// Prune removes snapshots by the retention in o, then every stored content no remaining
// snapshot refers to. A removed turn's manifest is replaced by a small marker, so fork says the
// turn was pruned instead of restoring an earlier turn's files; a session removed whole loses its
// folder. Run while workers snapshot, a content a snapshot took in the same moment may go with the
// old ones (fork then names the file it cannot restore).
func (s *Store) Prune(o PruneOptions) (PruneReport, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	start := time.Now()
	rep := PruneReport{Before: Usage(s.Root)}
	sessions, err := os.ReadDir(s.Root)
	if os.IsNotExist(err) {
		return rep, nil
	}
	if err != nil {
		return rep, fmt.Errorf("listing the snapshots in %s: %w", s.Root, err)
	}
	bySession := map[string][]*turnFile{}
	var names []string
	refs := map[string]int{}
	for _, d := range sessions {
		if !d.IsDir() || d.Name() == "blobs" {
			continue
		}
		dir := filepath.Join(s.Root, d.Name())
		turns, err := turnsIn(dir)
		if err != nil {
			return rep, err
		}
		names = append(names, d.Name())
		for _, t := range turns {
			tf := &turnFile{session: d.Name(), turn: t, path: filepath.Join(dir, "turn-"+strconv.Itoa(t)+".json")}
			info, err := os.Lstat(tf.path)
			if err != nil {
				continue
			}
			tf.mtime, tf.size = info.ModTime(), blocks(info)
			var m Manifest
			if b, err := os.ReadFile(tf.path); err == nil && json.Unmarshal(b, &m) == nil {
				tf.marker = m.Missing != ""
				for _, e := range m.Entries {
					if e.Hash != "" {
						tf.hashes = append(tf.hashes, e.Hash)
						refs[e.Hash]++
					}
				}
			}
			bySession[d.Name()] = append(bySession[d.Name()], tf)
		}
	}
	blobs := map[string]fs.FileInfo{}
	_ = filepath.WalkDir(filepath.Join(s.Root, "blobs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				blobs[d.Name()] = info
			}
		}
		return nil
	})
	// current follows what the store would take as snapshots go.
	current := rep.Before
	for h, info := range blobs {
		if refs[h] == 0 && now.Sub(info.ModTime()) > orphanGrace {
			current -= blocks(info)
		}
	}
	freed := map[string]bool{}
	drop := func(tf *turnFile) {
		if tf.removed {
			return
		}
		tf.removed = true
		current -= tf.size
		for _, h := range tf.hashes {
			if refs[h]--; refs[h] == 0 {
				freed[h] = true
				if info, ok := blobs[h]; ok && !info.ModTime().After(start) {
					current -= blocks(info)
				}
			}
		}
	}
	whole := map[string]string{}
	newest := func(name string) *turnFile {
		var n *turnFile
		for _, tf := range bySession[name] {
			if n == nil || tf.mtime.After(n.mtime) {
				n = tf
			}
		}
		return n
	}
	if o.KeepFor > 0 {
		for _, name := range names {
			if n := newest(name); n == nil || now.Sub(n.mtime) > o.KeepFor {
				whole[name] = "age"
				for _, tf := range bySession[name] {
					drop(tf)
				}
			}
		}
	}
	turnsGone := map[string][]int{}
	if o.KeepBytes > 0 && current > o.KeepBytes {
		var old []*turnFile
		for _, name := range names {
			n := newest(name)
			for _, tf := range bySession[name] {
				if tf != n && !tf.marker && !tf.removed {
					old = append(old, tf)
				}
			}
		}
		sort.SliceStable(old, func(i, j int) bool { return old[i].mtime.Before(old[j].mtime) })
		for _, tf := range old {
			if current <= o.KeepBytes {
				break
			}
			drop(tf)
			turnsGone[tf.session] = append(turnsGone[tf.session], tf.turn)
		}
		// Still over: whole sessions go, the one touched longest ago first.
		sort.SliceStable(names, func(i, j int) bool {
			a, b := newest(names[i]), newest(names[j])
			return a != nil && (b == nil || a.mtime.Before(b.mtime))
		})
		for _, name := range names {
			if current <= o.KeepBytes {
				break
			}
			if _, ok := whole[name]; ok {
				continue
			}
			whole[name] = "size"
			for _, tf := range bySession[name] {
				drop(tf)
			}
		}
	}
	for _, name := range names {
		if why, ok := whole[name]; ok {
			p := Pruned{Session: name, Whole: true, Why: why}
			for _, tf := range bySession[name] {
				p.Turns = append(p.Turns, tf.turn)
			}
			rep.Sessions = append(rep.Sessions, p)
		} else if t := turnsGone[name]; len(t) > 0 {
			sort.Ints(t)
			rep.Sessions = append(rep.Sessions, Pruned{Session: name, Turns: t, Why: "size"})
		}
	}
	var gone []string
	for h, info := range blobs {
		if refs[h] == 0 && !info.ModTime().After(start) && (now.Sub(info.ModTime()) > orphanGrace || freed[h]) {
			gone = append(gone, h)
			rep.Contents++
			rep.ContentBytes += blocks(info)
		}
	}
	if o.DryRun {
		rep.After = max(current, 0)
		return rep, nil
	}
	reason := fmt.Sprintf("pruned on %s to keep the snapshots under %d MiB (%s) and %s (%s)",
		now.UTC().Format(time.DateOnly), o.KeepBytes>>20, KeepBytesSetting, o.KeepFor, KeepForSetting)
	for _, p := range rep.Sessions {
		if p.Whole {
			if err := os.RemoveAll(filepath.Join(s.Root, p.Session)); err != nil {
				return rep, fmt.Errorf("removing the snapshots of %s: %w", p.Session, err)
			}
			continue
		}
		for _, t := range p.Turns {
			if err := s.save(p.Session, Manifest{Turn: t, Missing: reason}); err != nil {
				return rep, err
			}
		}
	}
	for _, h := range gone {
		if err := os.Remove(s.blobPath(h)); err != nil && !os.IsNotExist(err) {
			return rep, fmt.Errorf("removing a stored content: %w", err)
		}
	}
	removeStaleTemps(s.Root, now)
	s.totalMu.Lock()
	s.total = -1
	s.totalMu.Unlock()
	rep.After = Usage(s.Root)
	return rep, nil
}

// removeStaleTemps removes contents a snapshot began to store and never finished (a worker that
// died mid-copy).
func removeStaleTemps(root string, now time.Time) {
	names, _ := os.ReadDir(root)
	for _, d := range names {
		if strings.HasPrefix(d.Name(), "blob-") {
			if info, err := d.Info(); err == nil && now.Sub(info.ModTime()) > orphanGrace {
				os.Remove(filepath.Join(root, d.Name()))
			}
		}
	}
}
