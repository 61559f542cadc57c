package workspace

import (
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/gitserver"
)

const token = "tok-3f9a1c-never-on-disk"

// origin makes a repository on a loopback git server with one commit per marker text, and
// returns its URL and the commits in order.
func origin(t *testing.T, srv *gitserver.Server, name string, markers ...string) (string, []string) {
	t.Helper()
	bare, url := srv.Repo(t, name)
	src := t.TempDir()
	gitserver.Git(t, src, "init", "--quiet", "-b", "main")
	var commits []string
	for _, m := range markers {
		if err := os.WriteFile(filepath.Join(src, "MARKER"), []byte(m), 0o644); err != nil {
			t.Fatal(err)
		}
		gitserver.Git(t, src, "add", "-A")
		gitserver.Git(t, src, "commit", "--quiet", "-m", m)
		commits = append(commits, gitserver.Git(t, src, "rev-parse", "HEAD"))
	}
	gitserver.Git(t, src, "push", "--quiet", bare, "main")
	return url, commits
}

func newManager(t *testing.T, srv *gitserver.Server) *Manager {
	host := strings.TrimPrefix(srv.URL, "http://")
	return &Manager{Root: t.TempDir(), Token: token, TokenHost: host}
}

func TestMaterializeAtTheCommit(t *testing.T) {
	srv := gitserver.Start(t, t.TempDir(), token)
	url, commits := origin(t, srv, "app", "one", "two")
	m := newManager(t, srv)
	ctx := context.Background()
	cases := []struct {
		session string
		src     contract.Source
		marker  string
		commit  string
		fetched bool
	}{
		{"s1", contract.Source{Repo: url, Commit: commits[0]}, "one", commits[0], true},
		{"s2", contract.Source{Repo: url, Commit: commits[0]}, "one", commits[0], false}, // the cache has it
		{"s3", contract.Source{Repo: url, Ref: "main"}, "two", commits[1], true},
		{"s4", contract.Source{Repo: url, Commit: commits[1]}, "two", commits[1], false},
	}
	for _, c := range cases {
		ws, err := m.Ensure(ctx, c.session, c.src)
		if err != nil {
			t.Fatalf("%s: %v", c.session, err)
		}
		if ws.Dir != m.Dir(c.session) || ws.Commit != c.commit || ws.Fetched != c.fetched {
			t.Errorf("%s: got dir %s commit %s fetched %v, want %s %s %v", c.session, ws.Dir, ws.Commit, ws.Fetched, m.Dir(c.session), c.commit, c.fetched)
		}
		if b, _ := os.ReadFile(filepath.Join(ws.Dir, "MARKER")); string(b) != c.marker {
			t.Errorf("%s: MARKER is %q, want %q", c.session, b, c.marker)
		}
		if head := gitserver.Git(t, ws.Dir, "rev-parse", "HEAD"); head != c.commit {
			t.Errorf("%s: HEAD is %s, want %s", c.session, head, c.commit)
		}
	}
	if !srv.BasicAuthSeen() {
		t.Error("the server never saw the token")
	}
	// The session's own changes stay: a second Ensure returns the workspace as its tools left it.
	if err := os.WriteFile(filepath.Join(m.Dir("s1"), "MARKER"), []byte("edited"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := m.Ensure(ctx, "s1", contract.Source{Repo: url, Commit: commits[0]})
	if b, _ := os.ReadFile(filepath.Join(ws.Dir, "MARKER")); err != nil || string(b) != "edited" {
		t.Errorf("second Ensure: %v, MARKER %q, want the session's edit", err, b)
	}
	// Nothing on disk holds the token, and no workspace borrows from the cache or names a remote.
	basic := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + token))
	_ = filepath.WalkDir(m.Root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, _ := os.ReadFile(p)
		if strings.Contains(string(b), token) || strings.Contains(string(b), basic) {
			t.Errorf("%s holds the token", p)
		}
		return nil
	})
	if err := os.RemoveAll(filepath.Join(m.Root, "cache")); err != nil {
		t.Fatal(err)
	}
	if out := gitserver.Git(t, m.Dir("s4"), "fsck", "--no-progress"); out != "" {
		t.Errorf("a workspace without the cache: git fsck says %s", out)
	}
	if cfg := gitserver.Git(t, m.Dir("s4"), "config", "--local", "--list"); strings.Contains(cfg, "remote.") || strings.Contains(cfg, "url") {
		t.Errorf("the workspace's config names a remote:\n%s", cfg)
	}
}

