package workspace

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/store"
	"github.com/keelrun/keel/internal/textfmt"
	"github.com/keelrun/keel/internal/tools/snapshot"
)

// packDir holds the repository's packs: they come from the origin (the worker's cache), so a
// record leaves them out and a restore takes them from a fresh checkout of the commit.
const packDir = ".git/objects/pack"

// recordedMark is the file of a session's directory that names the record its work directory
// matches: a worker whose copy is older than the store's newest record (another worker went on
// with the session) restores instead of using it.
const recordedMark = "recorded"

// Recording is a workspace's writer for one tool call: what Fence returned.
type Recording struct {
	Workspace string
	Epoch     int64
}

// Fence makes the tool call (scheduled at `at`) the writer of the session's workspace in the
// store; store.ErrFenced says a later call holds it and this one must change nothing. Without a
// store (States nil) it returns a zero Recording and records nothing.
func (m *Manager) Fence(ctx context.Context, workspace string, at time.Time, holder string) (Recording, error) {
	if m.States == nil {
		return Recording{}, nil
	}
	epoch, err := m.States.Fence(ctx, workspace, at, holder)
	if err != nil {
		return Recording{}, err
	}
	return Recording{Workspace: workspace, Epoch: epoch}, nil
}

// RecordLimitError says a workspace was over the record limit: its state was not recorded, and a
// restore of it elsewhere fails saying so.
type RecordLimitError struct {
	Turn       int
	Bytes, Max int64
}

func (e *RecordLimitError) Error() string {
	return fmt.Sprintf("the workspace after turn %d holds %s, over the record limit of %s (workspaces.record_mb): its state was not recorded, "+
		"so the session cannot continue on another worker from it", e.Turn, mib(e.Bytes), mib(e.Max))
}

// Record stores the workspace's state after one tool result (m, the snapshot the worker took of
// it; snaps holds its contents) in the store: the contents the store lacks, then the record,
// which the store refuses (store.ErrFenced) when another call took the workspace meanwhile. A
// refused worker forgets its copy, so it never works from it again. A workspace over
// RecordBytes is recorded as missing, with a *RecordLimitError.
func (m *Manager) Record(ctx context.Context, r Recording, session string, turn int, callID string, snaps *snapshot.Store, man snapshot.Manifest) error {
	if m.States == nil || r.Epoch == 0 {
		return nil
	}
	sdir := m.sessionDir(r.Workspace)
	commit, err := os.ReadFile(filepath.Join(sdir, "ready"))
	if err != nil {
		return fmt.Errorf("reading the workspace's commit: %w", err)
	}
	rec := store.WorkspaceRecord{Workspace: r.Workspace, Session: session, Turn: turn, CallID: callID, Epoch: r.Epoch, Commit: strings.TrimSpace(string(commit))}
	man = withoutPacks(man)
	var size int64
	var hashes []string
	seen := map[string]bool{}
	for _, e := range man.Entries {
		if e.Mode.IsRegular() && !seen[e.Hash] {
			seen[e.Hash] = true
			hashes = append(hashes, e.Hash)
			size += e.Size
		}
	}
	var limit error
	switch {
	case man.Missing != "" || man.Limit != "":
		rec.Missing = "the worker's snapshot of the workspace was not whole: " + man.Missing + man.Limit
	case m.RecordBytes > 0 && size > m.RecordBytes:
		limit = &RecordLimitError{Turn: turn, Bytes: size, Max: m.RecordBytes}
		rec.Missing = limit.Error()
	default:
		missing, err := m.States.MissingFiles(ctx, hashes)
		if err != nil {
			return fmt.Errorf("recording the workspace: %w", err)
		}
		for _, h := range missing {
			data, err := snaps.ReadBlob(h)
			if err != nil {
				return fmt.Errorf("reading a workspace file to record: %w", err)
			}
			if err := m.States.PutFile(ctx, h, data); err != nil {
				return fmt.Errorf("recording the workspace: %w", err)
			}
		}
		rec.Files = hashes
		if rec.Manifest, err = packManifest(man); err != nil {
			return err
		}
	}
	seq, err := m.States.Record(ctx, rec)
	if errors.Is(err, store.ErrFenced) {
		// Another worker went on with the session: this copy is stale, and must never be used.
		_ = os.Remove(filepath.Join(sdir, recordedMark))
		_ = os.Remove(filepath.Join(sdir, "ready"))
		return err
	}
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(sdir, recordedMark), []byte(strconv.FormatInt(seq, 10)), 0o600); err != nil {
		return fmt.Errorf("marking the workspace recorded: %w", err)
	}
	return limit
}

// withoutPacks is the manifest less the repository's packs (packDir keeps its folder entry).
func withoutPacks(m snapshot.Manifest) snapshot.Manifest {
	out := m
	out.Entries = nil
	for _, e := range m.Entries {
		if !strings.HasPrefix(string(e.Path), packDir+"/") {
			out.Entries = append(out.Entries, e)
		}
	}
	out.Skipped = nil
	for _, p := range m.Skipped {
		if !strings.HasPrefix(string(p), packDir+"/") {
			out.Skipped = append(out.Skipped, p)
		}
	}
	return out
}

