package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/codec"
)

// TestWorkspaceFencing records states of one workspace from two tool calls and checks the rules
// a stale worker meets: a call scheduled before the holder's cannot take the workspace, and a
// record from an epoch that was fenced is refused and writes nothing.
func TestWorkspaceFencing(t *testing.T) {
	ctx := context.Background()
	for name, open := range backends() {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			ws := fmt.Sprintf("ws-%s-%d", name, time.Now().UnixNano())
			t0 := time.Now().UTC().Truncate(time.Microsecond)
			a, err := s.Fence(ctx, ws, t0, "host-a call c3")
			if err != nil {
				t.Fatal(err)
			}
			b, err := s.Fence(ctx, ws, t0.Add(time.Second), "host-b call c4")
			if err != nil {
				t.Fatal(err)
			}
			if b <= a {
				t.Fatalf("the later call's epoch %d is not above the earlier's %d", b, a)
			}
			if _, err := s.Fence(ctx, ws, t0.Add(time.Millisecond), "host-a call c3 again"); !errors.Is(err, ErrFenced) {
				t.Fatalf("a call scheduled before the holder took the workspace: %v", err)
			}
			seq, err := s.Record(ctx, WorkspaceRecord{Workspace: ws, Session: ws, Turn: 4, CallID: "c4", Epoch: b, Commit: "x", Manifest: []byte(`{"turn":4}`)})
			if err != nil || seq != 1 {
				t.Fatalf("the holder's record: seq %d, %v", seq, err)
			}
			if _, err := s.Record(ctx, WorkspaceRecord{Workspace: ws, Session: ws, Turn: 3, CallID: "c3", Epoch: a, Manifest: []byte(`{"turn":3}`)}); !errors.Is(err, ErrFenced) {
				t.Fatalf("a stale epoch's record: %v", err)
			}
			latest, err := s.LatestRecord(ctx, ws)
			if err != nil || latest.CallID != "c4" || latest.Seq != 1 || string(latest.Manifest) != `{"turn":4}` {
				t.Fatalf("latest record %+v, %v; want c4's", latest, err)
			}
			if _, err := s.RecordAt(ctx, ws, 3); !errors.Is(err, ErrNotFound) {
				t.Fatalf("a record at turn 3, when the first is of turn 4: %v", err)
			}
			if r, err := s.RecordAt(ctx, ws, 9); err != nil || r.Turn != 4 {
				t.Fatalf("record at turn 9: %+v, %v", r, err)
			}
			if _, err := s.LatestRecord(ctx, ws+"-other"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("a workspace without records: %v", err)
			}
		})
	}
}

// TestWorkspaceFilesAndPrune stores contents once, and checks that a prune empties an old
// workspace's records (leaving markers that say so) and removes the contents only it named.
func TestWorkspaceFilesAndPrune(t *testing.T) {
	ctx := context.Background()
	for name, open := range backends() {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			ws := fmt.Sprintf("prune-%s-%d", name, time.Now().UnixNano())
			kept, gone := []byte("kept "+ws), []byte("gone "+ws)
			hk, hg := FileHash(kept), FileHash(gone)
			missing, err := s.MissingFiles(ctx, []string{hk, hg})
			if err != nil || len(missing) != 2 {
				t.Fatalf("missing before any put: %v, %v", missing, err)
			}
			for _, d := range [][]byte{kept, gone, gone} {
				if err := s.PutFile(ctx, FileHash(d), d); err != nil {
					t.Fatal(err)
				}
			}
			if missing, err := s.MissingFiles(ctx, []string{hk, hg}); err != nil || len(missing) != 0 {
				t.Fatalf("missing after the puts: %v, %v", missing, err)
			}
			if got, err := s.GetFile(ctx, hg); err != nil || !bytes.Equal(got, gone) {
				t.Fatalf("get: %q, %v", got, err)
			}
			epoch, err := s.Fence(ctx, ws, time.Now(), "t")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Record(ctx, WorkspaceRecord{Workspace: ws, Session: ws, Turn: 1, CallID: "c1", Epoch: epoch, Files: []string{hg}, Manifest: []byte("m")}); err != nil {
				t.Fatal(err)
			}
			other := ws + "-recent"
			epoch2, err := s.Fence(ctx, other, time.Now(), "t")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Record(ctx, WorkspaceRecord{Workspace: other, Session: other, Turn: 1, CallID: "c1", Epoch: epoch2, Files: []string{hk}, Manifest: []byte("m")}); err != nil {
				t.Fatal(err)
			}
			ageFiles(t, s, name, ws, hk, hg)
			// Records made before the cut-off of the first workspace only: the cut-off lies
			// between the two, which ageRecords arranges.
			cut := time.Now().Add(-time.Minute)
			ageRecords(t, s, name, ws, cut.Add(-time.Hour))
			dry, err := s.PruneWorkspaces(ctx, cut, true)
			if err != nil || dry.Workspaces < 1 || dry.Files < 1 {
				t.Fatalf("dry run: %+v, %v; want the old workspace and its content counted", dry, err)
			}
			if _, err := s.GetFile(ctx, hg); err != nil {
				t.Fatalf("the dry run removed a content: %v", err)
			}
			if r, err := s.LatestRecord(ctx, ws); err != nil || r.Manifest == nil {
				t.Fatalf("the dry run emptied a record: %+v, %v", r, err)
			}
			rep, err := s.PruneWorkspaces(ctx, cut, false)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Workspaces < 1 || rep.Records < 1 || rep.Files < 1 {
				t.Fatalf("prune report %+v: the old workspace's record and content should go", rep)
			}
			if _, err := s.GetFile(ctx, hg); !errors.Is(err, ErrNotFound) {
				t.Fatalf("the old workspace's content after the prune: %v", err)
			}
			if _, err := s.GetFile(ctx, hk); err != nil {
				t.Fatalf("the recent workspace's content after the prune: %v", err)
			}
			r, err := s.LatestRecord(ctx, ws)
			if err != nil || r.Manifest != nil || r.Missing == "" {
				t.Fatalf("the pruned workspace's record %+v, %v: want a marker saying it was pruned", r, err)
			}
		})
	}
}

