package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The file store keeps workspaces under workspaces/: files/ holds contents by hash, ws/<digest>/
// a workspace's records (one file each, named by sequence number), its epoch and its lock, and
// sessions/<digest> the workspace a session's records went to.
func (s *FileStore) wsDir(workspace string) string {
	return filepath.Join(s.dir, "workspaces", "ws", keyDigest(workspace))
}

func (s *FileStore) filePath(hash string) string {
	return filepath.Join(s.dir, "workspaces", "files", hash[:2], hash)
}

func (s *FileStore) sessionLink(session string) string {
	return filepath.Join(s.dir, "workspaces", "sessions", keyDigest(session))
}

func keyDigest(s string) string { return FileHash([]byte(s))[:32] }

var hexHash = regexp.MustCompile(`^[0-9a-f]{64}$`)

func checkHash(h string) error {
	if !hexHash.MatchString(h) {
		return fmt.Errorf("%q is not a content hash", h)
	}
	return nil
}

// epochFile is a workspace's writer.
type epochFile struct {
	Epoch  int64     `json:"epoch"`
	At     time.Time `json:"at"`
	Holder string    `json:"holder"`
}

// lockWorkspace takes the workspace's lock: the file store serves the workers of one machine,
// which flock orders.
func (s *FileStore) lockWorkspace(workspace string) (func(), error) {
	dir := s.wsDir(workspace)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("making the workspace's folder in the store: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the workspace's lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("taking the workspace's lock: %w", err)
	}
	return func() { _ = f.Close() }, nil
}

func (s *FileStore) readEpoch(workspace string) (epochFile, error) {
	var e epochFile
	b, err := os.ReadFile(filepath.Join(s.wsDir(workspace), "epoch.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return e, nil
	}
	if err != nil {
		return e, err
	}
	return e, json.Unmarshal(b, &e)
}

// Fence implements Workspaces.
func (s *FileStore) Fence(_ context.Context, workspace string, at time.Time, holder string) (int64, error) {
	unlock, err := s.lockWorkspace(workspace)
	if err != nil {
		return 0, err
	}
	defer unlock()
	e, err := s.readEpoch(workspace)
	if err != nil {
		return 0, fmt.Errorf("reading the workspace's epoch: %w", err)
	}
	if at.Before(e.At) {
		return 0, fmt.Errorf("fencing the workspace for %s: %w (%s)", holder, ErrFenced, e.Holder)
	}
	e = epochFile{Epoch: e.Epoch + 1, At: at, Holder: holder}
	if err := writeAtomic(filepath.Join(s.wsDir(workspace), "epoch.json"), e); err != nil {
		return 0, fmt.Errorf("writing the workspace's epoch: %w", err)
	}
	return e.Epoch, nil
}

// MissingFiles implements Workspaces.
func (s *FileStore) MissingFiles(_ context.Context, hashes []string) ([]string, error) {
	var out []string
	now := time.Now()
	for _, h := range hashes {
		if err := checkHash(h); err != nil {
			return nil, err
		}
		if err := os.Chtimes(s.filePath(h), now, now); err != nil {
			out = append(out, h)
		}
	}
	return out, nil
}

// PutFile implements Workspaces.
func (s *FileStore) PutFile(_ context.Context, hash string, data []byte) error {
	if err := checkHash(hash); err != nil {
		return err
	}
	p := s.filePath(hash)
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	if err := writeFileAtomic(p, data, 0o700); err != nil {
		return fmt.Errorf("storing a workspace file: %w", err)
	}
	return nil
}

// GetFile implements Workspaces.
func (s *FileStore) GetFile(_ context.Context, hash string) ([]byte, error) {
	if err := checkHash(hash); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(s.filePath(hash))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("workspace file %s: %w", hash[:12], ErrNotFound)
	}
	return b, err
}

// Record implements Workspaces.
func (s *FileStore) Record(_ context.Context, rec WorkspaceRecord) (int64, error) {
	unlock, err := s.lockWorkspace(rec.Workspace)
	if err != nil {
		return 0, err
	}
	defer unlock()
	e, err := s.readEpoch(rec.Workspace)
	if err != nil {
		return 0, fmt.Errorf("reading the workspace's epoch: %w", err)
	}
	if e.Epoch != rec.Epoch {
		return 0, fmt.Errorf("recording the workspace after turn %d: %w (%s, epoch %d; this call's is %d)", rec.Turn, ErrFenced, e.Holder, e.Epoch, rec.Epoch)
	}
	seqs, err := s.seqs(rec.Workspace)
	if err != nil {
		return 0, err
	}
	rec.Seq, rec.At = 1, time.Now().UTC()
	if len(seqs) > 0 {
		rec.Seq = seqs[len(seqs)-1] + 1
	}
	if err := writeAtomic(s.recordPath(rec.Workspace, rec.Seq), rec); err != nil {
		return 0, fmt.Errorf("recording the workspace after turn %d: %w", rec.Turn, err)
	}
	if err := os.MkdirAll(filepath.Dir(s.sessionLink(rec.Session)), 0o700); err != nil {
		return 0, err
	}
	if err := os.WriteFile(s.sessionLink(rec.Session), []byte(rec.Workspace), 0o600); err != nil {
		return 0, fmt.Errorf("indexing the session's workspace: %w", err)
	}
	return rec.Seq, nil
}