// packManifest is a manifest as a record keeps it: JSON, compressed (its hashes and names repeat
// little, its syntax a lot).
func packManifest(m snapshot.Manifest) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(m); err != nil {
		return nil, fmt.Errorf("encoding the workspace's manifest: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// maxManifest bounds a manifest's decompressed size: MaxEntries entries of long names fit.
const maxManifest = 256 << 20

func unpackManifest(b []byte) (snapshot.Manifest, error) {
	var m snapshot.Manifest
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return m, fmt.Errorf("reading the recorded manifest: %w", err)
	}
	if err := json.NewDecoder(io.LimitReader(zr, maxManifest)).Decode(&m); err != nil {
		return m, fmt.Errorf("decoding the recorded manifest: %w", err)
	}
	return m, nil
}

// RestoreError says a recorded workspace could not be restored; the session's tools do not run.
type RestoreError struct {
	Turn int
	Err  error
}

func (e *RestoreError) Error() string {
	return fmt.Sprintf("restoring the workspace as recorded after turn %d: %v", e.Turn, e.Err)
}

func (e *RestoreError) Unwrap() error { return e.Err }

// latest is the store's newest record of the workspace, if the store has one.
func (m *Manager) latest(ctx context.Context, workspace string) (*store.WorkspaceRecord, error) {
	if m.States == nil {
		return nil, nil
	}
	rec, err := m.States.LatestRecord(ctx, workspace)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the workspace's newest record: %w", err)
	}
	return &rec, nil
}

// from is the record a new workspace starts from (src.From), if it names one the store has.
func (m *Manager) from(ctx context.Context, src contract.Source) (*store.WorkspaceRecord, error) {
	if m.States == nil || src.From == nil {
		return nil, nil
	}
	rec, err := m.States.RecordAt(ctx, src.From.Session, src.From.Turn)
	if errors.Is(err, store.ErrNotFound) {
		// No tool wrote before that turn: the commit's checkout is the state after it.
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the record of %s after turn %d: %w", src.From.Session, src.From.Turn, err)
	}
	return &rec, nil
}

// matches says whether the session's directory holds the work directory as of record seq.
func matches(sdir string, seq int64) bool {
	b, err := os.ReadFile(filepath.Join(sdir, recordedMark))
	return err == nil && strings.TrimSpace(string(b)) == strconv.FormatInt(seq, 10)
}

// restore makes a work directory in sdir as rec recorded it: a fresh checkout of rec's commit
// gives the repository's packs, the store gives every other file. It returns the directory.
func (m *Manager) restore(ctx context.Context, src contract.Source, rec store.WorkspaceRecord, sdir string) (Workspace, error) {
	fail := func(err error) (Workspace, error) { return Workspace{}, &RestoreError{Turn: rec.Turn, Err: err} }
	if rec.Missing != "" {
		return fail(errors.New(rec.Missing))
	}
	if m.Snapshots == nil {
		return fail(errors.New("this worker keeps no snapshots (no state directory), which a restore writes through"))
	}
	man, err := unpackManifest(rec.Manifest)
	if err != nil {
		return fail(err)
	}
	if err := snapshot.Check(man); err != nil {
		return fail(err)
	}
	for _, e := range man.Entries {
		if !e.Mode.IsRegular() || m.Snapshots.HasBlob(e.Hash) {
			continue
		}
		data, err := m.States.GetFile(ctx, e.Hash)
		if err != nil {
			return fail(fmt.Errorf("fetching %s: %w", snapshot.Printable(string(e.Path)), err))
		}
		if err := m.Snapshots.PutBlob(e.Hash, data); err != nil {
			return fail(fmt.Errorf("keeping %s: %w", snapshot.Printable(string(e.Path)), err))
		}
	}
	at := src
	at.Commit, at.Ref = rec.Commit, ""
	fresh, err := m.materialize(ctx, at, sdir)
	if err != nil {
		return fail(err)
	}
	defer func() { _ = os.RemoveAll(fresh.Dir) }()
	dst := filepath.Join(sdir, "work."+randomHex())
	if err := m.Snapshots.Restore(man, dst); err != nil {
		_ = os.RemoveAll(dst)
		return fail(err)
	}
	if err := movePacks(filepath.Join(fresh.Dir, packDir), dst); err != nil {
		_ = os.RemoveAll(dst)
		return fail(fmt.Errorf("putting the repository's objects in place: %w", err))
	}
	return Workspace{Dir: dst, Commit: rec.Commit, Fetched: fresh.Fetched}, nil
}

// movePacks moves the fresh checkout's packs into the restored repository's pack folder under
// root, when the recorded workspace has one as a real folder: the model may have removed .git, or
// made a part of the way a link (to a host folder, say), and no pack is moved through a link.
func movePacks(src, root string) error {
	dst := root
	for _, part := range strings.Split(packDir, "/") {
		dst = filepath.Join(dst, part)
		info, err := os.Lstat(dst)
		if errors.Is(err, os.ErrNotExist) || err == nil && !info.IsDir() {
			return nil
		}
		if err != nil {
			return err
		}
	}
	names, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := os.Rename(filepath.Join(src, n.Name()), filepath.Join(dst, n.Name())); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
	}
	return nil
}

// Restored describes a workspace restored from the store.
type Restored struct {
	Turn   int
	CallID string
	// Session is the session whose record it was (another one for a fork).
	Session string
	// Own says the record was the workspace's own newest one (the session went on from it
	// elsewhere), not the record a fork starts from.
	Own bool
}

// mib writes a size in MiB, rounded up, so a size just over a limit never reads as equal to it;
// a size under 1 MiB in bytes.
func mib(n int64) string {
	if n < 1<<20 {
		return textfmt.Count(n, "byte")
	}
	return strconv.FormatInt((n+(1<<20)-1)>>20, 10) + " MiB"
}
