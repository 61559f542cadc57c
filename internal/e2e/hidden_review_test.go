package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegw"
)

// hiddenInit is the Go file the hostile model of TestNothingHiddenFromReview writes and hides.
const hiddenInit = "zz_init.go"

// TestNothingHiddenFromReview: a scripted hostile model, through `starter run --dev` in a git
// repository, writes a Go file with an init and a .gitignore that hides both: git status on the
// host shows nothing, but the summary at the terminal and in the jsonl names each file the
// session created and says git would not show it, and why.
func TestNothingHiddenFromReview(t *testing.T) {
	task := fakegw.CommandsTask("Leave the repository as it is.",
		`sh -c 'printf "package main\n\nfunc init() { println(1) }\n" > `+hiddenInit+`'`,
		`sh -c 'printf "`+hiddenInit+`\n.gitignore\n" > .gitignore'`,
	)
	repo := func(t *testing.T) string {
		ws := t.TempDir()
		hostGit(t, ws, "init", "-q", ".")
		if err := os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		hostGit(t, ws, "add", "main.go")
		hostGit(t, ws, "commit", "-q", "-m", "first")
		return ws
	}
	environ := env.StarterEnv(t, "KEEL_GATEWAY_FAKE=true")

	t.Run("jsonl", func(t *testing.T) {
		ws := repo(t)
		r := startLiveEnv(t, environ, "run", "--dev", "--workdir", ws, "-o", "jsonl", task).finish()
		if r.Code != 0 || r.Summary.Status != contract.StatusCompleted {
			t.Fatalf("exit %d, summary %+v\n%s", r.Code, r.Summary, r.Stderr)
		}
		if out, err := exec.Command("git", "-C", ws, "status", "--porcelain").Output(); err != nil || len(out) != 0 {
			t.Fatalf("git status shows the model's files (%v), so the test hides nothing:\n%s", err, out)
		}
		c := r.Summary.Changes
		if c == nil {
			t.Fatalf("the summary lists no changes:\n%s", r.Stdout)
		}
		want := map[string]string{hiddenInit: "ignored by .gitignore:1: " + hiddenInit, ".gitignore": "ignored by .gitignore:2: .gitignore"}
		for _, f := range c.Files {
			if w, ok := want[f.Path]; ok {
				if f.Change != contract.FileCreated || f.Hidden != w {
					t.Errorf("%s: %s, hidden %q; want created, hidden %q", f.Path, f.Change, f.Hidden, w)
				}
				delete(want, f.Path)
			}
		}
		if len(want) > 0 || c.Created != 2 || c.Hidden != 2 {
			t.Fatalf("the summary's changes %+v miss %v", c, want)
		}
	})

	t.Run("terminal", func(t *testing.T) {
		ws := repo(t)
		out, err := starterIn(environ, "run", "--dev", "--workdir", ws, task)
		if err != nil {
			t.Fatalf("starter run: %v\n%s", err, out)
		}
		for _, line := range []string{
			"files: 2 created, 0 changed, 0 deleted · 2 hidden from git status",
			"  + " + hiddenInit + "  (hidden from git status: ignored by .gitignore:1: " + hiddenInit + ")",
		} {
			if !strings.Contains(out, line) {
				t.Errorf("the terminal's summary lacks %q:\n%s", line, out)
			}
		}
	})
}
