//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gitRepo makes a repository with one commit in a new folder, without .git/info (so that a
// command can try to create it), and returns the folder, resolved.
func gitRepo(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"init", "-q", "."},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "first"},
	} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.RemoveAll(filepath.Join(dir, ".git", "info")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestGitControlFilesReadOnly runs hostile commands against a repository's control files: each
// write is refused or undone, while git add and git commit still work inside.
func TestGitControlFilesReadOnly(t *testing.T) {
	if err := Available(Config{}); err != nil {
		t.Skipf("no sandbox here: %v", err)
	}
	gitEnv := append(testEnv, "GIT_AUTHOR_NAME=m", "GIT_AUTHOR_EMAIL=m@example.com", "GIT_COMMITTER_NAME=m", "GIT_COMMITTER_EMAIL=m@example.com")
	cases := []struct {
		name   string
		script string
		undone []string
	}{
		{"append to config", `printf '[core]\n\tfsmonitor = touch /tmp/x\n' >> .git/config`, nil},
		{"git config", `git config core.fsmonitor 'touch /tmp/x'`, nil},
		{"git config alias", `git config alias.st '!touch /tmp/x'`, nil},
		{"replace config", `cp .git/config c && echo '[alias] st = !touch /tmp/x' >> c && mv -f c .git/config`, nil},
		{"remove config", `rm -f .git/config`, nil},
		{"hook", `printf '#!/bin/sh\ntouch /tmp/x\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit`, nil},
		{"hooks moved aside", `mv .git/hooks .git/h && mkdir .git/hooks`, nil},
		{"git folder moved aside", `mv .git .g && mkdir .git`, nil},
		{"info created", `mkdir -p .git/info && echo evil.go > .git/info/exclude`, []string{".git/info"}},
		{"commondir created", `echo ../evil > .git/commondir`, []string{".git/commondir"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := gitRepo(t)
			config, _ := os.ReadFile(filepath.Join(dir, ".git", "config"))
			_, rep := run(t, Config{}, dir, gitEnv, "sh", "-c", c.script)
			if !slices.Equal(rep.GitUndone, c.undone) {
				t.Errorf("undone %q, want %q", rep.GitUndone, c.undone)
			}
			now, err := os.ReadFile(filepath.Join(dir, ".git", "config"))
			if err != nil || string(now) != string(config) {
				t.Errorf(".git/config changed: %q, %v", now, err)
			}
			for _, p := range []string{".git/hooks/pre-commit", ".git/info", ".git/commondir", ".git/h", ".g"} {
				if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
					t.Errorf("%s exists after the command", p)
				}
			}
		})
	}
	t.Run("git add and commit still work", func(t *testing.T) {
		dir := gitRepo(t)
		out, rep := run(t, Config{}, dir, gitEnv, "sh", "-c", `echo hi > a && git add a && git commit -q -m second && git log --oneline | wc -l`)
		if rep.Code != 0 || strings.TrimSpace(out) != "2" || len(rep.GitUndone) > 0 {
			t.Fatalf("git add and commit in the sandbox: code %d, output %q, undone %q", rep.Code, out, rep.GitUndone)
		}
	})
	t.Run("a new repository loses its control files", func(t *testing.T) {
		dir, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		_, rep := run(t, Config{}, dir, gitEnv, "sh", "-c", `git init -q . && git config alias.st '!touch /tmp/x' && git commit -q --allow-empty -m x`)
		if rep.Code != 0 || !slices.Contains(rep.GitUndone, ".git/config") || !slices.Contains(rep.GitUndone, ".git/hooks") {
			t.Fatalf("code %d, undone %q", rep.Code, rep.GitUndone)
		}
		if out, err := exec.Command("git", "-C", dir, "log", "--oneline").CombinedOutput(); err != nil || !strings.Contains(string(out), " x") {
			t.Fatalf("the new repository's commit is gone: %v %s", err, out)
		}
	})
	t.Run("a repository git-added as a submodule loses its control files", func(t *testing.T) {
		dir := gitRepo(t)
		_, rep := run(t, Config{}, dir, gitEnv, "sh", "-c",
			`git init -q sub && git -C sub config core.fsmonitor 'touch /tmp/x' && git -C sub commit -q --allow-empty -m s && git add sub`)
		if rep.Code != 0 || !slices.Contains(rep.GitUndone, "sub/.git/config") {
			t.Fatalf("code %d, undone %q", rep.Code, rep.GitUndone)
		}
		if _, err := os.Lstat(filepath.Join(dir, "sub", ".git", "config")); err == nil {
			t.Fatal("sub/.git/config is there after the command")
		}
	})
	t.Run("a submodule's .git file repointed", func(t *testing.T) {
		dir := gitRepo(t)
		if err := os.MkdirAll(filepath.Join(dir, ".git", "modules"), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"-C", dir, "init", "-q", "--separate-git-dir", filepath.Join(dir, ".git", "modules", "lib"), "lib"},
			{"-C", filepath.Join(dir, "lib"), "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "lib"},
			{"-C", dir, "add", "lib"},
		} {
			if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		before, _ := os.ReadFile(filepath.Join(dir, "lib", ".git"))
		_, rep := run(t, Config{}, dir, gitEnv, "sh", "-c", `mkdir -p evil && echo 'gitdir: ../evil' > lib/.git; echo '[core] fsmonitor = x' >> .git/modules/lib/config; rm -f lib/.git`)
		if now, _ := os.ReadFile(filepath.Join(dir, "lib", ".git")); string(now) != string(before) {
			t.Fatalf("lib/.git changed (code %d): %q", rep.Code, now)
		}
	})
	t.Run("a .git link replaced", func(t *testing.T) {
		dir := gitRepo(t)
		if err := os.Rename(filepath.Join(dir, ".git"), filepath.Join(dir, "store")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("store", filepath.Join(dir, ".git")); err != nil {
			t.Fatal(err)
		}
		config, _ := os.ReadFile(filepath.Join(dir, "store", "config"))
		_, rep := run(t, Config{}, dir, gitEnv, "sh", "-c",
			`printf '[core]\n\tfsmonitor = x\n' >> store/config; mkdir -p evil && cp -r store/HEAD store/objects store/refs evil/ && echo '[alias] st = !x' > evil/config && rm .git && ln -s evil .git`)
		if !slices.Equal(rep.GitUndone, []string{".git"}) {
			t.Errorf("undone %q", rep.GitUndone)
		}
		if target, err := os.Readlink(filepath.Join(dir, ".git")); err != nil || target != "store" {
			t.Errorf(".git is not the link to store again: %q %v", target, err)
		}
		if now, _ := os.ReadFile(filepath.Join(dir, "store", "config")); string(now) != string(config) {
			t.Errorf("store/config changed: %q", now)
		}
	})
}

// TestGitControlFilesFromWorkers checks the same binding from a root worker (an idmapped work
// directory) and an unprivileged one (the work directory as it is), each its own process.
func TestGitControlFilesFromWorkers(t *testing.T) {
	for _, w := range workers(t) {
		t.Run(w.name, func(t *testing.T) {
			dir := gitRepo(t)
			owned := ownedDir(t, w.uid)
			if out, err := exec.Command("cp", "-a", dir+"/.", owned).CombinedOutput(); err != nil {
				t.Fatalf("copying the repository: %v %s", err, out)
			}
			if out, err := exec.Command("chown", "-R", fmt.Sprintf("%d:%d", w.uid, w.uid), owned).CombinedOutput(); err != nil {
				t.Fatalf("chown: %v %s", err, out)
			}
			config, _ := os.ReadFile(filepath.Join(owned, ".git", "config"))
			r := w.run(t, owned, "", "sh", "-c", `printf '[alias]\n\tst = !x\n' >> .git/config; mv .git .g; mkdir -p .git/info && echo x > .git/info/exclude; echo ok > file`)
			if now, _ := os.ReadFile(filepath.Join(owned, ".git", "config")); string(now) != string(config) {
				t.Errorf(".git/config changed: %q (output %q)", now, r.Out)
			}
			for _, p := range []string{".git/info", ".g"} {
				if _, err := os.Lstat(filepath.Join(owned, p)); err == nil {
					t.Errorf("%s exists after the command", p)
				}
			}
			if data, err := os.ReadFile(filepath.Join(owned, "file")); err != nil || string(data) != "ok\n" {
				t.Errorf("the command could not write the work tree: %q %v (output %q)", data, err, r.Out)
			}
		})
	}
}
