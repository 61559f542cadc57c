package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v84/github"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/demo"
	"github.com/keelrun/keel/internal/devkit/fakegithub"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/devkit/testenv"
	"github.com/keelrun/keel/internal/githubbot"
)

// The repository, secret and token of the GitHub bot's test.
const (
	botRepo   = "keel-org/bot"
	botSecret = "whsec-e2e-bot"
	botToken  = "ghp-e2e-bot"
)

// TestGitHubBotAnswersFromComments runs two sessions on two pull requests of one repository on
// a worker process; both escalate. Against the local GitHub, with deliveries signed as GitHub
// signs them: a tampered signature is refused with no effect; the author of the fork pull request,
// who has no write access, is refused with a reply saying why; a collaborator's `/keel retry` on
// the first pull request answers that session's escalation and only that one (the other stays
// waiting); the same delivery again, to the same bot and to a second replica, has no second
// effect and no second reply. The retry took (the session escalated again), and a `/keel edit`
// on the new escalation, through the replica, lets it complete.
func TestGitHubBotAnswersFromComments(t *testing.T) {
	gh, err := fakegithub.Start(fakegithub.Options{Token: botToken})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gh.Close() })
	gh.AddPR(botRepo, fakegithub.PR{Number: 7, Author: "app-author", HeadSHA: "c7c7c7c7c7c7"})
	gh.AddPR(botRepo, fakegithub.PR{Number: 8, Author: "fork-author", HeadSHA: "d8d8d8d8d8d8", HeadRepo: "fork-author/bot"})
	gh.SetPermission(botRepo, "maintainer", "write")
	gh.SetPermission(botRepo, "fork-author", "read")

	gw := fakegw.New(fakegw.Options{})
	if err := gw.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = gw.Close() }()
	// The escalations wait long enough for the test to answer; nobody is notified.
	environ := env.StarterEnv(t, "KEEL_GATEWAY_FAKE=true", "KEEL_GATEWAY_BASE_URL="+gw.BaseURL()+"/v1", "KEEL_ESCALATION_DEADLINE=5m")
	workerBin, err := env.Build("./worker")
	if err != nil {
		t.Fatal(err)
	}
	w := &workerProc{bin: workerBin, env: environ, t: t}
	w.start()
	defer w.kill()
	// The worker registers Keel's search attributes as it starts; a session naming a pull request
	// can start once KeelPullRequest is there.
	if !testenv.WaitFor(60*time.Second, pullRequestKeyRegistered) {
		t.Fatalf("the worker did not register %s within 60s", contract.PullRequestKey.GetName())
	}

	// Each run is a job of its own (repository, commit): a fresh head commit per pull request and
	// per test run, so no run attaches to another's session.
	heads := map[int]string{7: fmt.Sprintf("c7%010x", time.Now().UnixNano()&0xffffffffff), 8: fmt.Sprintf("d8%010x", time.Now().UnixNano()&0xffffffffff)}
	runs := map[int]*liveRun{}
	wids := map[int]string{}
	escs := map[int]*contract.Escalation{}
	for _, pr := range []int{7, 8} {
		ws := t.TempDir()
		if err := demo.CopyWorkspace(ws); err != nil {
			t.Fatal(err)
		}
		runs[pr] = startLiveEnv(t, environ, "run", "--repo", botRepo, "--pr", strconv.Itoa(pr), "--commit", heads[pr], "--workdir", ws,
			"--output", "jsonl", fakegw.WithMode("fix the failing test", fakegw.ModeBadArgs))
		wids[pr] = runs[pr].workflowID()
		wid := wids[pr]
		t.Cleanup(func() { _ = env.Client().TerminateWorkflow(context.Background(), wid, "", "test cleanup") })
	}
	for pr, l := range runs {
		escs[pr] = l.waitEvent(90*time.Second, "escalation", func(e contract.Event) bool {
			return e.Event == contract.EventEscalation && e.Escalation != nil
		}).Escalation
	}

	bots := make([]string, 2)
	var replicas []*githubbot.Bot
	for i := range bots {
		b, err := githubbot.New(githubbot.Config{Secret: botSecret, GitHub: mustGitHubClient(t, gh), Sessions: githubbot.TemporalSessions{Client: env.Client()}})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(b)
		t.Cleanup(srv.Close)
		t.Cleanup(b.Wait)
		bots[i] = srv.URL + githubbot.WebhookPath
		replicas = append(replicas, b)
	}
	ctx := context.Background()
	send := func(url, secret string, c fakegithub.Comment) fakegithub.Delivery {
		t.Helper()
		d, err := fakegithub.Send(ctx, nil, url, secret, githubbot.EventIssueComment, gh.IssueCommentEvent("created", c))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	comment := func(pr int, author, body string) fakegithub.Comment {
		t.Helper()
		c, err := gh.AddComment(botRepo, pr, author, body)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	// A tampered signature: refused, nothing answered, nothing replied.
	retry := comment(7, "maintainer", "/keel retry")
	if d := send(bots[0], "not-the-secret", retry); d.Status != http.StatusUnauthorized {
		t.Fatalf("tampered delivery: %d %q, want 401", d.Status, d.Response)
	}
	// The fork's author without write access: refused with a reply, nothing answered.
	abort := comment(8, "fork-author", "/keel abort")
	if d := send(bots[0], botSecret, abort); d.Status != http.StatusAccepted {
		t.Fatalf("the fork author's delivery: %d %q, want 202", d.Status, d.Response)
	}
	refusal := waitReply(t, gh, 8, abort.ID)
	for _, want := range []string{"@fork-author", "comes from a fork (fork-author/bot)", "write access to " + botRepo, "Nothing was sent"} {
		if !strings.Contains(refusal, want) {
			t.Errorf("the refusal lacks %q:\n%s", want, refusal)
		}
	}
	for pr := range runs {
		assertWaitingOn(t, wids[pr], escs[pr].ID)
	}

	// The collaborator's retry: answers the session on #7 only.
	first := send(bots[0], botSecret, retry)
	if first.Status != http.StatusAccepted {
		t.Fatalf("the collaborator's delivery: %d %q, want 202", first.Status, first.Response)
	}
	reply := waitReply(t, gh, 7, retry.ID)
	if !strings.Contains(reply, "@maintainer Session `"+wids[7]+"`: escalation `"+escs[7].ID+"` answered: retry.") {
		t.Errorf("the reply to the retry:\n%s", reply)
	}
	assertWaitingOn(t, wids[8], escs[8].ID)

	// The same delivery again, to the same bot and to a replica that never saw it.
	if d, err := fakegithub.Redeliver(ctx, nil, bots[0], botSecret, first); err != nil || d.Status != http.StatusOK {
		t.Errorf("redelivery to the same bot: %d %q %v, want 200 (dropped)", d.Status, d.Response, err)
	}
	if d, err := fakegithub.Redeliver(ctx, nil, bots[1], botSecret, first); err != nil || d.Status != http.StatusAccepted {
		t.Errorf("redelivery to the replica: %d %q %v, want 202", d.Status, d.Response, err)
	}
	for _, b := range replicas {
		b.Wait()
	}
	// The retry took: the scripted model sends broken arguments until a person instructs it, so the
	// session retried and escalated again. An edit on the new escalation lets it complete.
	again := runs[7].waitEvent(90*time.Second, "the second escalation", func(e contract.Event) bool {
		return e.Event == contract.EventEscalation && e.Escalation != nil && e.Escalation.ID != escs[7].ID
	}).Escalation
	edit := comment(7, "maintainer", "/keel edit send complete JSON arguments")
	if d := send(bots[1], botSecret, edit); d.Status != http.StatusAccepted {
		t.Fatalf("the edit's delivery: %d %q, want 202", d.Status, d.Response)
	}
	r := runs[7].finish()
	if r.Code != 0 || r.Summary.Status != contract.StatusCompleted {
		t.Fatalf("the session on #7: exit %d, status %q (%s); want 0, completed after the edit\nstderr:\n%s", r.Code, r.Summary.Status, r.Summary.Reason, r.Stderr)
	}
	want := []contract.Answer{
		{EscalationID: escs[7].ID, Action: contract.ActionRetry, By: "github:maintainer", Via: "github"},
		{EscalationID: again.ID, Action: contract.ActionEdit, Text: "send complete JSON arguments", By: "github:maintainer", Via: "github"},
	}
	if got := acceptedAnswers(t, wids[7]); !slices.Equal(got, want) {
		t.Errorf("accepted answers of the session on #7:\n%+v\nwant\n%+v", got, want)
	}
	if got := acceptedAnswers(t, wids[8]); len(got) != 0 {
		t.Errorf("the session on #8 accepted %+v, want nothing", got)
	}
	for _, b := range replicas {
		b.Wait()
	}
	if n := len(gh.Reactions(retry.ID)); n != 1 {
		t.Errorf("the retry comment has %d reactions, want the one claim", n)
	}
	for _, b := range []struct {
		pr   int
		want int
	}{{7, 2}, {8, 1}} {
		if n := len(botReplies(gh, b.pr)); n != b.want {
			t.Errorf("#%d has %d replies from the bot, want %d: %q", b.pr, n, b.want, botReplies(gh, b.pr))
		}
	}
	assertWaitingOn(t, wids[8], escs[8].ID)
}

// pullRequestKeyRegistered says whether the server knows the KeelPullRequest search attribute.
func pullRequestKeyRegistered() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := env.Client().OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: "default"})
	if err != nil {
		return false
	}
	_, ok := resp.GetCustomAttributes()[contract.PullRequestKey.GetName()]
	return ok
}