func TestConcurrentSessionsOnTwoCommits(t *testing.T) {
	srv := gitserver.Start(t, t.TempDir(), "")
	url, commits := origin(t, srv, "app", "first", "second")
	m := &Manager{Root: t.TempDir()}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = m.Ensure(context.Background(), "job-"+commits[i], contract.Source{Repo: url, Commit: commits[i]})
		}()
	}
	wg.Wait()
	for i, want := range []string{"first", "second"} {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if b, _ := os.ReadFile(filepath.Join(m.Dir("job-"+commits[i]), "MARKER")); string(b) != want {
			t.Errorf("job %d reads %q, want %q", i, b, want)
		}
	}
}

// TestOwnerNameOnTheWorkersGitHub: a repository written owner/name is fetched from the GitHub
// the worker names (workspaces.github_url), and the token goes to that GitHub's host unless
// workspaces.git_token_host names another, in which case it is not sent and the fetch fails.
func TestOwnerNameOnTheWorkersGitHub(t *testing.T) {
	cases := []struct {
		name      string
		tokenHost func(srv *gitserver.Server) string
		wantErr   string
	}{
		{"token host from the GitHub URL", func(*gitserver.Server) string { return "" }, ""},
		{"token host named", func(srv *gitserver.Server) string { return strings.TrimPrefix(srv.URL, "http://") }, ""},
		{"token for another host", func(*gitserver.Server) string { return "github.com" }, "fetching "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := gitserver.Start(t, t.TempDir(), token)
			_, commits := origin(t, srv, "acme/app", "one")
			m := &Manager{Root: t.TempDir(), GitHubURL: srv.URL, Token: token, TokenHost: c.tokenHost(srv)}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			ws, err := m.Ensure(ctx, "s", contract.Source{Repo: "acme/app", Commit: commits[0]})
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), srv.URL+"/acme/app.git") {
					t.Fatalf("got %v, want an error fetching %s/acme/app.git", err, srv.URL)
				}
				if srv.BasicAuthSeen() {
					t.Error("the token went to a host other than workspaces.git_token_host")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(filepath.Join(ws.Dir, "MARKER")); string(b) != "one" {
				t.Errorf("MARKER is %q, want one", b)
			}
			if !srv.BasicAuthSeen() {
				t.Error("the server never saw the token")
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	srv := gitserver.Start(t, t.TempDir(), token)
	url, _ := origin(t, srv, "app", "one")
	cases := []struct {
		name string
		m    *Manager
		src  contract.Source
		want string
	}{
		{"no token", &Manager{Root: t.TempDir()}, contract.Source{Repo: url, Ref: "main"}, "fetching main of"},
		{"token for another host", &Manager{Root: t.TempDir(), Token: token}, contract.Source{Repo: url, Ref: "main"}, "fetching main of"},
		{"missing commit", newManager(t, srv), contract.Source{Repo: url, Commit: strings.Repeat("a", 40)}, "is not in"},
		{"local path", newManager(t, srv), contract.Source{Repo: "/etc", Ref: "main"}, "local paths and file:// are refused"},
		{"file URL", newManager(t, srv), contract.Source{Repo: "file:///etc", Ref: "main"}, "local paths and file:// are refused"},
		{"option as ref", newManager(t, srv), contract.Source{Repo: url, Ref: "--upload-pack=touch"}, "is not a branch or tag name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := c.m.Ensure(ctx, "s", c.src)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error with %q", err, c.want)
			}
			if strings.Contains(err.Error(), token) {
				t.Errorf("the error shows the token: %v", err)
			}
			if _, statErr := os.Stat(c.m.Dir("s")); statErr == nil {
				t.Error("a workspace was left in place")
			}
		})
	}
}

