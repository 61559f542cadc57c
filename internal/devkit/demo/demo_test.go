package demo

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFixedSourceChangesOnlyTheBuggyLine(t *testing.T) {
	buggy, err := Source(SourceFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buggy, BuggyLine) {
		t.Fatalf("embedded %s lacks the buggy line %q", SourceFile, BuggyLine)
	}
	if got := strings.Replace(buggy, BuggyLine, FixedLine, 1); got != FixedSource {
		t.Fatalf("FixedSource is not the embedded source with the one line fixed:\n%s", got)
	}
}

func TestCopyWorkspaceWritesEveryFile(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "nested", "ws")
	if err := CopyWorkspace(dst); err != nil {
		t.Fatal(err)
	}
	want := []string{"README.md", SourceFile, TestFile, ModuleFile}
	if got := Files(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("Files() = %v, want %v", got, want)
	}
	for _, name := range want {
		b, err := os.ReadFile(filepath.Join(dst, name))
		if err != nil {
			t.Fatalf("copied workspace lacks %s: %v", name, err)
		}
		src, err := Source(name)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != src {
			t.Errorf("%s differs from the embedded copy", name)
		}
	}
	if _, err := os.Stat(filepath.Join(dst, moduleFileStored)); !os.IsNotExist(err) {
		t.Errorf("copy kept the stored module file name %s", moduleFileStored)
	}
}

func TestCopyWorkspaceResetsAnEditedCopy(t *testing.T) {
	dst := t.TempDir()
	if err := CopyWorkspace(dst); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dst, SourceFile)
	if err := os.WriteFile(src, []byte(FixedSource), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CopyWorkspace(dst); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), BuggyLine) {
		t.Fatalf("second copy did not restore the buggy %s", SourceFile)
	}
}

func TestWorkspaceTestsFailBeforeAndPassAfterTheFix(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	dst := t.TempDir()
	if err := CopyWorkspace(dst); err != nil {
		t.Fatal(err)
	}
	out, err := goTest(t, dst)
	if err == nil {
		t.Fatalf("tests of the buggy workspace passed:\n%s", out)
	}
	if !strings.Contains(out, "FAIL") || !strings.Contains(out, "Add(1, 2) = -1, want 3") {
		t.Fatalf("buggy workspace failed for another reason:\n%s", out)
	}
	if err := os.WriteFile(filepath.Join(dst, SourceFile), []byte(FixedSource), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := goTest(t, dst); err != nil {
		t.Fatalf("tests of the fixed workspace failed: %v\n%s", err, out)
	}
}

// goTest runs the workspace's TestCommand in dir, offline and outside any surrounding workspace.
func goTest(t *testing.T, dir string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	words := strings.Fields(TestCommand)
	cmd := exec.CommandContext(ctx, words[0], words[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "GOPROXY=off", "GOTOOLCHAIN=local", "GOCACHE="+goCache(t))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// goCache returns the build cache of the surrounding go command so the nested build is warm.
func goCache(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		return t.TempDir()
	}
	return strings.TrimSpace(string(out))
}
