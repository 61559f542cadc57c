package contract

import (
	"strings"
	"testing"
)

func TestSourceCheck(t *testing.T) {
	sha := strings.Repeat("ab", 20)
	cases := []struct {
		src     Source
		url     string
		wantErr string
	}{
		{Source{Repo: "acme/app", Commit: sha}, "https://github.com/acme/app.git", ""},
		{Source{Repo: "acme/app.git", Ref: "release/1.2"}, "https://github.com/acme/app.git", ""},
		{Source{Repo: "https://git.example.com/team/app.git", Ref: "v1.0"}, "https://git.example.com/team/app.git", ""},
		{Source{Repo: "http://127.0.0.1:8080/app.git", Commit: sha}, "http://127.0.0.1:8080/app.git", ""},
		{Source{Repo: "acme/app"}, "", "needs a commit or a ref"},
		{Source{Repo: "acme/app", Commit: sha, Ref: "main"}, "", "not both"},
		{Source{Repo: "acme/app", Commit: "abc1234"}, "", "not a full hex commit SHA"},
		{Source{Repo: "acme/app", Ref: "-x"}, "", "not a branch or tag name"},
		{Source{Repo: "acme/app", Ref: "a..b"}, "", "not a branch or tag name"},
		{Source{Repo: "acme/app", Ref: "main:refs/heads/x"}, "", "not a branch or tag name"},
		{Source{Repo: "../app", Ref: "main"}, "", "local paths and file:// are refused"},
		{Source{Repo: "/srv/app", Ref: "main"}, "", "local paths and file:// are refused"},
		{Source{Repo: "file:///srv/app", Ref: "main"}, "", "local paths and file:// are refused"},
		{Source{Repo: "ssh://git@host/app", Ref: "main"}, "", "neither owner/name nor an http(s) URL"},
		{Source{Repo: "https://user:secret@host/app", Ref: "main"}, "", "carries credentials"},
		{Source{Repo: "", Ref: "main"}, "", "the repository is empty"},
	}
	for _, c := range cases {
		err := c.src.Check()
		if c.wantErr == "" {
			if err != nil {
				t.Errorf("%+v: %v", c.src, err)
			}
			if u, _ := RepoURL(c.src.Repo, ""); u != c.url {
				t.Errorf("%+v: URL %q, want %q", c.src, u, c.url)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("%+v: got %v, want %q", c.src, err, c.wantErr)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("%+v: the error shows the password: %v", c.src, err)
		}
	}
}

// TestRepoURLAtAGitHub: owner/name is a repository of the GitHub the worker names; a URL is
// itself whatever GitHub the worker names.
func TestRepoURLAtAGitHub(t *testing.T) {
	cases := []struct{ repo, github, want string }{
		{"acme/app", "", "https://github.com/acme/app.git"},
		{"acme/app", DefaultGitHubURL, "https://github.com/acme/app.git"},
		{"acme/app.git", "https://ghe.example.com", "https://ghe.example.com/acme/app.git"},
		{"acme/app", "http://127.0.0.1:8080/", "http://127.0.0.1:8080/acme/app.git"},
		{"acme/app", "https://ghe.example.com/git", "https://ghe.example.com/git/acme/app.git"},
		{"https://git.example.com/team/app.git", "https://ghe.example.com", "https://git.example.com/team/app.git"},
	}
	for _, c := range cases {
		if got, err := RepoURL(c.repo, c.github); err != nil || got != c.want {
			t.Errorf("RepoURL(%q, %q) = %q, %v; want %q", c.repo, c.github, got, err, c.want)
		}
	}
}

func TestGitHubURL(t *testing.T) {
	cases := []struct{ raw, want, wantErr string }{
		{"https://github.com", "https://github.com", ""},
		{"https://GHE.example.com/", "https://ghe.example.com", ""},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080", ""},
		{"http://localhost:3000/", "http://localhost:3000", ""},
		{"http://[::1]:8080", "http://[::1]:8080", ""},
		{"http://ghe.example.com", "", "plain http"},
		{"https://user:secret@ghe.example.com", "", "carries credentials"},
		{"ssh://ghe.example.com", "", "not an http or https URL"},
		{"github.com", "", "not an http or https URL"},
		{"https://ghe.example.com/?x=1", "", "query or fragment"},
		{"", "", "not an http or https URL"},
	}
	for _, c := range cases {
		got, err := GitHubURL(c.raw)
		if c.wantErr == "" {
			if err != nil || got != c.want {
				t.Errorf("GitHubURL(%q) = %q, %v; want %q", c.raw, got, err, c.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("GitHubURL(%q) = %q, %v; want an error with %q", c.raw, got, err, c.wantErr)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("GitHubURL(%q): the error shows the password: %v", c.raw, err)
		}
	}
}
