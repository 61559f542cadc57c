package fakegithub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"testing"

	"github.com/google/go-github/v84/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	testRepo  = "acme/widgets"
	testToken = "ghp_fake"
)

// start runs a server with one pull request (#7 by alice, 45 changed files) and a go-github
// client on it, through the root or the GitHub Enterprise /api/v3/ prefix.
func start(t *testing.T, enterprise bool) (*Server, *github.Client) {
	t.Helper()
	s, err := Start(Options{Token: testToken})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	files := make([]File, 45)
	for i := range files {
		files[i] = File{Name: fmt.Sprintf("pkg/f%02d.go", i), Additions: i, Deletions: 1}
	}
	s.AddPR(testRepo, PR{Number: 7, Author: "alice", HeadSHA: "abc123", Title: "Widgets", Files: files})
	c := github.NewClient(nil).WithAuthToken(testToken)
	if enterprise {
		c, err = c.WithEnterpriseURLs(s.BaseURL(), s.BaseURL())
		require.NoError(t, err)
	} else {
		c.BaseURL, err = url.Parse(s.URL())
		require.NoError(t, err)
	}
	return s, c
}

func TestCommentsThroughGoGitHub(t *testing.T) {
	for _, enterprise := range []bool{false, true} {
		t.Run(fmt.Sprintf("enterprise=%v", enterprise), func(t *testing.T) {
			s, c := start(t, enterprise)
			ctx := context.Background()
			for i := range 75 {
				_, err := s.AddComment(testRepo, 7, "bob", fmt.Sprintf("comment %d", i))
				require.NoError(t, err)
			}
			posted, resp, err := c.Issues.CreateComment(ctx, "acme", "widgets", 7, &github.IssueComment{Body: github.Ptr("hello")})
			require.NoError(t, err)
			assert.Equal(t, http.StatusCreated, resp.StatusCode)
			assert.Equal(t, DefaultLogin, posted.GetUser().GetLogin())

			var bodies []string
			for ic, err := range c.Issues.ListCommentsIter(ctx, "acme", "widgets", 7, &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 30}}) {
				require.NoError(t, err)
				bodies = append(bodies, ic.GetBody())
			}
			require.Len(t, bodies, 76, "every page is read through the Link header")
			assert.Equal(t, "comment 0", bodies[0])
			assert.Equal(t, "hello", bodies[75])

			_, _, err = c.Issues.EditComment(ctx, "acme", "widgets", posted.GetID(), &github.IssueComment{Body: github.Ptr("edited")})
			require.NoError(t, err)
			got, _, err := c.Issues.GetComment(ctx, "acme", "widgets", posted.GetID())
			require.NoError(t, err)
			assert.Equal(t, "edited", got.GetBody())

			_, err = c.Issues.DeleteComment(ctx, "acme", "widgets", posted.GetID())
			require.NoError(t, err)
			assert.Len(t, s.Comments(testRepo, 7), 75)
			_, err = c.Issues.DeleteComment(ctx, "acme", "widgets", posted.GetID())
			assertStatus(t, err, http.StatusNotFound)
		})
	}
}

func TestPullRequestLabelsAndFiles(t *testing.T) {
	s, c := start(t, false)
	ctx := context.Background()
	pr, _, err := c.PullRequests.Get(ctx, "acme", "widgets", 7)
	require.NoError(t, err)
	assert.Equal(t, "alice", pr.GetUser().GetLogin())
	assert.Equal(t, "abc123", pr.GetHead().GetSHA())

	var names []string
	for f, err := range c.PullRequests.ListFilesIter(ctx, "acme", "widgets", 7, &github.ListOptions{PerPage: 20}) {
		require.NoError(t, err)
		names = append(names, f.GetFilename())
	}
	require.Len(t, names, 45)
	assert.Equal(t, "pkg/f44.go", names[44])

	for range 2 {
		labels, _, err := c.Issues.AddLabelsToIssue(ctx, "acme", "widgets", 7, []string{"needs-human-triage"})
		require.NoError(t, err)
		require.Len(t, labels, 1)
	}
	assert.Equal(t, []string{"needs-human-triage"}, s.Labels(testRepo, 7), "adding a label twice keeps one")

	_, _, err = c.PullRequests.Get(ctx, "acme", "widgets", 8)
	assertStatus(t, err, http.StatusNotFound)
	_, _, err = c.Issues.CreateComment(ctx, "acme", "widgets", 8, &github.IssueComment{Body: github.Ptr("x")})
	assertStatus(t, err, http.StatusNotFound)
	_, _, err = c.Issues.CreateComment(ctx, "acme", "widgets", 7, &github.IssueComment{})
	assertStatus(t, err, http.StatusUnprocessableEntity)
}

