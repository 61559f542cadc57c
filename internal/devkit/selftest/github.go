package selftest

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/demo"
	"github.com/keelrun/keel/internal/devkit/fakegithub"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/githubbot"
)

// The pull request, people and secrets of the GitHub row.
const (
	ghRepo       = "selftest/keel"
	ghPR         = 1
	ghToken      = "ghp-selftest"
	ghSecret     = "whsec-selftest"
	ghMaintainer = "selftest-maintainer"
)

// githubRig is the GitHub row's world: a local GitHub with one pull request and a collaborator,
// and the GitHub bot on loopback, dialled to the row's Temporal server. The session runs on the
// pull request and escalates; the collaborator's `/keel edit` comment (an instruction for the
// model, which the scripted model follows), delivered signed as GitHub signs it, must answer it,
// so the session completes, and get one reply.
type githubRig struct {
	gh      *fakegithub.Server
	c       client.Client
	srv     *http.Server
	bot     *githubbot.Bot
	url     string
	done    chan error
	comment fakegithub.Comment
	logs    lockedBuffer
}

// lockedBuffer collects the bot's log lines, for a failing row's message.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// explain adds what the bot logged and replied to a failing row's error.
func (r *githubRig) explain(err error) error {
	var replies []string
	for _, c := range r.gh.Comments(ghRepo, ghPR) {
		if c.Author == r.gh.Login() && !strings.Contains(c.Body, "<!-- keel-escalation:") {
			replies = append(replies, strings.TrimSpace(c.Body))
		}
	}
	return fmt.Errorf("%w; the bot replied %q and logged %q", err, replies, strings.TrimSpace(r.logs.String()))
}

// startGitHubRig starts the local GitHub and the bot on the Temporal server env names.
func startGitHubRig(ctx context.Context, env []string) (*githubRig, error) {
	temporal := "127.0.0.1:7233"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "KEEL_TEMPORAL_ADDRESS="); ok {
			temporal = v
		}
	}
	gh, err := fakegithub.Start(fakegithub.Options{Token: ghToken})
	if err != nil {
		return nil, err
	}
	gh.AddPR(ghRepo, fakegithub.PR{Number: ghPR, Author: "selftest-author", HeadSHA: "5e1f7e575e1f"})
	gh.SetPermission(ghRepo, ghMaintainer, "write")
	r := &githubRig{gh: gh, done: make(chan error, 1)}
	r.c, err = client.DialContext(ctx, client.Options{HostPort: temporal})
	if err == nil {
		err = r.serve(ctx)
	}
	if err != nil {
		r.close()
		return nil, fmt.Errorf("starting the github row's bot: %w", err)
	}
	return r, nil
}

func (r *githubRig) serve(ctx context.Context) error {
	ghc, err := githubbot.NewGitHubClient(r.gh.BaseURL(), ghToken, nil)
	if err != nil {
		return err
	}
	bot, err := githubbot.New(githubbot.Config{Secret: ghSecret, GitHub: ghc, Sessions: githubbot.TemporalSessions{Client: r.c},
		Logger: slog.New(slog.NewTextHandler(&r.logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return err
	}
	r.bot = bot
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	r.url = "http://" + ln.Addr().String() + githubbot.WebhookPath
	r.srv = &http.Server{Handler: bot, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return nil
}

func (r *githubRig) close() {
	if r.srv != nil {
		_ = r.srv.Close()
	}
	if r.c != nil {
		r.c.Close()
	}
	_ = r.gh.Close()
}

// env points the row's session at the local GitHub.
func (r *githubRig) env() []string {
	return []string{"KEEL_GATEWAY_FAKE=true", "KEEL_ESCALATION_CHANNELS=github", "KEEL_ESCALATION_DEADLINE=2m",
		"KEEL_ESCALATION_GITHUB_TOKEN=" + ghToken, "KEEL_ESCALATION_GITHUB_BASE_URL=" + r.gh.BaseURL()}
}

// args run the demo's task on the pull request, in a copy of the demo's workspace under dir.
func (r *githubRig) args(dir string) ([]string, error) {
	ws := filepath.Join(dir, "workspace")
	if err := demo.CopyWorkspace(ws); err != nil {
		return nil, err
	}
	// A head commit of its own makes the run a job of its own, so a second self-test on the same
	// server runs it again instead of finding the first one's result.
	head := fmt.Sprintf("5e1f%010x", time.Now().UnixNano()&0xffffffffff)
	return []string{"run", "--dev", "--repo", ghRepo, "--pr", strconv.Itoa(ghPR), "--commit", head, "--workdir", ws, "--output", "jsonl",
		fakegw.WithMode("The tests of the Go package in the work directory fail. Find the bug and fix it.", fakegw.ModeBadArgs)}, nil
}

// ghEdit is the collaborator's comment.
const ghEdit = "/keel edit send complete JSON arguments"

// answer comments ghEdit as the collaborator and delivers the comment to the bot; the
// outcome arrives on done.
func (r *githubRig) answer(ctx context.Context) {
	c, err := r.gh.AddComment(ghRepo, ghPR, ghMaintainer, ghEdit)
	if err == nil {
		r.comment = c
		var d fakegithub.Delivery
		d, err = fakegithub.Send(ctx, nil, r.url, ghSecret, githubbot.EventIssueComment, r.gh.IssueCommentEvent("created", c))
		if err == nil && d.Status != http.StatusAccepted {
			err = fmt.Errorf("the bot answered the delivery %d %s", d.Status, strings.TrimSpace(string(d.Response)))
		}
	}
	r.done <- err
}

// check reads the pull request after the session ended: the escalation's comment, and one
// reply to the edit saying it answered.
func (r *githubRig) check(_ []contract.Event, _ contract.Summary) error {
	select {
	case err := <-r.done:
		if err != nil {
			return fmt.Errorf("the /keel edit comment: %w", err)
		}
	case <-time.After(10 * time.Second):
		return fmt.Errorf("the session never escalated, or the /keel edit delivery never returned")
	}
	r.bot.Wait() // the reply is posted after the answer reached the session
	var notices, replies int
	for _, c := range r.gh.Comments(ghRepo, ghPR) {
		switch {
		case strings.Contains(c.Body, "<!-- keel-escalation:"):
			notices++
		case strings.Contains(c.Body, githubbot.ReplyMarker(r.comment.ID)) && strings.Contains(c.Body, "answered: edit"):
			replies++
		}
	}
	if notices != 1 || replies != 1 {
		return fmt.Errorf("%d escalation comments and %d replies to /keel edit on %s#%d, want 1 and 1", notices, replies, ghRepo, ghPR)
	}
	return nil
}
