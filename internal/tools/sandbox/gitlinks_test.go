//go:build linux

package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestGitlinkDirsGuarded: the submodules the index records (one with its .git a file naming
// .git/modules/lib, one a repository the model made and git-added) are found in every index
// version, their git folders are pinned with their control files read-only, and a submodule's
// .git file is bound read-only; a gitlink whose path leaves the work tree or runs through a link
// is not followed.
func TestGitlinkDirsGuarded(t *testing.T) {
	root := gitRepo(t)
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, ".git", "modules"), 0o755); err != nil {
		t.Fatal(err)
	}
	git(root, "init", "-q", "--separate-git-dir", filepath.Join(root, ".git", "modules", "lib"), "lib")
	git(filepath.Join(root, "lib"), "commit", "-q", "--allow-empty", "-m", "lib")
	git(root, "init", "-q", "sub")
	git(filepath.Join(root, "sub"), "commit", "-q", "--allow-empty", "-m", "sub")
	if err := os.WriteFile(filepath.Join(root, "sub", ".git", "config"), []byte("[core]\n\tfsmonitor = touch /tmp/canary\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(root, "add", "lib", "sub")
	// A gitlink through a link to somewhere else: never looked at.
	outside := t.TempDir()
	git(outside, "init", "-q", "elsewhere")
	git(filepath.Join(outside, "elsewhere"), "commit", "-q", "--allow-empty", "-m", "x")
	if err := os.Symlink(outside, filepath.Join(root, "away")); err != nil {
		t.Fatal(err)
	}
	git(root, "update-index", "--add", "--cacheinfo", "160000,4b825dc642cb6eb9a060e54bf8d69288fbee4904,away/elsewhere")

	for _, version := range []string{"2", "3", "4"} {
		git(root, "update-index", "--index-version", version)
		links := Gitlinks(filepath.Join(root, ".git", "index"))
		slices.Sort(links)
		if want := []string{"away/elsewhere", "lib", "sub"}; !slices.Equal(links, want) {
			t.Fatalf("index version %s: gitlinks %q, want %q", version, links, want)
		}
	}
	dirs := GitDirs(root)
	for _, d := range []string{filepath.Join(root, ".git", "modules", "lib"), filepath.Join(root, "sub", ".git")} {
		if !slices.Contains(dirs, d) {
			t.Errorf("GitDirs %q lacks %s", dirs, d)
		}
	}
	for _, d := range dirs {
		if !within(root, d) {
			t.Errorf("GitDirs names %s, outside the work tree", d)
		}
	}
	g := guardGit(root)
	for _, p := range []string{filepath.Join(root, "lib", ".git"), filepath.Join(root, "sub", ".git", "config"), filepath.Join(root, ".git", "modules", "lib", "config")} {
		if !slices.Contains(g.locks, p) {
			t.Errorf("%s is not bound read-only; locks %q", p, g.locks)
		}
	}
	if !slices.Contains(g.pins, filepath.Join(root, "sub", ".git")) {
		t.Errorf("sub/.git is not pinned; pins %q", g.pins)
	}
	for _, p := range append(g.locks, g.pins...) {
		if !within(root, p) {
			t.Errorf("%s is bound, outside the work tree", p)
		}
	}
	if Gitlinks(filepath.Join(root, "missing")) != nil || Gitlinks(filepath.Join(root, "lib", ".git")) != nil {
		t.Error("a missing file or one that is not an index has gitlinks")
	}
}
