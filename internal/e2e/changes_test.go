package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/devkit/demo"
)

// TestDiffAndUndo: after the demo fixed calc.go, `starter diff` of the session shows the buggy
// line going and the fixed one coming; `undo` after a hand edit of calc.go is refused and leaves
// the edit; once calc.go is as the session left it, `undo` puts it back as the session found it,
// and a second undo finds nothing left to take back.
func TestDiffAndUndo(t *testing.T) {
	environ := env.StarterEnv(t, "KEEL_GATEWAY_FAKE=true")
	run := startLiveEnv(t, environ, "demo", "-o", "jsonl").finish()
	if run.Code != 0 {
		t.Fatalf("the demo exited %d:\n%s", run.Code, run.Stderr)
	}
	wid, ws := run.Summary.WorkflowID, run.Workspace()
	short := wid[strings.LastIndexByte(wid, '-')+1:]
	calc := filepath.Join(ws, demo.SourceFile)
	original, err := demo.Source(demo.SourceFile)
	if err != nil {
		t.Fatal(err)
	}

	out, err := starterIn(environ, "diff", short)
	if err != nil || !strings.Contains(out, "M "+demo.SourceFile) || !strings.Contains(out, "- "+demo.BuggyLine) || !strings.Contains(out, "+ "+demo.FixedLine) {
		t.Fatalf("starter diff: %v; want calc.go with the buggy line removed and the fixed one added:\n%s", err, out)
	}

	if err := os.WriteFile(calc, []byte("edited by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = starterIn(environ, "undo", short)
	if err == nil || !strings.Contains(out, "changed since") || !strings.Contains(out, "nothing was changed") {
		t.Fatalf("undo over a hand edit: %v; want a refusal saying calc.go changed since:\n%s", err, out)
	}
	if got := readFile(t, calc); got != "edited by hand\n" {
		t.Fatalf("a refused undo changed calc.go to %q", got)
	}

	if err := os.WriteFile(calc, []byte(demo.FixedSource), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = starterIn(environ, "undo", short)
	if err != nil || !strings.Contains(out, "took back turn") {
		t.Fatalf("undo: %v\n%s", err, out)
	}
	if got := readFile(t, calc); got != original {
		t.Fatalf("calc.go after undo:\n%s\nwant as the session found it:\n%s", got, original)
	}
	// The demo changed nothing else: the next undo has nothing to take back.
	out, err = starterIn(environ, "undo", short)
	if err == nil || !strings.Contains(out, "nothing to undo") {
		t.Fatalf("a second undo: %v; want nothing to undo:\n%s", err, out)
	}
}

// bashCompletion is the library cobra's bash completion script calls (bash-completion's), which
// an interactive bash on Debian loads from /etc/bash.bashrc; the test's bash reads no rc file.
const bashCompletion = "/usr/share/bash-completion/bash_completion"

// TestCompletionOffersSessionIDs: with the starter's bash completion loaded, Tab after `starter
// watch` offers the session's ID (not the files of the current directory), and so does zsh's.
func TestCompletionOffersSessionIDs(t *testing.T) {
	environ := env.StarterEnv(t, "KEEL_GATEWAY_FAKE=true")
	run := startLiveEnv(t, environ, "demo", "-o", "jsonl").finish()
	if run.Code != 0 {
		t.Fatalf("the demo exited %d:\n%s", run.Code, run.Stderr)
	}
	wid := run.Summary.WorkflowID
	// The ID but its last two characters; a file in the current directory starts the same, so
	// a shell that offers file names completes to it.
	prefix, file := wid[:len(wid)-2], wid[:len(wid)-2]+"-a-file"
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, file), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if filepath.Base(starter) != "starter" {
		t.Fatalf("the starter is built as %s; the completion scripts answer to the name starter", starter)
	}
	path := "PATH=" + filepath.Dir(starter) + ":$PATH"
	t.Run("bash", func(t *testing.T) {
		s := startShell(t, environ)
		s.typeLine("cd " + dir + " && export " + path + " && source " + bashCompletion + " && source <(starter completion bash)")
		s.tmux("send-keys", "-l", "starter watch "+prefix)
		s.key("Tab")
		s.waitScreen(20*time.Second, "the session's ID completed", func(sc string) bool {
			return strings.Contains(sc, "starter watch "+wid) && !strings.Contains(sc, file)
		})
	})
	t.Run("zsh", func(t *testing.T) {
		s := startShell(t, environ)
		s.typeLine("cd " + dir + " && exec zsh -f")
		s.typeLine("export " + path + "; autoload -U compinit && compinit -u && source <(starter completion zsh)")
		s.tmux("send-keys", "-l", "starter watch "+prefix)
		s.key("Tab")
		s.waitScreen(20*time.Second, "the session's ID completed", func(sc string) bool {
			return strings.Contains(sc, "starter watch "+wid) && !strings.Contains(sc, file)
		})
	})
}

// TestApprovalAndWatchShowDiffs: at the terminal, the approval prompt of the demo's write of
// calc.go shows the buggy line going and the fixed one coming before the person says yes; a
// later `starter watch` of the ended session shows the same diff under the write's result,
// compared with calc.go as it was before that turn (it is fixed now).
func TestApprovalAndWatchShowDiffs(t *testing.T) {
	environ := env.StarterEnv(t, "KEEL_TOOLS_APPROVAL=writes", "KEEL_GATEWAY_FAKE=true")
	s := startShell(t, environ)
	s.typeLine(starter + ` demo; echo "exit=$?"`)
	wid := s.sessionStarted(t)
	// Every call that writes asks; approve each until the write of calc.go asks.
	approved := 0
	var sc string
	if !waitFor(3*time.Minute, func() bool {
		sc = s.screen()
		if strings.Contains(sc, "approve write_file") || strings.Contains(sc, "approve edit_file") {
			return true
		}
		if n := strings.Count(sc, "[y]es / [n]o"); n > approved {
			approved = n
			s.key("y")
		}
		return false
	}) {
		t.Fatalf("no approval of the write of calc.go:\n%s", sc)
	}
	sc = s.waitText(10*time.Second, "[y]es / [n]o")
	ask := strings.LastIndex(sc, "approve ")
	gone, came := strings.LastIndex(sc, "- "+demo.BuggyLine), strings.LastIndex(sc, "+ "+demo.FixedLine)
	if gone < 0 || came < 0 || came > ask {
		t.Fatalf("the approval prompt shows no diff of calc.go above it:\n%s", sc)
	}
	// Approve this call and every later one until the demo ends.
	if !waitFor(3*time.Minute, func() bool {
		sc = s.screen()
		if exitLine.MatchString(sc) {
			return true
		}
		if n := strings.Count(sc, "[y]es / [n]o"); n > approved {
			approved = n
			s.key("y")
		}
		return false
	}) {
		t.Fatalf("the demo did not end:\n%s", sc)
	}
	if code := s.waitExit(time.Second); code != "0" {
		t.Fatalf("the demo exited %s:\n%s", code, s.screen())
	}

	w := startShell(t, environ)
	w.typeLine(starter + " watch " + wid + `; echo "exit=$?"`)
	w.waitExit(60 * time.Second)
	sc = w.screen()
	result := strings.Index(sc, "[write_file result]")
	if result < 0 {
		result = strings.Index(sc, "[edit_file result]")
	}
	if result < 0 || !strings.Contains(sc[result:], "- "+demo.BuggyLine) || !strings.Contains(sc[result:], "+ "+demo.FixedLine) {
		t.Fatalf("watch's replay shows no diff of calc.go under the write's result:\n%s", sc)
	}
}