func TestPermissionsTeamsReactions(t *testing.T) {
	s, c := start(t, false)
	ctx := context.Background()
	s.SetPermission(testRepo, "bob", "write")
	s.AddTeamMember("acme", "keepers", "bob", "")

	tests := []struct{ login, wantPerm string }{{"bob", "write"}, {"mallory", "none"}}
	for _, tt := range tests {
		p, _, err := c.Repositories.GetPermissionLevel(ctx, "acme", "widgets", tt.login)
		require.NoError(t, err)
		assert.Equal(t, tt.wantPerm, p.GetPermission(), tt.login)
	}
	m, _, err := c.Teams.GetTeamMembershipBySlug(ctx, "acme", "keepers", "bob")
	require.NoError(t, err)
	assert.Equal(t, "active", m.GetState())
	assert.Equal(t, "member", m.GetRole())
	_, _, err = c.Teams.GetTeamMembershipBySlug(ctx, "acme", "keepers", "mallory")
	assertStatus(t, err, http.StatusNotFound)

	cm, err := s.AddComment(testRepo, 7, "bob", "/keel retry")
	require.NoError(t, err)
	want := []int{http.StatusCreated, http.StatusOK}
	for _, code := range want {
		_, resp, err := c.Reactions.CreateIssueCommentReaction(ctx, "acme", "widgets", cm.ID, "eyes")
		require.NoError(t, err)
		assert.Equal(t, code, resp.StatusCode)
	}
	list, _, err := c.Reactions.ListIssueCommentReactions(ctx, "acme", "widgets", cm.ID, nil)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, DefaultLogin, list[0].GetUser().GetLogin())
	assert.Equal(t, []Reaction{{ID: list[0].GetID(), User: DefaultLogin, Content: "eyes"}}, s.Reactions(cm.ID))
	_, _, err = c.Reactions.CreateIssueCommentReaction(ctx, "acme", "widgets", cm.ID, "party")
	assertStatus(t, err, http.StatusUnprocessableEntity)
}

func TestTokenAndFaults(t *testing.T) {
	s, c := start(t, false)
	ctx := context.Background()
	bad := github.NewClient(nil).WithAuthToken("wrong")
	bad.BaseURL = c.BaseURL
	_, _, err := bad.PullRequests.Get(ctx, "acme", "widgets", 7)
	assertStatus(t, err, http.StatusUnauthorized)
	assert.Equal(t, 1, s.Unauthorized())

	s.FailNext(http.MethodPost, "/repos/acme/widgets/issues/7/labels", http.StatusBadGateway, 1)
	_, _, err = c.Issues.AddLabelsToIssue(ctx, "acme", "widgets", 7, []string{"x"})
	assertStatus(t, err, http.StatusBadGateway)
	_, _, err = c.Issues.AddLabelsToIssue(ctx, "acme", "widgets", 7, []string{"x"})
	require.NoError(t, err, "a fault is used up")
	reqs := s.Requests()
	assert.Equal(t, Request{Method: http.MethodPost, Path: "/repos/acme/widgets/issues/7/labels", Status: http.StatusOK}, reqs[len(reqs)-1])
}

