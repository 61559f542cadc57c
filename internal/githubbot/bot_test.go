package githubbot

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegithub"
)

const (
	testRepo   = "acme/app"
	testSecret = "whsec-unit"
	testToken  = "ghp-unit"
)

// fakeSessions is Sessions in memory: sessions by pull request with their status, and every
// change sent, with its update ID (the same ID twice is one change, as on the server).
type fakeSessions struct {
	mu      sync.Mutex
	byPR    map[string][]string
	status  map[string]contract.SessionStatus
	updates map[string]bool
	answers []contract.Answer
	says    []contract.Say
	decided []contract.ApprovalDecision
}

func newFakeSessions() *fakeSessions {
	return &fakeSessions{byPR: map[string][]string{}, status: map[string]contract.SessionStatus{}, updates: map[string]bool{}}
}

func (f *fakeSessions) add(pr, wf string, st contract.SessionStatus) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.byPR[pr] = append(f.byPR[pr], wf)
	f.status[wf] = st
}

// OnPullRequest finds the sessions of pr whatever the case of its name, as the visibility query
// over the lower-case search attribute does.
func (f *fakeSessions) OnPullRequest(_ context.Context, pr string) ([]string, int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for k, v := range f.byPR {
		if strings.EqualFold(k, pr) {
			ids = append(ids, v...)
		}
	}
	return ids[:min(len(ids), MaxListed)], len(ids), nil
}

func (f *fakeSessions) Status(_ context.Context, wf string) (contract.SessionStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status[wf], nil
}

// once reports whether the update is new for wf.
func (f *fakeSessions) once(wf, id string) bool {
	if f.updates[wf+"/"+id] {
		return false
	}
	f.updates[wf+"/"+id] = true
	return true
}

func (f *fakeSessions) Answer(_ context.Context, wf, id string, a contract.Answer) (contract.AnswerResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.once(wf, id) {
		f.answers = append(f.answers, a)
		st := f.status[wf]
		e := *st.Escalation
		e.Answer = &a
		st.Escalation = &e
		f.status[wf] = st
	}
	return contract.AnswerResult{Accepted: true, Message: "taken"}, nil
}

func (f *fakeSessions) Approve(_ context.Context, wf, id string, d contract.ApprovalDecision) (contract.AnswerResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.once(wf, id) {
		f.decided = append(f.decided, d)
	}
	return contract.AnswerResult{Accepted: true}, nil
}

func (f *fakeSessions) Say(_ context.Context, wf, id string, m contract.Say) (contract.SayResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.once(wf, id) {
		f.says = append(f.says, m)
	}
	return contract.SayResult{Accepted: true, Seq: len(f.says), Message: "message 1"}, nil
}

func (f *fakeSessions) counts() (answers, says, decided int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.answers), len(f.says), len(f.decided)
}

// rig is a fake GitHub with pull requests 7 (by alice, from a branch) and 8 (by mallory, from a
// fork), bob with write access, carol with read access and in team acme/keepers, and one or more
// bots on the same fake GitHub and sessions (replicas).
type rig struct {
	gh   *fakegithub.Server
	ss   *fakeSessions
	bots []*Bot
	urls []string
}

func newRig(t *testing.T, replicas int) *rig {
	t.Helper()
	gh, err := fakegithub.Start(fakegithub.Options{Token: testToken})
	require.NoError(t, err)
	t.Cleanup(func() { _ = gh.Close() })
	gh.AddPR(testRepo, fakegithub.PR{Number: 7, Author: "alice", HeadSHA: "a1"})
	gh.AddPR(testRepo, fakegithub.PR{Number: 8, Author: "mallory", HeadSHA: "b2", HeadRepo: "mallory/app"})
	gh.SetPermission(testRepo, "bob", "write")
	gh.SetPermission(testRepo, "carol", "read")
	gh.SetPermission(testRepo, "mallory", "read")
	gh.SetPermission(testRepo, "dave", "maintain")
	gh.AddTeamMember("acme", "keepers", "carol", "")
	r := &rig{gh: gh, ss: newFakeSessions()}
	for range replicas {
		c, err := NewGitHubClient(gh.BaseURL(), testToken, nil)
		require.NoError(t, err)
		b, err := New(Config{Secret: testSecret, GitHub: c, Sessions: r.ss, Teams: []string{"acme/keepers"}})
		require.NoError(t, err)
		srv := httptest.NewServer(b)
		t.Cleanup(srv.Close)
		r.bots = append(r.bots, b)
		r.urls = append(r.urls, srv.URL+WebhookPath)
	}
	return r
}