// TestHostileRepository checks that materializing a repository written to attack the worker runs
// nothing and leads nowhere. The worker's user has a hooks path, a filter driver, an LFS-like
// smudge and recursive submodules configured (in the test's own git configuration), and a plain
// git clone with that configuration is shown to fall for each of them first.
func TestHostileRepository(t *testing.T) {
	work := t.TempDir()
	pwned := filepath.Join(work, "pwned")
	if err := os.MkdirAll(pwned, 0o755); err != nil {
		t.Fatal(err)
	}
	hooks := filepath.Join(work, "hooks")
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hooks, "post-checkout"), []byte("#!/bin/sh\ntouch "+pwned+"/hook\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A local repository the submodule names with a file:// URL; its contents must not arrive.
	secret := filepath.Join(work, "secret")
	gitserver.Git(t, "", "init", "--quiet", "-b", "main", secret)
	if err := os.WriteFile(filepath.Join(secret, "SECRET"), []byte("the worker's secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitserver.Git(t, secret, "add", "-A")
	gitserver.Git(t, secret, "commit", "--quiet", "-m", "secret")
	secretHead := gitserver.Git(t, secret, "rev-parse", "HEAD")

	srv := gitserver.Start(t, t.TempDir(), "")
	bare, url := srv.Repo(t, "hostile")
	if err := os.WriteFile(filepath.Join(bare, "hooks", "post-checkout"), []byte("#!/bin/sh\ntouch "+pwned+"/server-hook\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(work, "src")
	gitserver.Git(t, "", "init", "--quiet", "-b", "main", src)
	files := map[string]string{
		".gitattributes": "*.txt filter=evil\n*.bin filter=lfs diff=lfs merge=lfs -text\n",
		"a.txt":          "smudge me\n",
		"b.bin":          "version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 1\n",
		".gitmodules":    "[submodule \"sub\"]\n\tpath = sub\n\turl = file://" + secret + "\n",
		"README":         "hello\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{"etc": "/etc", "up": "../..", "ok": "README", "dir/via": "../ok", "dir/out": "../up/x", "dir/loop": "../dir/loop"}
	if err := os.MkdirAll(filepath.Join(src, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(src, name)); err != nil {
			t.Fatal(err)
		}
	}
	gitserver.Git(t, src, "add", "-A")
	gitserver.Git(t, src, "update-index", "--add", "--cacheinfo", "160000,"+secretHead+",sub")
	gitserver.Git(t, src, "commit", "--quiet", "-m", "hostile")
	commit := gitserver.Git(t, src, "rev-parse", "HEAD")
	gitserver.Git(t, src, "push", "--quiet", bare, "main")

	// The worker user's configuration: everything a careless clone would run.
	gitconfig := filepath.Join(work, "gitconfig")
	conf := "[core]\n\thooksPath = " + hooks + "\n" +
		"[filter \"evil\"]\n\tsmudge = touch " + pwned + "/filter; cat\n\trequired = true\n" +
		"[filter \"lfs\"]\n\tsmudge = touch " + pwned + "/lfs; cat\n\trequired = true\n" +
		"[submodule]\n\trecurse = true\n[protocol \"file\"]\n\tallow = always\n"
	if err := os.WriteFile(gitconfig, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"} {
		t.Setenv(k, gitconfig)
	}
	t.Setenv("HOME", work)

	// The control: git with that configuration falls for the hook, both filters and the submodule.
	ctl := exec.Command("git", "clone", "--quiet", "--recurse-submodules", url, filepath.Join(work, "control"))
	if out, err := ctl.CombinedOutput(); err != nil {
		t.Fatalf("the control clone: %v\n%s", err, out)
	}
	for _, f := range []string{"hook", "filter", "lfs"} {
		if _, err := os.Stat(filepath.Join(pwned, f)); err != nil {
			ran, _ := os.ReadDir(pwned)
			t.Fatalf("the control clone did not run the %s, so this test proves nothing: %v (ran %v)", f, err, ran)
		}
	}
	if _, err := os.Stat(filepath.Join(work, "control", "sub", "SECRET")); err != nil {
		t.Fatalf("the control clone did not fetch the file:// submodule: %v", err)
	}
	if err := os.RemoveAll(pwned); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(pwned, 0o755); err != nil {
		t.Fatal(err)
	}

	m := &Manager{Root: filepath.Join(work, "root")}
	ws, err := m.Ensure(context.Background(), "hostile", contract.Source{Repo: url, Commit: commit})
	if err != nil {
		t.Fatal(err)
	}
	if ran, _ := os.ReadDir(pwned); len(ran) > 0 {
		t.Errorf("materializing ran %v", ran)
	}
	if entries, _ := os.ReadDir(filepath.Join(ws.Dir, "sub")); len(entries) > 0 {
		t.Errorf("the submodule was populated: %v", entries)
	}
	if b, _ := os.ReadFile(filepath.Join(ws.Dir, "a.txt")); string(b) != files["a.txt"] {
		t.Errorf("a.txt is %q: a filter touched it", b)
	}
	for name, target := range links {
		p := filepath.Join(ws.Dir, name)
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		isLink := fi.Mode()&os.ModeSymlink != 0
		wantLink := name == "ok" || name == "dir/via" || name == "dir/loop"
		if name == "dir/loop" {
			wantLink = false // a loop never ends inside: it is flattened like an escape
		}
		if isLink != wantLink {
			t.Errorf("%s -> %s: symlink %v, want %v", name, target, isLink, wantLink)
		}
		if !isLink {
			if b, _ := os.ReadFile(p); string(b) != target {
				t.Errorf("%s flattened to %q, want its target's text", name, b)
			}
		}
	}
	if got, want := strings.Join(ws.Flattened, ","), "dir/loop,dir/out,etc,up"; got != want {
		t.Errorf("flattened %s, want %s", got, want)
	}
	if st := gitserver.Git(t, ws.Dir, "-c", "core.hooksPath=/dev/null", "status", "--porcelain"); st != "" {
		t.Errorf("the workspace is not clean:\n%s", st)
	}
}