func TestSendSignsLikeGitHub(t *testing.T) {
	s, _ := start(t, false)
	type got struct {
		event, delivery, agent string
		payload                []byte
		err                    error
	}
	seen := make(chan got, 1)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// go-github's own receiver check: X-Hub-Signature-256 over the raw body.
		p, err := github.ValidatePayload(r, []byte("s3cret"))
		seen <- got{github.WebHookType(r), github.DeliveryID(r), r.UserAgent(), p, err}
		if err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	defer recv.Close()

	cm, err := s.AddComment(testRepo, 7, "bob", "/keel abort")
	require.NoError(t, err)
	tests := []struct {
		name, secret string
		wantStatus   int
	}{
		{"right secret", "s3cret", http.StatusOK},
		{"wrong secret", "other", http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Send(context.Background(), recv.Client(), recv.URL, tt.secret, "issue_comment", s.IssueCommentEvent("created", cm))
			require.NoError(t, err)
			g := <-seen
			assert.Equal(t, tt.wantStatus, d.Status)
			assert.Equal(t, "issue_comment", g.event)
			assert.Regexp(t, regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`), g.delivery)
			assert.Equal(t, d.ID, g.delivery)
			assert.Regexp(t, `^GitHub-Hookshot/`, g.agent)
			if tt.wantStatus != http.StatusOK {
				assert.Error(t, g.err)
				return
			}
			require.NoError(t, g.err)
			ev, err := github.ParseWebHook("issue_comment", g.payload)
			require.NoError(t, err)
			ice := ev.(*github.IssueCommentEvent)
			assert.Equal(t, "/keel abort", ice.GetComment().GetBody())
			assert.Equal(t, "bob", ice.GetSender().GetLogin())
			assert.Equal(t, 7, ice.GetIssue().GetNumber())
			assert.True(t, ice.GetIssue().IsPullRequest())
			assert.Equal(t, testRepo, ice.GetRepo().GetFullName())
		})
	}
	assert.Equal(t, "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17", Sign("It's a Secret to Everybody", []byte("Hello, World!")),
		"the example in GitHub's webhook documentation")
}

func assertStatus(t *testing.T, err error, code int) {
	t.Helper()
	var er *github.ErrorResponse
	require.True(t, errors.As(err, &er), "want a GitHub error with status %d, got %v", code, err)
	assert.Equal(t, code, er.Response.StatusCode)
}

// TestUserCaseAndLimits: GET /user names the token's login (403 as for an App's token with
// NoUser); owner and repository names ignore case; a comment over GitHub's 65,536 characters is
// refused with 422; a closed pull request reads as closed.
func TestUserCaseAndLimits(t *testing.T) {
	s, c := start(t, false)
	ctx := context.Background()
	u, _, err := c.Users.Get(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, DefaultLogin, u.GetLogin())

	got, _, err := c.PullRequests.Get(ctx, "ACME", "Widgets", 7)
	require.NoError(t, err)
	assert.Equal(t, "open", got.GetState())
	_, _, err = c.Issues.CreateComment(ctx, "Acme", "WIDGETS", 7, &github.IssueComment{Body: github.Ptr("hi")})
	require.NoError(t, err)
	assert.Len(t, s.Comments(testRepo, 7), 1)

	_, resp, err := c.Issues.CreateComment(ctx, "acme", "widgets", 7, &github.IssueComment{Body: github.Ptr(string(make([]byte, MaxCommentBody+1)))})
	require.Error(t, err)
	assert.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)

	s.AddPR(testRepo, PR{Number: 7, Author: "alice", HeadSHA: "abc123", State: "closed", Merged: true})
	got, _, err = c.PullRequests.Get(ctx, "acme", "widgets", 7)
	require.NoError(t, err)
	assert.Equal(t, "closed", got.GetState())
	assert.True(t, got.GetMerged())

	app, err := Start(Options{Login: "keel-app[bot]", NoUser: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = app.Close() })
	ac := github.NewClient(nil)
	ac.BaseURL, _ = url.Parse(app.URL())
	_, resp, err = ac.Users.Get(ctx, "")
	require.Error(t, err)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
}