func (r *rig) wait() {
	for _, b := range r.bots {
		b.Wait()
	}
}

// comment stores a comment by author on pr and returns its delivery, not sent yet.
func (r *rig) comment(t *testing.T, pr int, author, body string) fakegithub.Delivery {
	t.Helper()
	c, err := r.gh.AddComment(testRepo, pr, author, body)
	require.NoError(t, err)
	d, err := fakegithub.Send(context.Background(), nil, r.urls[0], testSecret, EventIssueComment, r.gh.IssueCommentEvent("created", c))
	require.NoError(t, err)
	r.wait()
	return d
}

// replies are the bot's comments on pr.
func (r *rig) replies(pr int) []string {
	var out []string
	for _, c := range r.gh.Comments(testRepo, pr) {
		if c.Author == r.gh.Login() {
			out = append(out, c.Body)
		}
	}
	return out
}

func waiting(id string) contract.SessionStatus {
	return contract.SessionStatus{Status: contract.StatusWaiting, Escalation: &contract.Escalation{ID: id, Reason: contract.ReasonRepairCap,
		Choices: []string{contract.ActionRetry, contract.ActionEdit, contract.ActionAbort}}}
}

func TestCommands(t *testing.T) {
	approval := contract.SessionStatus{Status: contract.StatusWaiting, Approval: &contract.Approval{CallID: "c1", Tool: "run_command", Digest: "d1"}}
	tests := []struct {
		name   string
		author string
		pr     int
		body   string
		status contract.SessionStatus
		// answers, says and decisions that must reach the session.
		answers, says, decided int
		reply                  []string
	}{
		{"retry by a collaborator", "bob", 7, "/keel retry", waiting("e1"), 1, 0, 0, []string{"@bob", "Session `wf-7`: escalation `e1` answered: retry."}},
		{"edit with text on lines below", "bob", 7, "thanks!\n/keel edit use calc.go\nand send full JSON", waiting("e1"), 1, 0, 0, []string{"answered: edit"}},
		{"abort by a maintainer", "dave", 7, "/keel abort", waiting("e1"), 1, 0, 0, []string{"answered: abort"}},
		{"retry by a team member without write access", "carol", 7, "/keel retry", waiting("e1"), 1, 0, 0, []string{"answered: retry"}},
		{"refused: read access only", "eve", 7, "/keel retry", waiting("e1"), 0, 0, 0, []string{"@eve only people with write access to acme/app or in @acme/keepers may steer", "your permission is none", "Nothing was sent"}},
		{"refused: the author of a fork", "mallory", 8, "/keel abort", waiting("e1"), 0, 0, 0, []string{"comes from a fork (mallory/app)", "your permission is read"}},
		{"approve", "bob", 7, "/keel approve", approval, 0, 0, 1, []string{"the `run_command` call (c1) is approved."}},
		{"retry while an approval waits", "bob", 7, "/keel retry", approval, 0, 0, 0, []string{"waits for approval of a `run_command` call", "/keel approve"}},
		{"deny with nothing waiting", "bob", 7, "/keel deny", contract.SessionStatus{Status: contract.StatusRunning}, 0, 0, 0, []string{"no tool call waits for approval"}},
		{"retry with nothing waiting", "bob", 7, "/keel retry", contract.SessionStatus{Status: contract.StatusRunning}, 0, 0, 0, []string{"nothing waits for an answer"}},
		{"say", "bob", 7, "/keel say look at calc.go first", contract.SessionStatus{Status: contract.StatusRunning}, 0, 1, 0, []string{"message taken"}},
		{"unknown verb", "bob", 7, "/keel launch", waiting("e1"), 0, 0, 0, []string{"Keel takes `/keel retry`"}},
		{"edit without text", "bob", 7, "/keel edit", waiting("e1"), 0, 0, 0, []string{"Keel takes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, 1)
			pr := contract.GitHubContext{Repo: testRepo, PR: tt.pr}.String()
			r.ss.add(pr, "wf-"+strings.TrimPrefix(pr, testRepo+"#"), tt.status)
			r.ss.add(testRepo+"#99", "wf-other", waiting("e9"))
			r.comment(t, tt.pr, tt.author, tt.body)
			a, s, d := r.ss.counts()
			assert.Equal(t, []int{tt.answers, tt.says, tt.decided}, []int{a, s, d}, "answers, says, decisions")
			replies := r.replies(tt.pr)
			require.Len(t, replies, 1, "replies")
			for _, want := range tt.reply {
				assert.Contains(t, replies[0], want)
			}
			assert.Empty(t, r.replies(99), "the other pull request's session")
		})
	}
}

