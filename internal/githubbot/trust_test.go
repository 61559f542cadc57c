package githubbot

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegithub"
)

// TestMarkersFromOthersCountForNothing (security): a read-only user posts the bot's hidden
// reply markers for the comment IDs to come; a maintainer's command that takes one of those IDs
// is still carried out and answered, because only the bot's own comments hold its replies.
func TestMarkersFromOthersCountForNothing(t *testing.T) {
	r := newRig(t, 1)
	r.ss.add(testRepo+"#7", "wf-7", waiting("e1"))
	last := r.gh.Comments(testRepo, 7)
	var next int64 = 1001
	if len(last) > 0 {
		next = last[len(last)-1].ID + 1
	}
	var markers strings.Builder
	markers.WriteString("nice PR\n")
	for id := next; id < next+20; id++ {
		markers.WriteString(ReplyMarker(id) + "\n")
	}
	r.comment(t, 7, "carol-readonly", markers.String())
	cmd, err := r.gh.AddComment(testRepo, 7, "bob", "/keel retry")
	require.NoError(t, err)
	require.Less(t, cmd.ID, next+20, "the command's ID is among the forged markers")
	_, err = fakegithub.Send(context.Background(), nil, r.urls[0], testSecret, EventIssueComment, r.gh.IssueCommentEvent("created", cmd))
	require.NoError(t, err)
	r.wait()
	a, _, _ := r.ss.counts()
	assert.Equal(t, 1, a, "the maintainer's retry reached the session")
	replies := r.replies(7)
	require.Len(t, replies, 1)
	assert.Contains(t, replies[0], "answered: retry")
	assert.Len(t, r.gh.Reactions(cmd.ID), 1, "the command was claimed")
}

// TestIdentity: the bot learns its login from GET /user; with a GitHub App's token, which cannot
// read it, the configured login is used, and without one the bot acts on nothing (a marker it
// cannot attribute is not trusted).
func TestIdentity(t *testing.T) {
	for _, tt := range []struct {
		name, login string
		replies     int
	}{
		{"configured login", "keel-app[bot]", 1},
		{"no login and no GET /user", "", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			gh, err := fakegithub.Start(fakegithub.Options{Token: testToken, Login: "keel-app[bot]", NoUser: true})
			require.NoError(t, err)
			t.Cleanup(func() { _ = gh.Close() })
			gh.AddPR(testRepo, fakegithub.PR{Number: 7, Author: "alice", HeadSHA: "a1"})
			gh.SetPermission(testRepo, "bob", "write")
			ss := newFakeSessions()
			ss.add(testRepo+"#7", "wf-7", waiting("e1"))
			c, err := NewGitHubClient(gh.BaseURL(), testToken, nil)
			require.NoError(t, err)
			b, err := New(Config{Secret: testSecret, GitHub: c, Sessions: ss, Login: tt.login})
			require.NoError(t, err)
			srv := httptest.NewServer(b)
			t.Cleanup(srv.Close)
			cm, err := gh.AddComment(testRepo, 7, "bob", "/keel retry")
			require.NoError(t, err)
			_, err = fakegithub.Send(context.Background(), nil, srv.URL, testSecret, EventIssueComment, gh.IssueCommentEvent("created", cm))
			require.NoError(t, err)
			b.Wait()
			a, _, _ := ss.counts()
			assert.Equal(t, tt.replies, a)
			assert.Len(t, gh.Comments(testRepo, 7), 1+tt.replies)
		})
	}
}

