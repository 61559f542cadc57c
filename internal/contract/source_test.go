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
			if u, _ := RepoURL(c.src.Repo); u != c.url {
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