// TestAnsweredAlready: a second command on an answered escalation changes nothing and says who
// answered.
func TestAnsweredAlready(t *testing.T) {
	r := newRig(t, 1)
	r.ss.add(testRepo+"#7", "wf-7", waiting("e1"))
	r.comment(t, 7, "bob", "/keel retry")
	r.comment(t, 7, "dave", "/keel abort")
	a, _, _ := r.ss.counts()
	assert.Equal(t, 1, a)
	replies := r.replies(7)
	require.Len(t, replies, 2)
	assert.Contains(t, replies[1], "was answered already by github:bob: retry")
}

// TestDeliveries: forged and unsigned deliveries are refused with no effect; the same delivery
// again, to the same bot or to a second replica, is one effect and one reply.
func TestDeliveries(t *testing.T) {
	r := newRig(t, 2)
	r.ss.add(testRepo+"#7", "wf-7", waiting("e1"))
	c, err := r.gh.AddComment(testRepo, 7, "bob", "/keel say hello")
	require.NoError(t, err)
	ev := r.gh.IssueCommentEvent("created", c)
	ctx := context.Background()
	for _, secret := range []string{"", "not-the-secret"} {
		d, err := fakegithub.Send(ctx, nil, r.urls[0], secret, EventIssueComment, ev)
		require.NoError(t, err)
		assert.Equal(t, http.StatusUnauthorized, d.Status, "secret %q", secret)
	}
	r.wait()
	if _, s, _ := r.ss.counts(); s != 0 || len(r.replies(7)) != 0 {
		t.Fatalf("refused deliveries had effects: %d messages, replies %q", s, r.replies(7))
	}
	first, err := fakegithub.Send(ctx, nil, r.urls[0], testSecret, EventIssueComment, ev)
	require.NoError(t, err)
	assert.Equal(t, http.StatusAccepted, first.Status)
	r.wait()
	again, err := fakegithub.Redeliver(ctx, nil, r.urls[0], testSecret, first)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, again.Status, "a redelivery to the same bot is dropped")
	other, err := fakegithub.Redeliver(ctx, nil, r.urls[1], testSecret, first)
	require.NoError(t, err)
	assert.Equal(t, http.StatusAccepted, other.Status, "the replica has not seen it")
	r.wait()
	_, s, _ := r.ss.counts()
	assert.Equal(t, 1, s, "messages")
	assert.Len(t, r.replies(7), 1, "replies")
	assert.Len(t, r.gh.Reactions(c.ID), 1, "reactions")
}

