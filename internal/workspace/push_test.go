package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/gitserver"
)

// TestPushCarriesTheWorkspaceAndNothingElse: a session's workspace, changed (a file written, one
// deleted, one edited) and with its .git rewritten the way a hostile model would (a pushurl to
// another repository, hooks through core.hooksPath and the hooks folder, an fsmonitor, an alias,
// an include, its branch and HEAD moved to a commit of its own), is pushed as keel/<session>:
// the branch's tree is exactly the workspace's files, its parent the start commit, no other ref
// of the server moves, the other repository gets nothing and no canary is written. Pushing again
// is the same commit; a workspace with no change, a worker with pushing off and a session whose
// workspace is elsewhere push nothing and say why.
func TestPushCarriesTheWorkspaceAndNothingElse(t *testing.T) {
	srv := gitserver.Start(t, t.TempDir(), token)
	url, commits := origin(t, srv, "app", "one", "two")
	evilBare, evilURL := srv.Repo(t, "evil")
	bare := filepath.Join(srv.Root, "app.git")
	m := newManager(t, srv)
	ctx := context.Background()
	src := contract.Source{Repo: url, Commit: commits[0]}
	ws, err := m.Ensure(ctx, "s1", src)
	if err != nil {
		t.Fatal(err)
	}
	write := func(rel, text string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(ws.Dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
	}
	canary := filepath.Join(t.TempDir(), "canary")
	hook := "#!/bin/sh\necho ran >> " + canary + "\n"
	// The model's own commit in the workspace, which Keel must not push.
	write("model-commit.txt", "from the model's commit\n", 0o644)
	gitserver.Git(t, ws.Dir, "add", "-A")
	gitserver.Git(t, ws.Dir, "commit", "--quiet", "-m", "the model's commit")
	modelCommit := gitserver.Git(t, ws.Dir, "rev-parse", "HEAD")
	if err := os.Remove(filepath.Join(ws.Dir, "model-commit.txt")); err != nil {
		t.Fatal(err)
	}
	write("NEW.txt", "written by the session\n", 0o644)
	write("dir/nested.txt", "nested\n", 0o644)
	if err := os.Remove(filepath.Join(ws.Dir, "MARKER")); err != nil {
		t.Fatal(err)
	}
	write(".git/hooks-evil/pre-push", hook, 0o755)
	write(".git/hooks-evil/pre-commit", hook, 0o755)
	write(".git/hooks-evil/post-index-change", hook, 0o755)
	write(".git/hooks/pre-push", hook, 0o755)
	write(".git/hooks/reference-transaction", hook, 0o755)
	write(".git/fsmonitor.sh", hook, 0o755)
	write(".git/included", "[core]\n\tfsmonitor = "+filepath.Join(ws.Dir, ".git/fsmonitor.sh")+"\n", 0o644)
	write(".git/config", "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\thooksPath = "+filepath.Join(ws.Dir, ".git/hooks-evil")+
		"\n\tfsmonitor = "+filepath.Join(ws.Dir, ".git/fsmonitor.sh")+"\n[include]\n\tpath = included\n"+
		"[alias]\n\tpush = !sh -c 'echo ran >> "+canary+"'\n\tadd = !sh -c 'echo ran >> "+canary+"'\n"+
		"[remote \"origin\"]\n\turl = "+evilURL+"\n\tpushurl = "+evilURL+"\n"+
		"[url \""+evilURL+"\"]\n\tpushInsteadOf = "+url+"\n\tinsteadOf = "+url+"\n", 0o644)
	write(".git/HEAD", modelCommit+"\n", 0o644)
	write(".git/refs/heads/keel/s1", modelCommit+"\n", 0o644)
	refsBefore := gitserver.Git(t, bare, "for-each-ref")
	evilBefore := gitserver.Git(t, evilBare, "for-each-ref")

	at := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	req := contract.PushRequest{SessionID: "s1", Source: src, Message: "add NEW.txt\n\nKeel session s1.", At: at}
	br, err := m.Push(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !br.Pushed || br.Name != "keel/s1" || br.Parent != commits[0] || br.Commit == "" || br.Commit == modelCommit {
		t.Fatalf("pushed %+v, want keel/s1 on %s", br, commits[0])
	}
	if got := gitserver.Git(t, bare, "rev-parse", "refs/heads/keel/s1"); got != br.Commit {
		t.Errorf("the server's keel/s1 is %s, want %s", got, br.Commit)
	}
	if got := gitserver.Git(t, bare, "rev-parse", br.Commit+"^"); got != commits[0] {
		t.Errorf("the branch's parent is %s, want the start commit %s", got, commits[0])
	}
	files := gitserver.Git(t, bare, "ls-tree", "-r", "--name-only", br.Commit)
	if files != "NEW.txt\ndir/nested.txt" {
		t.Errorf("the branch holds\n%s\nwant NEW.txt and dir/nested.txt (MARKER deleted, no .git, not the model's commit)", files)
	}
	if got := gitserver.Git(t, bare, "show", br.Commit+":NEW.txt"); got != "written by the session" {
		t.Errorf("NEW.txt on the branch is %q", got)
	}
	if msg := gitserver.Git(t, bare, "log", "-1", "--format=%B", br.Commit); !strings.HasPrefix(msg, "add NEW.txt") {
		t.Errorf("the commit's message is %q", msg)
	}
	after := gitserver.Git(t, bare, "for-each-ref")
	var others []string
	for _, l := range strings.Split(after, "\n") {
		if !strings.HasSuffix(l, "refs/heads/keel/s1") {
			others = append(others, l)
		}
	}
	if strings.Join(others, "\n") != refsBefore {
		t.Errorf("refs other than keel/s1 changed:\n%s\nthen\n%s", refsBefore, after)
	}
	if got := gitserver.Git(t, evilBare, "for-each-ref"); got != evilBefore {
		t.Errorf("the repository the workspace's config pointed at got a push:\n%s", got)
	}
	if _, err := os.Stat(canary); err == nil {
		t.Error("a hook, alias or fsmonitor of the workspace's .git ran")
	}

	// A retry builds and pushes the same commit.
	again, err := m.Push(ctx, req)
	if err != nil || again.Commit != br.Commit || !again.Pushed {
		t.Errorf("pushing again: %+v, %v; want the same commit %s", again, err, br.Commit)
	}

	cases := []struct {
		name    string
		m       *Manager
		session string
		note    string
	}{
		{"no change", m, "s2", NoteNoChanges},
		{"pushing off", &Manager{Root: m.Root, NoPush: true}, "s1", NotePushOff},
		{"workspace elsewhere", m, "s3", NoteNoWorkspace},
	}
	if _, err := m.Ensure(ctx, "s2", src); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.m.Push(ctx, contract.PushRequest{SessionID: c.session, Source: src, Message: "x", At: at})
			if err != nil || got.Pushed || got.Note != c.note {
				t.Errorf("got %+v, %v; want nothing pushed with the note %q", got, err, c.note)
			}
		})
	}
	if got := gitserver.Git(t, bare, "for-each-ref", "refs/heads/keel/"); !strings.HasSuffix(got, "refs/heads/keel/s1") || strings.Count(got, "\n") != 0 {
		t.Errorf("the server's keel branches are %q, want keel/s1 alone", got)
	}
}