// ageFiles makes the contents older than the prune's grace period.
func ageFiles(t *testing.T, s Store, backend, ws string, hashes ...string) {
	t.Helper()
	old := time.Now().Add(-2 * fileGrace)
	switch backend {
	case "file":
		fs := s.(*FileStore)
		for _, h := range hashes {
			if err := os.Chtimes(fs.filePath(h), old, old); err != nil {
				t.Fatal(err)
			}
		}
	case "postgres":
		if _, err := s.(*PostgresStore).pool.Exec(context.Background(), `UPDATE keel_workspace_files SET at = $1 WHERE id = ANY($2)`, old, hashes); err != nil {
			t.Fatal(err)
		}
	}
}

// ageRecords dates a workspace's records at.
func ageRecords(t *testing.T, s Store, backend, ws string, at time.Time) {
	t.Helper()
	switch backend {
	case "file":
		fs := s.(*FileStore)
		seqs, err := fs.seqs(ws)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range seqs {
			r, err := fs.readRecord(ws, q)
			if err != nil {
				t.Fatal(err)
			}
			r.At = at
			if err := writeAtomic(fs.recordPath(ws, q), r); err != nil {
				t.Fatal(err)
			}
		}
	case "postgres":
		if _, err := s.(*PostgresStore).pool.Exec(context.Background(), `UPDATE keel_workspace_records SET at = $1 WHERE workspace = $2`, at, ws); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSealedWorkspaceKeepsNothingPlain records a workspace through Sealed and checks that no
// file of the store holds its file's content or its manifest, and both come back.
func TestSealedWorkspaceKeepsNothingPlain(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	fs, err := OpenFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := codec.NewKeyring(codec.Key{ID: "k1", Secret: bytes.Repeat([]byte{1}, codec.KeySize)})
	if err != nil {
		t.Fatal(err)
	}
	st := Sealed(fs, ring)
	content := []byte("secret-workspace-content")
	h := FileHash(content)
	if err := st.PutFile(ctx, h, content); err != nil {
		t.Fatal(err)
	}
	epoch, err := st.Fence(ctx, "ws", time.Now(), "t")
	if err != nil {
		t.Fatal(err)
	}
	manifest := []byte(`{"entries":[{"path":"secret-file-name.txt"}]}`)
	if _, err := st.Record(ctx, WorkspaceRecord{Workspace: "ws", Session: "ws", Turn: 1, CallID: "c1", Epoch: epoch, Files: []string{h}, Manifest: manifest}); err != nil {
		t.Fatal(err)
	}
	err = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, secret := range []string{"secret-workspace-content", "secret-file-name"} {
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s holds %q in clear", p, secret)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := st.GetFile(ctx, h); err != nil || !bytes.Equal(got, content) {
		t.Fatalf("sealed file back: %q, %v", got, err)
	}
	if r, err := st.LatestRecord(ctx, "ws"); err != nil || !bytes.Equal(r.Manifest, manifest) {
		t.Fatalf("sealed manifest back: %q, %v", r.Manifest, err)
	}
}
