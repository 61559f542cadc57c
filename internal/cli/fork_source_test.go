package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/store"
	"github.com/keelrun/keel/internal/tools/snapshot"
)

// TestForkSource: the fork of a session on a repository names the original's record at the turn
// (with its commit), or the commit when no tool had written by then; it falls back to this
// machine's snapshots only when the store has nothing and they do, and refuses a turn whose
// record was not kept and a continued session with no record of its own.
func TestForkSource(t *testing.T) {
	ctx := context.Background()
	st, err := store.OpenFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const x, y = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	record := func(session string, turn int, missing string) {
		epoch, err := st.Fence(ctx, session, time.Now(), "t")
		if err != nil {
			t.Fatal(err)
		}
		rec := store.WorkspaceRecord{Workspace: session, Session: session, Turn: turn, CallID: "c", Epoch: epoch, Commit: y, Missing: missing}
		if missing == "" {
			rec.Manifest = []byte("m")
		}
		if _, err := st.Record(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	record("kept", 2, "")
	record("over", 2, "the workspace after turn 2 holds 2 GiB, over the record limit")
	snaps := snapshot.New(t.TempDir())
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := snaps.Take("legacy", 1, work); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		session, workspace string
		turn               int
		recorded           bool
		from, commit       string
		refused            string
	}{
		{session: "kept", turn: 3, recorded: true, from: "kept", commit: y},
		{session: "kept", turn: 1, recorded: true, from: "kept", commit: x}, // before any write: the commit
		{session: "over", turn: 2, refused: "over the record limit"},
		{session: "legacy", turn: 1, recorded: false},
		{session: "continued", workspace: "earlier", turn: 1, refused: "fork earlier"},
	}
	for _, c := range cases {
		in := contract.SessionInput{}
		in.Source = &contract.Source{Repo: "https://git.example.com/app.git", Commit: x, Workspace: c.workspace}
		recorded, err := forkSource(ctx, st, snaps, &in, c.session, c.turn)
		if c.refused != "" {
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != ExitUsage || !strings.Contains(err.Error(), c.refused) {
				t.Errorf("%s at %d: %v, want refused with %q", c.session, c.turn, err, c.refused)
			}
			continue
		}
		if err != nil || recorded != c.recorded {
			t.Errorf("%s at %d: recorded %v, %v; want %v", c.session, c.turn, recorded, err, c.recorded)
			continue
		}
		if !recorded {
			continue
		}
		src := in.Source
		if src.From == nil || src.From.Session != c.from || src.From.Turn != c.turn || src.Commit != c.commit || src.Ref != "" || src.Workspace != "" {
			t.Errorf("%s at %d: source %+v from %+v; want from %s, commit %s", c.session, c.turn, src, src.From, c.from, c.commit)
		}
	}
}
