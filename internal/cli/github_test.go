package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelrun/keel/internal/contract"
)

func TestGitHubContext(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
		return p
	}
	prEvent := write("pr.json", `{"action":"synchronize","number":42,"pull_request":{"number":42,"head":{"sha":"feedface1234"}}}`)
	pushEvent := write("push.json", `{"ref":"refs/heads/main","after":"abc1234"}`)
	badEvent := write("bad.json", `{"pull_request":`)
	actions := func(kv ...string) map[string]string {
		m := map[string]string{envActions: "true", envRepository: "acme/app", envSHA: "0123abcd"}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    *contract.GitHubContext
		wantErr string
	}{
		{name: "flags", args: []string{"--repo", "acme/app", "--pr", "7", "--commit", "abcdef1"},
			want: &contract.GitHubContext{Repo: "acme/app", PR: 7, Commit: "abcdef1"}},
		{name: "flags win over Actions", args: []string{"--repo", "acme/other", "--pr", "3"}, env: actions(envEventPath, prEvent),
			want: &contract.GitHubContext{Repo: "acme/other", PR: 3}},
		{name: "--repo alone is a job key", args: []string{"--repo", "acme/app"}, env: actions(envEventPath, prEvent)},
		{name: "no flags outside Actions", env: map[string]string{envRepository: "acme/app", envRef: "refs/pull/9/merge"}},
		{name: "--pr without --repo", args: []string{"--pr", "7"}, wantErr: "--pr 7 needs --repo owner/name"},
		{name: "bad --repo", args: []string{"--repo", "app", "--pr", "7"}, wantErr: `--repo/--pr/--commit: repository "app" is not owner/name`},
		{name: "bad --pr", args: []string{"--repo", "acme/app", "--pr", "0"}, wantErr: "pull request number 0 is not 1 or more"},
		{name: "bad --commit", args: []string{"--repo", "acme/app", "--pr", "7", "--commit", "main"}, wantErr: `commit "main" is not a hex commit SHA`},
		{name: "Actions event payload, its head commit", env: actions(envEventPath, prEvent, envRef, "refs/pull/42/merge"),
			want: &contract.GitHubContext{Repo: "acme/app", PR: 42, Commit: "feedface1234"}},
		{name: "Actions GITHUB_REF when the payload has no pull request", env: actions(envEventPath, pushEvent, envRef, "refs/pull/17/merge"),
			want: &contract.GitHubContext{Repo: "acme/app", PR: 17, Commit: "0123abcd"}},
		{name: "Actions push build has no pull request", env: actions(envEventPath, pushEvent, envRef, "refs/heads/main")},
		{name: "Actions bad GITHUB_REF", env: actions(envRef, "refs/pull/x/merge"), wantErr: `GITHUB_REF="refs/pull/x/merge": "x" is not a pull request number`},
		{name: "Actions unreadable payload", env: actions(envEventPath, filepath.Join(dir, "missing.json")), wantErr: "GITHUB_EVENT_PATH: reading the event payload"},
		{name: "Actions payload not JSON", env: actions(envEventPath, badEvent), wantErr: "GITHUB_EVENT_PATH: the event payload " + badEvent + " is not JSON"},
		{name: "Actions without GITHUB_REPOSITORY", env: actions(envRepository, "", envRef, "refs/pull/5/merge"), wantErr: "GITHUB_REPOSITORY is empty"},
		{name: "Actions bad GITHUB_REPOSITORY", env: actions(envRepository, "a/b/c", envRef, "refs/pull/5/merge"), wantErr: `GitHub Actions variables (GITHUB_REPOSITORY`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var repo, commit string
			var pr int
			cmd := &cobra.Command{Use: "run"}
			cmd.Flags().StringVar(&repo, "repo", "", "")
			cmd.Flags().StringVar(&commit, "commit", "", "")
			prFlag(cmd, &pr)
			require.NoError(t, cmd.ParseFlags(tt.args))
			got, err := githubContext(cmd, repo, pr, commit, func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				var ee *exitError
				require.ErrorAs(t, err, &ee)
				assert.Equal(t, ExitUsage, ee.code)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
