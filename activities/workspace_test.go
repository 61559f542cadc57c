package activities_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/keelrun/keel/activities"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/gitserver"
	"github.com/keelrun/keel/internal/workspace"
)

// TestRunToolInASourceWorkspace: a session that names a repository and commit runs its built-in
// tools in its own workspace at that commit, on whichever worker runs the call; a worker without a
// workspace root refuses the call (fatal, nothing ran), and a session that reaches a worker without
// its workspace after its first turn is told its earlier changes are not there.
func TestRunToolInASourceWorkspace(t *testing.T) {
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
	source := &contract.Source{Repo: url, Commit: commit}

	run := func(m *workspace.Manager, turn int, call contract.ToolCall, session ...string) contract.ToolResult {
		t.Helper()
		acts := &activities.Activities{Workspaces: m}
		var suite testsuite.WorkflowTestSuite
		env := suite.NewTestActivityEnvironment()
		env.RegisterActivityWithOptions(acts.RunTool, activity.RegisterOptions{Name: contract.RunToolActivity})
		id, src := "s", *source
		if len(session) > 0 {
			// A continued session: its own ID, its predecessor's workspace.
			id, src.Workspace = session[0], "s"
		}
		val, err := env.ExecuteActivity(contract.RunToolActivity, contract.ToolRequest{SessionID: id, Turn: turn, Call: call,
			ToolSettings: contract.ToolSettings{Workdir: "/nowhere", Source: &src}})
		if err != nil {
			t.Fatal(err)
		}
		var res contract.ToolResult
		if err := val.Get(&res); err != nil {
			t.Fatal(err)
		}
		return res
	}
	read := contract.ToolCall{ID: "r", Name: "read_file", Arguments: `{"path":"MARKER"}`}
	write := contract.ToolCall{ID: "w", Name: "write_file", Arguments: `{"path":"MARKER","content":"changed"}`}

	a := &workspace.Manager{Root: t.TempDir()}
	if res := run(a, 1, read); res.IsError || !strings.Contains(res.Content, "at the commit") || strings.Contains(res.Content, "moved") {
		t.Fatalf("read on the first worker: %+v", res)
	}
	if res := run(a, 2, write); res.IsError {
		t.Fatalf("write: %+v", res)
	}
	if res := run(a, 3, read); !strings.Contains(res.Content, "changed") || strings.Contains(res.Content, "moved") {
		t.Fatalf("the workspace did not keep the session's write: %+v", res)
	}
	if res := run(a, 4, read, "continued"); !strings.Contains(res.Content, "changed") || strings.Contains(res.Content, "moved") {
		t.Fatalf("a continued session did not find its predecessor's files: %+v", res)
	}
	b := &workspace.Manager{Root: t.TempDir()}
	if res := run(b, 4, read); !strings.HasPrefix(res.Content, activities.MovedNote) || !strings.Contains(res.Content, "at the commit") {
		t.Fatalf("a second worker's first call: %+v", res)
	}
	if res := run(nil, 5, read); res != activities.WorkspaceUnavailable {
		t.Fatalf("a worker without a root: %+v", res)
	}
}