func (s *FileStore) recordPath(workspace string, seq int64) string {
	return filepath.Join(s.wsDir(workspace), fmt.Sprintf("rec-%012d.json", seq))
}

// seqs are the workspace's record numbers, in order.
func (s *FileStore) seqs(workspace string) ([]int64, error) {
	names, err := os.ReadDir(s.wsDir(workspace))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing the workspace's records: %w", err)
	}
	var out []int64
	for _, n := range names {
		num, ok := strings.CutSuffix(strings.TrimPrefix(n.Name(), "rec-"), ".json")
		if v, err := strconv.ParseInt(num, 10, 64); ok && err == nil {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

func (s *FileStore) readRecord(workspace string, seq int64) (WorkspaceRecord, error) {
	var rec WorkspaceRecord
	b, err := os.ReadFile(s.recordPath(workspace, seq))
	if err != nil {
		return rec, fmt.Errorf("reading record %d of the workspace: %w", seq, err)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, fmt.Errorf("decoding record %d of the workspace: %w", seq, err)
	}
	return rec, nil
}

// LatestRecord implements Workspaces.
func (s *FileStore) LatestRecord(_ context.Context, workspace string) (WorkspaceRecord, error) {
	seqs, err := s.seqs(workspace)
	if err != nil {
		return WorkspaceRecord{}, err
	}
	if len(seqs) == 0 {
		return WorkspaceRecord{}, fmt.Errorf("no recorded workspace: %w", ErrNotFound)
	}
	return s.readRecord(workspace, seqs[len(seqs)-1])
}

// RecordAt implements Workspaces.
func (s *FileStore) RecordAt(_ context.Context, session string, turn int) (WorkspaceRecord, error) {
	ws, err := os.ReadFile(s.sessionLink(session))
	if errors.Is(err, fs.ErrNotExist) {
		return WorkspaceRecord{}, fmt.Errorf("no recorded workspace of %s: %w", session, ErrNotFound)
	}
	if err != nil {
		return WorkspaceRecord{}, err
	}
	seqs, err := s.seqs(string(ws))
	if err != nil {
		return WorkspaceRecord{}, err
	}
	for i := len(seqs) - 1; i >= 0; i-- {
		rec, err := s.readRecord(string(ws), seqs[i])
		if err != nil {
			return WorkspaceRecord{}, err
		}
		if rec.Session == session && rec.Turn <= turn {
			return rec, nil
		}
	}
	return WorkspaceRecord{}, fmt.Errorf("no recorded workspace of %s at turn %d: %w", session, turn, ErrNotFound)
}

// PruneWorkspaces implements Workspaces.
func (s *FileStore) PruneWorkspaces(_ context.Context, before time.Time, dryRun bool) (WorkspacePrune, error) {
	var rep WorkspacePrune
	root := filepath.Join(s.dir, "workspaces", "ws")
	dirs, err := os.ReadDir(root)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return rep, err
	}
	used := map[string]bool{}
	now := time.Now()
	for _, d := range dirs {
		var recs []WorkspaceRecord
		var paths []string
		names, err := filepath.Glob(filepath.Join(root, d.Name(), "rec-*.json"))
		if err != nil {
			return rep, err
		}
		for _, p := range names {
			b, err := os.ReadFile(p)
			if err != nil {
				return rep, err
			}
			var rec WorkspaceRecord
			if err := json.Unmarshal(b, &rec); err != nil {
				return rep, fmt.Errorf("decoding %s: %w", p, err)
			}
			recs, paths = append(recs, rec), append(paths, p)
		}
		if len(recs) == 0 {
			continue
		}
		newest := recs[len(recs)-1].At
		if !newest.Before(before) {
			for _, r := range recs {
				for _, h := range r.Files {
					used[h] = true
				}
			}
			continue
		}
		emptied := 0
		for i, r := range recs {
			if r.Manifest == nil && r.Missing != "" {
				continue
			}
			emptied++
			if dryRun {
				continue
			}
			r.Files, r.Manifest, r.Missing = nil, nil, PrunedNote(now)
			if err := writeAtomic(paths[i], r); err != nil {
				return rep, err
			}
		}
		if emptied > 0 {
			rep.Workspaces++
			rep.Records += emptied
		}
	}
	files, _ := filepath.Glob(filepath.Join(s.dir, "workspaces", "files", "*", "*"))
	for _, p := range files {
		h := filepath.Base(p)
		if used[h] || !hexHash.MatchString(h) {
			continue
		}
		info, err := os.Stat(p)
		if err != nil || now.Sub(info.ModTime()) < fileGrace {
			continue
		}
		rep.Files++
		rep.Bytes += info.Size()
		if !dryRun {
			if err := os.Remove(p); err != nil {
				return rep, err
			}
		}
	}
	return rep, nil
}