// acceptedAnswers are the answer updates the session accepted, in order, read from its history.
func acceptedAnswers(t *testing.T, wid string) []contract.Answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	it := env.Client().GetWorkflowHistory(ctx, wid, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var out []contract.Answer
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatalf("reading the history of %s: %v", wid, err)
		}
		a := ev.GetWorkflowExecutionUpdateAcceptedEventAttributes()
		if a == nil || a.GetAcceptedRequest().GetInput().GetName() != contract.UpdateAnswerEscalation {
			continue
		}
		var ans contract.Answer
		if err := converter.GetDefaultDataConverter().FromPayloads(a.GetAcceptedRequest().GetInput().GetArgs(), &ans); err != nil {
			t.Fatalf("decoding an accepted answer: %v", err)
		}
		out = append(out, ans)
	}
	return out
}

// mustGitHubClient is a go-github client on the local GitHub with the bot's token.
func mustGitHubClient(t *testing.T, gh *fakegithub.Server) *github.Client {
	t.Helper()
	c, err := githubbot.NewGitHubClient(gh.URL(), botToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// botReplies are the bot's comments on the pull request.
func botReplies(gh *fakegithub.Server, pr int) []string {
	var out []string
	for _, c := range gh.Comments(botRepo, pr) {
		if c.Author == gh.Login() {
			out = append(out, c.Body)
		}
	}
	return out
}

// waitReply waits for the bot's reply to the comment and returns it.
func waitReply(t *testing.T, gh *fakegithub.Server, pr int, commentID int64) string {
	t.Helper()
	var reply string
	ok := testenv.WaitFor(30*time.Second, func() bool {
		for _, b := range botReplies(gh, pr) {
			if strings.Contains(b, githubbot.ReplyMarker(commentID)) {
				reply = b
				return true
			}
		}
		return false
	})
	if !ok {
		t.Fatalf("no reply from the bot to comment %d on #%d within 30s; the bot's comments: %q", commentID, pr, botReplies(gh, pr))
	}
	return reply
}

// assertWaitingOn checks the session still waits on escalation id, unanswered.
func assertWaitingOn(t *testing.T, wid, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := githubbot.TemporalSessions{Client: env.Client()}.Status(ctx, wid)
	if err != nil {
		t.Fatalf("status of %s: %v", wid, err)
	}
	if st.Status != contract.StatusWaiting || st.Escalation == nil || st.Escalation.ID != id || st.Escalation.Answer != nil {
		t.Fatalf("%s: status %q, escalation %+v; want waiting on %s, unanswered", wid, st.Status, st.Escalation, id)
	}
}