// TestCommandsOnlyInPlainText: a command counts only as plain text at a line's start, as GitHub
// shows it; the said text is what the person wrote after the command.
func TestCommandsOnlyInPlainText(t *testing.T) {
	tests := []struct {
		name string
		body string
		ok   bool
		want command
	}{
		{"fenced", "Do not type this:\n```\n/keel retry\n```", false, command{}},
		{"fenced with info", "```sh\n/keel retry\n```\n", false, command{}},
		{"tilde fence, say", "~~~\n/keel say drop the tables\n~~~", false, command{}},
		{"unclosed fence", "```\n/keel abort", false, command{}},
		{"longer closing fence", "````\n```\n/keel retry\n````", false, command{}},
		{"indented code", "Example:\n\n    /keel retry\n", false, command{}},
		{"tab-indented code", "\t/keel retry", false, command{}},
		{"html comment", "<!--\n/keel retry\n-->", false, command{}},
		{"html comment on one line", "<!-- /keel retry -->", false, command{}},
		{"inline html comment", "ok <!-- hidden\n/keel retry\n--> done", false, command{}},
		{"quote", "> /keel retry", false, command{}},
		{"quote continued lazily", "> earlier:\n/keel retry", false, command{}},
		{"mid-sentence", "please /keel retry this", false, command{}},
		{"after a closed fence", "```\ncode\n```\n/keel retry", true, command{verb: "retry"}},
		{"after a comment", "<!-- note -->\n/keel abort", true, command{verb: "abort"}},
		{"after a quote and a blank line", "> earlier\n\n/keel retry", true, command{verb: "retry"}},
		{"three spaces", "   /keel retry", true, command{verb: "retry"}},
		{"say keeps what was written", "/keel say look at\n~~~\nx := 1\n~~~", true, command{verb: "say", text: "look at\n~~~\nx := 1\n~~~"}},
		{"say in a tilde fence then plain say", "~~~\n/keel say no\n~~~\n/keel say yes", true, command{verb: "say", text: "yes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseCommand(tt.body)
			assert.Equal(t, tt.ok, ok, "a command")
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestCapIsNotSilent: a command on a pull request with more sessions than a command reaches says
// how many it reached, how many it did not, names them and says how to reach them.
func TestCapIsNotSilent(t *testing.T) {
	r := newRig(t, 1)
	approval := contract.SessionStatus{Status: contract.StatusWaiting, Approval: &contract.Approval{CallID: "c1", Tool: "run_command", Digest: "d1"}}
	const sessions = 55
	for i := range sessions {
		r.ss.add(testRepo+"#7", fmt.Sprintf("wf-%02d", i), approval)
	}
	r.comment(t, 7, "bob", "/keel deny")
	_, _, d := r.ss.counts()
	assert.Equal(t, MaxSessionsPerPR, d, "decisions")
	replies := r.replies(7)
	require.Len(t, replies, 1)
	for _, want := range []string{"reached 50 of the 55 sessions", "Not reached: 5 sessions", "`wf-54`", "starter approve <session> --deny"} {
		assert.Contains(t, replies[0], want)
	}
}

// TestClosedPullRequestRefuses: a command on a closed pull request is refused with a reply and
// reaches no session.
func TestClosedPullRequestRefuses(t *testing.T) {
	r := newRig(t, 1)
	r.gh.AddPR(testRepo, fakegithub.PR{Number: 7, Author: "alice", HeadSHA: "a1", State: "closed"})
	r.ss.add(testRepo+"#7", "wf-7", waiting("e1"))
	r.comment(t, 7, "bob", "/keel retry")
	a, s, d := r.ss.counts()
	assert.Equal(t, []int{0, 0, 0}, []int{a, s, d})
	replies := r.replies(7)
	require.Len(t, replies, 1)
	assert.Contains(t, replies[0], "acme/app#7 is closed")
}

// TestRepositoryNameCase: GitHub spells the repository as its owner does; the session named it in
// lower case; the command still finds it.
func TestRepositoryNameCase(t *testing.T) {
	r := newRig(t, 1)
	r.ss.add(testRepo+"#7", "wf-7", waiting("e1"))
	c, err := r.gh.AddComment("ACME/App", 7, "bob", "/keel retry")
	require.NoError(t, err)
	ev := r.gh.IssueCommentEvent("created", c)
	require.Equal(t, "ACME/App", ev.GetRepo().GetFullName())
	_, err = fakegithub.Send(context.Background(), nil, r.urls[0], testSecret, EventIssueComment, ev)
	require.NoError(t, err)
	r.wait()
	a, _, _ := r.ss.counts()
	assert.Equal(t, 1, a)
	assert.Equal(t, "WorkflowType = 'AgentSession' AND ExecutionStatus = 'Running' AND KeelPullRequest = 'codertocat/hello-world#1'",
		PullRequestQuery("Codertocat/Hello-World#1"))
	attrs := contract.StartSearchAttributes(contract.SessionInput{GitHub: &contract.GitHubContext{Repo: "Codertocat/Hello-World", PR: 1}})
	got, _ := attrs.GetKeyword(contract.PullRequestKey)
	assert.Equal(t, "codertocat/hello-world#1", got)
}

// TestOnlySHA256Signatures: X-Hub-Signature-256 takes sha256= only; the same body signed with
// SHA-1 or SHA-512 under the right secret is refused.
func TestOnlySHA256Signatures(t *testing.T) {
	r := newRig(t, 1)
	r.ss.add(testRepo+"#7", "wf-7", waiting("e1"))
	c, err := r.gh.AddComment(testRepo, 7, "bob", "/keel retry")
	require.NoError(t, err)
	body, err := json.Marshal(r.gh.IssueCommentEvent("created", c))
	require.NoError(t, err)
	sign := func(prefix string, h func() hash.Hash) string {
		m := hmac.New(h, []byte(testSecret))
		m.Write(body)
		return prefix + hex.EncodeToString(m.Sum(nil))
	}
	for _, tt := range []struct {
		sig  string
		want int
	}{
		{sign("sha1=", sha1.New), http.StatusUnauthorized},
		{sign("sha512=", sha512.New), http.StatusUnauthorized},
		{strings.ToUpper(fakegithub.Sign(testSecret, body)[:7]) + fakegithub.Sign(testSecret, body)[7:], http.StatusUnauthorized},
		{fakegithub.Sign(testSecret, body), http.StatusAccepted},
	} {
		req, err := http.NewRequest(http.MethodPost, r.urls[0], bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", EventIssueComment)
		req.Header.Set("X-GitHub-Delivery", "d-"+tt.sig[:8])
		req.Header.Set("X-Hub-Signature-256", tt.sig)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.Equal(t, tt.want, resp.StatusCode, tt.sig[:10])
	}
	r.wait()
	a, _, _ := r.ss.counts()
	assert.Equal(t, 1, a)
}