// TestReplicasRace: two replicas taking the same delivery at the same time reply once, because
// the reaction that claims the reply is created once.
func TestReplicasRace(t *testing.T) {
	r := newRig(t, 2)
	r.ss.add(testRepo+"#7", "wf-7", waiting("e1"))
	c, err := r.gh.AddComment(testRepo, 7, "bob", "/keel retry")
	require.NoError(t, err)
	body := r.gh.IssueCommentEvent("created", c)
	first, err := fakegithub.Send(context.Background(), nil, r.urls[0], testSecret, EventIssueComment, body)
	require.NoError(t, err)
	_, err = fakegithub.Redeliver(context.Background(), nil, r.urls[1], testSecret, first)
	require.NoError(t, err)
	r.wait()
	a, _, _ := r.ss.counts()
	assert.Equal(t, 1, a, "answers")
	assert.Len(t, r.replies(7), 1, "replies")
}

// TestIgnored: comments that are not commands, edits, the bot's own replies and other events
// have no effect.
func TestIgnored(t *testing.T) {
	r := newRig(t, 1)
	r.ss.add(testRepo+"#7", "wf-7", waiting("e1"))
	c, err := r.gh.AddComment(testRepo, 7, "bob", "/keel retry")
	require.NoError(t, err)
	ctx := context.Background()
	for _, tt := range []struct {
		event   string
		payload any
		code    int
	}{
		{EventIssueComment, r.gh.IssueCommentEvent("edited", c), http.StatusAccepted},
		{"push", map[string]string{"ref": "refs/heads/main"}, http.StatusAccepted},
		{EventPing, map[string]string{"zen": "hi"}, http.StatusOK},
	} {
		d, err := fakegithub.Send(ctx, nil, r.urls[0], testSecret, tt.event, tt.payload)
		require.NoError(t, err)
		assert.Equal(t, tt.code, d.Status, tt.event)
	}
	r.comment(t, 7, "bob", "please /keel retry this")
	r.comment(t, 7, "bob", "/keeling over")
	// The bot's own comment (a reply quoting a command) is not a command.
	own, err := r.gh.AddComment(testRepo, 7, r.gh.Login(), "/keel retry\n\n"+ReplyMarker(1))
	require.NoError(t, err)
	_, err = fakegithub.Send(ctx, nil, r.urls[0], testSecret, EventIssueComment, r.gh.IssueCommentEvent("created", own))
	require.NoError(t, err)
	r.wait()
	a, _, _ := r.ss.counts()
	assert.Zero(t, a)
	assert.Len(t, r.replies(7), 1, "only the bot's own comment")
}

func TestParseCommand(t *testing.T) {
	tests := []struct {
		body string
		ok   bool
		want command
	}{
		{"/keel retry", true, command{verb: "retry"}},
		{"  /KEEL   Abort  ", true, command{verb: "abort"}},
		{"LGTM\r\n/keel edit  use x\r\nline two", true, command{verb: "edit", text: "use x\nline two"}},
		{"/keel say", true, command{}},
		{"/keel", true, command{}},
		{"/keel frobnicate", true, command{}},
		{"no command here", false, command{}},
		{"/keeper retry", false, command{}},
	}
	for _, tt := range tests {
		got, ok := parseCommand(tt.body)
		if ok != tt.ok || got != tt.want {
			t.Errorf("parseCommand(%q) = %+v, %v; want %+v, %v", tt.body, got, ok, tt.want, tt.ok)
		}
	}
}

func TestNewRefuses(t *testing.T) {
	c, err := NewGitHubClient("", "", nil)
	require.NoError(t, err)
	for _, tt := range []struct {
		cfg  Config
		want string
	}{
		{Config{GitHub: c, Sessions: newFakeSessions()}, "secret is empty"},
		{Config{Secret: "s", Sessions: newFakeSessions()}, "no GitHub client"},
		{Config{Secret: "s", GitHub: c}, "no session client"},
		{Config{Secret: "s", GitHub: c, Sessions: newFakeSessions(), Teams: []string{"keepers"}}, `team "keepers" is not org/team-slug`},
	} {
		_, err := New(tt.cfg)
		if assert.Error(t, err) {
			assert.Contains(t, err.Error(), tt.want)
		}
	}
}
