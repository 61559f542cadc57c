package mcp

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/devkit/stubmcp"
)

// TestServerStartsOutsideTheWorkingDirectory starts `python3 -m NAME` from a worker whose working
// directory holds a planted NAME.py (as a session's work directory would, for a worker in
// `starter run --dev`): the genuine module on PYTHONPATH serves, the planted one never runs, and
// the server runs in a folder of the manager's own, removed on Close, or in its configured dir.
func TestServerStartsOutsideTheWorkingDirectory(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	const module = "keelstubmcp"
	genuine, work, own := t.TempDir(), t.TempDir(), t.TempDir()
	canary := filepath.Join(t.TempDir(), "canary")
	if err := os.WriteFile(filepath.Join(genuine, module+".py"), []byte(stubmcp.Module), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, module+".py"), []byte(stubmcp.Planted(canary)), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(work)
	for _, dir := range []string{"", own} {
		t.Run("dir "+dir, func(t *testing.T) {
			m := NewManager([]ServerConfig{{Name: "stub", Command: []string{"python3", "-m", module}, Env: []string{"PYTHONPATH=" + genuine}, Dir: dir}})
			res := m.Call(testCtx(t), "stub", stubmcp.Tool, "{}")
			where, _ := strings.CutPrefix(res.Content, "genuine server in ")
			if err := m.Close(); err != nil {
				t.Errorf("closing the manager: %v", err)
			}
			if _, err := os.Stat(canary); err == nil {
				t.Fatal("the planted module ran")
			}
			switch {
			case res.IsError || where == res.Content:
				t.Fatalf("the genuine server did not answer: %+v", res)
			case dir != "" && where != dir:
				t.Fatalf("the server ran in %s, not its configured dir %s", where, dir)
			case dir == "" && (where == work || !strings.Contains(filepath.Base(where), "keel-mcp-")):
				t.Fatalf("the server ran in %s, not a folder of the manager's own", where)
			}
			if _, err := os.Stat(where); dir == "" && err == nil {
				t.Fatalf("the manager's folder %s outlived Close", where)
			}
		})
	}
}
