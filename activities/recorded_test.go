package activities_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/keelrun/keel/activities"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/gitserver"
	"github.com/keelrun/keel/internal/store"
	"github.com/keelrun/keel/internal/tools/snapshot"
	"github.com/keelrun/keel/internal/workspace"
)

// host is one worker of TestRecordedWorkspaceFollowsTheSession: its own workspace root and
// state directory, sharing only the store with the others.
type host struct {
	m     *workspace.Manager
	snaps *snapshot.Store
}

func newHost(t *testing.T, st store.Store, recordBytes int64) host {
	snaps := snapshot.New(t.TempDir())
	return host{snaps: snaps, m: &workspace.Manager{Root: t.TempDir(), States: st, Snapshots: snaps, RecordBytes: recordBytes}}
}

// TestRecordedWorkspaceFollowsTheSession runs a session on a repository on host A for three
// turns, then on host B, which has never seen it: B restores the workspace as the last tool
// result left it (git included) and tells the model from which turn. A stale call of A (scheduled
// before B took the workspace) runs nothing and its record is refused; A then forgets its copy.
// A fork of turn 2 on a third host starts from turn 2's files, and a workspace over the record
// limit makes a restore elsewhere fail, saying so.
func TestRecordedWorkspaceFollowsTheSession(t *testing.T) {
	srv := gitserver.Start(t, t.TempDir(), "")
	bare, url := srv.Repo(t, "app")
	src := t.TempDir()
	gitserver.Git(t, src, "init", "--quiet", "-b", "main")
	if err := os.WriteFile(filepath.Join(src, "MARKER"), []byte("at the commit"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitserver.Git(t, src, "add", "-A")
	gitserver.Git(t, src, "commit", "--quiet", "-m", "one")
	commit := gitserver.Git(t, src, "rev-parse", "HEAD")
	gitserver.Git(t, src, "push", "--quiet", bare, "main")
	st, err := store.OpenFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}

	run := func(h host, session string, source contract.Source, turn int, call contract.ToolCall) contract.ToolResult {
		t.Helper()
		acts := &activities.Activities{Workspaces: h.m, Snapshots: h.snaps, Store: st}
		var suite testsuite.WorkflowTestSuite
		env := suite.NewTestActivityEnvironment()
		env.RegisterActivityWithOptions(acts.RunTool, activity.RegisterOptions{Name: contract.RunToolActivity})
		val, err := env.ExecuteActivity(contract.RunToolActivity, contract.ToolRequest{SessionID: session, Turn: turn, Call: call,
			ToolSettings: contract.ToolSettings{Workdir: "/nowhere", Source: &source}})
		if err != nil {
			t.Fatal(err)
		}
		var res contract.ToolResult
		if err := val.Get(&res); err != nil {
			t.Fatal(err)
		}
		return res
	}
	write := func(id, path, content string) contract.ToolCall {
		return contract.ToolCall{ID: id, Name: "write_file", Arguments: `{"path":"` + path + `","content":"` + content + `"}`}
	}
	read := func(id, path string) contract.ToolCall {
		return contract.ToolCall{ID: id, Name: "read_file", Arguments: `{"path":"` + path + `"}`}
	}
	source := contract.Source{Repo: url, Commit: commit}
	a, b := newHost(t, st, 0), newHost(t, st, 0)
	for i, w := range []contract.ToolCall{write("c1", "MARKER", "turn 1"), write("c2", "notes.txt", "turn 2"), write("c3", "MARKER", "turn 3")} {
		if res := run(a, "s", source, i+1, w); res.IsError {
			t.Fatalf("turn %d on host A: %+v", i+1, res)
		}
	}
	// A holds a call of turn 4 that B will overtake: taken now, recorded after B's.
	stale, err := a.m.Fence(context.Background(), "s", time.Now(), "host A, turn 4")
	if err != nil {
		t.Fatal(err)
	}

	res := run(b, "s", source, 4, read("c4", "MARKER"))
	if !strings.HasPrefix(res.Content, activities.RestoredNote(3)) || !strings.Contains(res.Content, "turn 3") {
		t.Fatalf("host B's first call: %+v; want turn 3's MARKER, with the note", res)
	}
	if res := run(b, "s", source, 4, read("c5", "notes.txt")); !strings.Contains(res.Content, "turn 2") || strings.Contains(res.Content, "Note:") {
		t.Fatalf("host B's second call: %+v", res)
	}
	dirB := b.m.Dir("s")
	if head := gitserver.Git(t, dirB, "rev-parse", "HEAD"); head != commit {
		t.Errorf("the restored repository's HEAD is %s, want %s", head, commit)
	}
	if status := gitserver.Git(t, dirB, "status", "--porcelain"); !strings.Contains(status, "M MARKER") || !strings.Contains(status, "?? notes.txt") {
		t.Errorf("git status in the restored workspace:\n%s", status)
	}
	if res := run(b, "s", source, 5, write("c6", "MARKER", "turn 5")); res.IsError {
		t.Fatalf("host B's write: %+v", res)
	}

	// The stale call: it cannot take the workspace back, and what it records is refused.
	if _, err := a.m.Fence(context.Background(), "s", time.Now().Add(-time.Hour), "host A, an older call"); !errors.Is(err, store.ErrFenced) {
		t.Errorf("a call scheduled before the holder took the workspace: %v", err)
	}
	if err := os.WriteFile(filepath.Join(a.m.Dir("s"), "MARKER"), []byte("stale write"), 0o644); err != nil {
		t.Fatal(err)
	}
	man, err := a.snaps.Take("s", 4, a.m.Dir("s"))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.m.Record(context.Background(), stale, "s", 4, "c4-stale", a.snaps, man); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("the stale call's record: %v, want refused", err)
	}
	if rec, err := st.LatestRecord(context.Background(), "s"); err != nil || rec.CallID != "c6" {
		t.Fatalf("the store's newest record after the stale one: %+v, %v; want B's c6", rec, err)
	}
	if res := run(a, "s", source, 6, read("c7", "MARKER")); !strings.Contains(res.Content, "turn 5") || strings.Contains(res.Content, "stale") {
		t.Fatalf("host A after it lost the session: %+v; want B's turn 5, restored", res)
	}

	// The session ends; a host that never saw it pushes its newest state, and only its branch.
	d := newHost(t, st, 0)
	br, err := d.m.Push(context.Background(), contract.PushRequest{SessionID: "s", Source: source, Message: "the session's summary", At: time.Now()})
	if err != nil || br.Commit == "" {
		t.Fatalf("push from a fresh host: %+v, %v", br, err)
	}
	if refs := gitserver.Git(t, bare, "for-each-ref", "--format=%(refname)"); refs != "refs/heads/keel/s\nrefs/heads/main" {
		t.Errorf("the server's refs after the push:\n%s", refs)
	}
	for path, want := range map[string]string{"MARKER": "turn 5", "notes.txt": "turn 2"} {
		if got := gitserver.Git(t, bare, "show", "keel/s:"+path); got != want {
			t.Errorf("the pushed branch's %s is %q, want %q", path, got, want)
		}
	}

	// A fork of turn 2, on a host that never saw the session.
	c := newHost(t, st, 0)
	fork := source
	fork.From = &contract.WorkspaceAt{Session: "s", Turn: 2}
	if res := run(c, "fork", fork, 3, read("f1", "MARKER")); !strings.Contains(res.Content, "turn 1") || strings.Contains(res.Content, "Note:") {
		t.Fatalf("the fork's MARKER: %+v; want turn 1's", res)
	}
	if res := run(c, "fork", fork, 3, read("f2", "notes.txt")); !strings.Contains(res.Content, "turn 2") {
		t.Fatalf("the fork's notes.txt: %+v; want turn 2's", res)
	}

	// Over the record limit: recorded as missing; another host refuses to go on from it.
	small := newHost(t, st, 10)
	if res := run(small, "big", source, 1, write("b1", "big.txt", "more than ten bytes")); res.IsError {
		t.Fatalf("a write over the record limit: %+v", res)
	}
	rec, err := st.LatestRecord(context.Background(), "big")
	if err != nil || !strings.Contains(rec.Missing, "workspaces.record_mb") || rec.Manifest != nil {
		t.Fatalf("the record over the limit: %+v, %v", rec, err)
	}
	res = run(newHost(t, st, 10), "big", source, 2, read("b2", "big.txt"))
	if res.Live = nil; res != activities.WorkspaceUnrestorable {
		t.Fatalf("a restore of a workspace over the limit: %+v", res)
	}
}
