package escalation

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegithub"
	"github.com/keelrun/keel/internal/devkit/samples"
)

// startGitHub runs a local GitHub with pull requests acme/widgets#7 by alice and acme/gadgets#12
// by bob.
func startGitHub(t *testing.T) *fakegithub.Server {
	t.Helper()
	gh, err := fakegithub.Start(fakegithub.Options{Token: "ghp_test"})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, gh.Close()) })
	gh.AddPR("acme/widgets", fakegithub.PR{Number: 7, Author: "alice", HeadSHA: "aaa111"})
	gh.AddPR("acme/gadgets", fakegithub.PR{Number: 12, Author: "bob", HeadSHA: "bbb222"})
	return gh
}

func TestGitHubNotifier(t *testing.T) {
	filler := make([]string, 100)
	for i := range filler {
		filler[i] = fmt.Sprintf("comment %d", i)
	}
	tests := []struct {
		name     string
		existing []string
		// by is who wrote the existing comments; empty: the token's own login.
		by         string
		enterprise bool
		wantPosts  int
	}{
		{name: "fresh pull request gets one comment", wantPosts: 1},
		{name: "through the GitHub Enterprise API root", enterprise: true, wantPosts: 1},
		{name: "marker on the second page is found", existing: append(append([]string{}, filler...), "old\n"+GitHubMarker("esc-g1")), wantPosts: 0},
		{name: "other escalations do not count", existing: []string{GitHubMarker("esc-other")}, wantPosts: 1},
		{name: "the marker in somebody else's comment does not count", existing: []string{"fake\n" + GitHubMarker("esc-g1")}, by: "mallory", wantPosts: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gh := startGitHub(t)
			for _, body := range tt.existing {
				_, err := gh.AddComment("acme/widgets", 7, cmp.Or(tt.by, gh.Login()), body)
				require.NoError(t, err)
			}
			base := gh.URL()
			if tt.enterprise {
				base = gh.EnterpriseURL()
			}
			e := samples.Escalation("esc-g1")
			e.GitHub = &contract.GitHubContext{Repo: "acme/widgets", PR: 7, Commit: "aaa111"}
			newNotifier := func() *GitHubNotifier {
				return &GitHubNotifier{BaseURL: base, Token: "ghp_test"}
			}
			require.NoError(t, newNotifier().Notify(context.Background(), e))
			// A second notifier stands for a retried activity on another worker: the marker on
			// GitHub, not memory, keeps it from posting again.
			require.NoError(t, newNotifier().Notify(context.Background(), e))

			comments := gh.Comments("acme/widgets", 7)
			require.Len(t, comments, len(tt.existing)+tt.wantPosts)
			assert.Equal(t, []string{TriageLabel}, gh.Labels("acme/widgets", 7))
			if tt.wantPosts == 1 {
				c := comments[len(comments)-1]
				assert.Equal(t, fakegithub.DefaultLogin, c.Author)
				for _, want := range []string{"@alice ", GitHubMarker("esc-g1"), "Last error: connection reset by peer",
					"`starter answer keel-0123456789abcdef0123 esc-g1 retry|edit|abort`",
					"reply comment (`/keel retry`, `/keel edit <text>`, `/keel abort`, `/keel say <text>`)"} {
					assert.Contains(t, c.Body, want)
				}
			}
			assert.Zero(t, gh.Unauthorized())
		})
	}
}

// TestGitHubNotifierPullRequest checks which pull request gets the comment: the session's own,
// else the worker's default, else none with a clear failure.
func TestGitHubNotifierPullRequest(t *testing.T) {
	tests := []struct {
		name        string
		session     *contract.GitHubContext
		defRepo     string
		defPR       int
		wantRepo    string
		wantPR      int
		wantErr     error
		wantErrText string
	}{
		{name: "the session's pull request wins over the default", session: &contract.GitHubContext{Repo: "acme/gadgets", PR: 12},
			defRepo: "acme/widgets", defPR: 7, wantRepo: "acme/gadgets", wantPR: 12},
		{name: "a session without one takes the worker's default", defRepo: "acme/widgets", defPR: 7, wantRepo: "acme/widgets", wantPR: 7},
		{name: "neither is a channel failure", wantErr: ErrNoPullRequest, wantErrText: "escalation esc-p of session keel-0123456789abcdef0123"},
		{name: "a default repository without a number is none", defRepo: "acme/widgets", wantErr: ErrNoPullRequest},
		{name: "a repository that is not owner/name", session: &contract.GitHubContext{Repo: "widgets", PR: 3}, wantErrText: `repository "widgets" is not owner/name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gh := startGitHub(t)
			e := samples.Escalation("esc-p")
			e.GitHub = tt.session
			n := &GitHubNotifier{BaseURL: gh.URL(), Token: "ghp_test", Repo: tt.defRepo, PR: tt.defPR}
			err := n.Notify(context.Background(), e)
			if tt.wantErr != nil || tt.wantErrText != "" {
				require.Error(t, err)
				if tt.wantErr != nil {
					assert.ErrorIs(t, err, tt.wantErr)
				}
				assert.Contains(t, err.Error(), tt.wantErrText)
				assert.Empty(t, gh.Requests(), "nothing is sent without a pull request")
				return
			}
			require.NoError(t, err)
			for _, pr := range []struct {
				repo string
				n    int
			}{{"acme/widgets", 7}, {"acme/gadgets", 12}} {
				want := 0
				if pr.repo == tt.wantRepo && pr.n == tt.wantPR {
					want = 1
				}
				assert.Len(t, gh.Comments(pr.repo, pr.n), want, "%s#%d", pr.repo, pr.n)
			}
		})
	}
}

func TestGitHubNotifierErrors(t *testing.T) {
	tests := []struct {
		name     string
		token    string
		pr       int
		wantCode int
		wantOp   string
	}{
		{name: "bad token", token: "wrong", pr: 7, wantCode: http.StatusUnauthorized, wantOp: "reading GET /user"},
		{name: "unknown pull request", token: "ghp_test", pr: 99, wantCode: http.StatusNotFound, wantOp: "listing comments of acme/widgets#99"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gh := startGitHub(t)
			n := &GitHubNotifier{BaseURL: gh.URL(), Token: tt.token, Repo: "acme/widgets", PR: tt.pr}
			err := n.Notify(context.Background(), samples.Escalation("esc-g2"))
			var se *StatusError
			require.True(t, errors.As(err, &se), "got %v", err)
			assert.Equal(t, tt.wantCode, se.Code)
			assert.True(t, se.Permanent())
			assert.Contains(t, err.Error(), tt.wantOp)
			assert.Empty(t, gh.Comments("acme/widgets", 7))
		})
	}
}

// TestGitHubNotifierRetriedLabel is the crash window: the comment was posted, the label call
// failed; the retry labels without a second comment.
func TestGitHubNotifierRetriedLabel(t *testing.T) {
	gh := startGitHub(t)
	gh.FailNext(http.MethodPost, "/repos/acme/widgets/issues/7/labels", http.StatusBadGateway, 1)
	n := &GitHubNotifier{BaseURL: gh.URL(), Token: "ghp_test", Repo: "acme/widgets", PR: 7}
	e := samples.Escalation("esc-g3")
	err := n.Notify(context.Background(), e)
	var se *StatusError
	require.True(t, errors.As(err, &se), "got %v", err)
	assert.False(t, se.Permanent(), "a 502 is worth retrying")
	require.NoError(t, n.Notify(context.Background(), e))
	assert.Len(t, gh.Comments("acme/widgets", 7), 1)
	assert.Equal(t, []string{TriageLabel}, gh.Labels("acme/widgets", 7))
}
