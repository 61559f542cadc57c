package activities_test

import (
	"os"
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/keelrun/keel/activities"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/contract"
)

// TestRunToolRefusesWorkdirWithWorkerFiles: a worker runs no built-in tool of a session whose work
// directory holds the worker's own state, store or configuration file, or lies in its sandbox
// cache. The call changes nothing and is fatal, so the session asks a person; anywhere else the
// tool runs.
func TestRunToolRefusesWorkdirWithWorkerFiles(t *testing.T) {
	cases := []struct {
		name string
		// setup places the worker's files relative to the session's work directory and returns
		// the configuration file to load ("" for none) and the overrides.
		setup   func(t *testing.T, workdir string) (string, map[string]any)
		refused bool
	}{
		{name: "a work directory of its own", refused: false, setup: func(t *testing.T, _ string) (string, map[string]any) {
			return "", map[string]any{config.DevStateDir: t.TempDir()}
		}},
		{name: "the state folder inside", refused: true, setup: func(_ *testing.T, wd string) (string, map[string]any) {
			return "", map[string]any{config.DevStateDir: filepath.Join(wd, ".keel")}
		}},
		{name: "the store inside", refused: true, setup: func(t *testing.T, wd string) (string, map[string]any) {
			return "", map[string]any{config.DevStateDir: t.TempDir(), config.StorePath: filepath.Join(wd, "sub", "store")}
		}},
		{name: "the configuration file inside", refused: true, setup: func(t *testing.T, wd string) (string, map[string]any) {
			file := filepath.Join(wd, "keel.yaml")
			if err := os.WriteFile(file, []byte("gateway:\n  fake: true\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return file, map[string]any{config.DevStateDir: t.TempDir()}
		}},
		{name: "in the sandbox cache", refused: true, setup: func(t *testing.T, wd string) (string, map[string]any) {
			return "", map[string]any{config.DevStateDir: t.TempDir(), config.ToolsSandboxCache: filepath.Dir(wd)}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, k := range []string{"KEEL_CONFIG", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"} {
				t.Setenv(k, "")
			}
			t.Setenv("HOME", t.TempDir())
			workdir := filepath.Join(t.TempDir(), "repo")
			if err := os.Mkdir(workdir, 0o755); err != nil {
				t.Fatal(err)
			}
			file, overrides := c.setup(t, workdir)
			overrides[config.GatewayFake] = true
			cfg, err := config.Load(file, nil, overrides)
			if err != nil {
				t.Fatal(err)
			}
			acts := &activities.Activities{Tools: activities.DefaultTools{CheckWorkdir: cfg.CheckWorkdir}}
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestActivityEnvironment()
			env.RegisterActivityWithOptions(acts.RunTool, activity.RegisterOptions{Name: contract.RunToolActivity})
			call := contract.ToolCall{ID: "c1", Name: "write_file", Arguments: `{"path":"planted.txt","content":"x"}`}
			val, err := env.ExecuteActivity(contract.RunToolActivity, contract.ToolRequest{SessionID: "s", Turn: 1, Call: call, ToolSettings: contract.ToolSettings{Workdir: workdir}})
			if err != nil {
				t.Fatalf("a refusal failed the activity: %v", err)
			}
			var res contract.ToolResult
			if err := val.Get(&res); err != nil {
				t.Fatal(err)
			}
			_, statErr := os.Stat(filepath.Join(workdir, "planted.txt"))
			res.Live = nil // the call's live events, for watchers
			if c.refused {
				if res != activities.WorkdirRefused || statErr == nil {
					t.Fatalf("result %+v (file written: %v); want the fatal refusal and no file", res, statErr == nil)
				}
				return
			}
			if res.IsError || statErr != nil {
				t.Fatalf("result %+v, file: %v; want the write done", res, statErr)
			}
		})
	}
}
