package githubbot

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/google/go-github/v84/github"

	"github.com/keelrun/keel/escalation"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/textfmt"
)

// Prefix starts a command line in a pull request comment, the word the escalation comment tells
// people to use.
const Prefix = escalation.GitHubCommand

// Verbs of the commands: the escalation answers, the approval decisions and say.
const (
	VerbRetry   = contract.ActionRetry
	VerbAbort   = contract.ActionAbort
	VerbEdit    = contract.ActionEdit
	VerbApprove = contract.ActionApprove
	VerbDeny    = contract.ActionDeny
	VerbSay     = contract.ActionSay
)

// Via names the GitHub bot in answers and messages, as "slack" and "terminal" name theirs.
const Via = "github"

// usage is the reply to a command the bot does not know or one that lacks its text.
const usage = "Keel takes `/keel retry`, `/keel abort`, `/keel edit <text>`, `/keel approve`, `/keel deny` " +
	"and `/keel say <text>`, one per comment, at the start of a line."

// command is one `/keel` line of a comment: its verb and, for edit and say, the text after it
// (the rest of the comment as written, with its line breaks).
type command struct {
	verb, text string
}

// parseCommand finds the comment's command: the first line of plain text that starts with /keel
// (plainLines: not code, not an HTML comment, not a quote). ok is false when there is none; a
// command that is not well formed has an empty verb.
func parseCommand(body string) (cmd command, ok bool) {
	lines := strings.Split(strings.ReplaceAll(body, "\r\n", "\n"), "\n")
	plain := plainLines(lines)
	for i, line := range lines {
		if !plain[i] {
			continue
		}
		line = strings.TrimSpace(line)
		if len(line) < len(Prefix) || !strings.EqualFold(line[:len(Prefix)], Prefix) {
			continue
		}
		rest := line[len(Prefix):]
		if rest != "" && !unicode.IsSpace(rune(rest[0])) {
			continue
		}
		rest = strings.TrimSpace(rest)
		verb, text := rest, ""
		if i := strings.IndexFunc(rest, unicode.IsSpace); i >= 0 {
			verb, text = rest[:i], rest[i:]
		}
		text = strings.TrimSpace(strings.Join(append([]string{text}, lines[i+1:]...), "\n"))
		switch verb = strings.ToLower(verb); verb {
		case VerbRetry, VerbAbort, VerbApprove, VerbDeny:
			return command{verb: verb}, true
		case VerbEdit, VerbSay:
			if text == "" {
				return command{}, true
			}
			return command{verb: verb, text: text}, true
		}
		return command{}, true
	}
	return command{}, false
}

// plainLines says which lines of a comment GitHub shows as plain text that starts at the line's
// start, the way its Markdown reads them: not in a fenced code block (``` or ~~~, to its closing
// fence or the end), not an indented code line (four spaces or a tab), not in an HTML comment
// (<!-- to -->), not a quote (> and the lines that continue its paragraph). A command in code,
// a comment or a quote is something shown or cited, not something asked.
func plainLines(lines []string) []bool {
	plain := make([]bool, len(lines))
	var fence string // the open fence's run of ` or ~; "" outside a fence
	inComment, inQuote := false, false
	for i, line := range lines {
		text, indent := dedent(line)
		switch {
		case fence != "":
			if rest := strings.TrimLeft(text, fence[:1]); indent < 4 && len(text)-len(rest) >= len(fence) && strings.TrimSpace(rest) == "" {
				fence = ""
			}
			continue
		case inComment:
			if strings.Contains(line, "-->") {
				inComment = false
			}
			continue
		case strings.TrimSpace(line) == "":
			inQuote = false
			continue
		case indent >= 4:
			// An indented code line, or a line continuing a paragraph: either way not at its start.
			continue
		case strings.HasPrefix(text, ">"):
			inQuote = true
			continue
		case inQuote:
			// A lazy continuation of the quote's paragraph.
			continue
		}
		if f := openFence(text); f != "" {
			fence = f
			continue
		}
		if strings.HasPrefix(text, "<!--") {
			inComment = !strings.Contains(text[4:], "-->")
			continue
		}
		if j := strings.Index(text, "<!--"); j >= 0 {
			// Only what precedes the comment shows at the line's start.
			inComment = !strings.Contains(text[j+4:], "-->")
		}
		plain[i] = true
	}
	return plain
}

// dedent is the line without its leading spaces and tabs, and their width (a tab reaching the
// next multiple of four), which says whether it is indented code.
func dedent(line string) (string, int) {
	w := 0
	for i, r := range line {
		switch r {
		case ' ':
			w++
		case '\t':
			w += 4 - w%4
		default:
			return line[i:], w
		}
	}
	return "", w
}

// openFence returns the fence a line opens (three or more ` or ~; a ``` fence's info string
// holds no `), or "".
func openFence(text string) string {
	for _, c := range "`~" {
		n := 0
		for n < len(text) && rune(text[n]) == c {
			n++
		}
		if n >= 3 && (c == '~' || !strings.ContainsRune(text[n:], '`')) {
			return text[:n]
		}
	}
	return ""
}

// ReplyMarker is the hidden marker of the bot's reply to one comment: the bot looks for it
// before doing anything, so a comment is answered once.
func ReplyMarker(commentID int64) string { return fmt.Sprintf("<!-- keel-command:%d -->", commentID) }

// claimReaction is the reaction the bot puts on a command's comment before it replies. GitHub
// creates a user's reaction once (201) and answers 200 after that, so of two replicas racing on
// the same comment only the one that created it replies.
const claimReaction = "eyes"

// pullRequest is the pull request a comment was made on.
type pullRequest struct {
	owner, name string
	number      int
	// author is who opened it.
	author string
}

func (p pullRequest) repo() string { return p.owner + "/" + p.name }

func (p pullRequest) String() string {
	return contract.GitHubContext{Repo: p.repo(), PR: p.number}.String()
}

// handleComment acts on a new pull request comment that holds a command, once: a comment that
// has the bot's reply already is left alone. The bot's own comments are never commands.
func (b *Bot) handleComment(ctx context.Context, ev *github.IssueCommentEvent) error {
	c := ev.GetComment()
	if ev.GetAction() != "created" || ev.GetIssue().GetPullRequestLinks() == nil || c.GetUser().GetType() == "Bot" {
		return nil
	}
	cmd, ok := parseCommand(c.GetBody())
	if !ok {
		return nil
	}
	self, err := b.self(ctx)
	if err != nil {
		return err
	}
	if escalation.OwnComment(c, self) {
		return nil
	}
	pr := pullRequest{owner: ev.GetRepo().GetOwner().GetLogin(), name: ev.GetRepo().GetName(),
		number: ev.GetIssue().GetNumber(), author: ev.GetIssue().GetUser().GetLogin()}
	if pr.owner == "" || pr.name == "" {
		pr.owner, pr.name, _ = strings.Cut(ev.GetRepo().GetFullName(), "/")
	}
	login, id := c.GetUser().GetLogin(), c.GetID()
	done, err := b.replied(ctx, pr, self, id)
	if err != nil || done {
		return err
	}
	var text string
	switch allowed, why, err := b.mayUse(ctx, pr, login); {
	case err != nil:
		return err
	case !allowed:
		text = why
	case ev.GetIssue().GetState() == "closed":
		// A closed pull request's jobs are cancelled when it closes; nothing on it is steered.
		text = fmt.Sprintf("%s is closed: Keel takes no commands on it, and nothing was sent. Reopen it to start its jobs again.", pr)
	case cmd.verb == "":
		text = usage
	default:
		if text, err = b.run(ctx, cmd, pr, login, id); err != nil {
			return err
		}
	}
	return b.reply(ctx, pr, id, fmt.Sprintf("@%s %s\n\n%s\n", login, text, ReplyMarker(id)))
}

// maxNamed bounds how many sessions a reply names that the command did not reach.
const maxNamed = 10

// run carries the command to the sessions working on the pull request, at most
// MaxSessionsPerPR of them, and says how each took it, one line each, and which it did not reach.
func (b *Bot) run(ctx context.Context, cmd command, pr pullRequest, login string, commentID int64) (string, error) {
	ids, total, err := b.cfg.Sessions.OnPullRequest(ctx, pr.String())
	if err != nil {
		return "", err
	}
	if len(ids) == 0 {
		return fmt.Sprintf("no Keel session is running on %s; nothing was sent.", pr), nil
	}
	var rest []string
	if len(ids) > MaxSessionsPerPR {
		ids, rest = ids[:MaxSessionsPerPR], ids[MaxSessionsPerPR:]
	}
	updateID := fmt.Sprintf("github-comment/%d", commentID)
	by := Via + ":" + login
	var lines []string
	for _, wf := range ids {
		line, err := b.act(ctx, cmd, wf, updateID, by)
		if err != nil {
			b.cfg.Logger.Warn("github command", "workflow_id", wf, "verb", cmd.verb, "error", err)
			line = fmt.Sprintf("`%s %s` did not reach the session; nothing changed. Try again.", cmd.verb, wf)
		}
		lines = append(lines, fmt.Sprintf("Session `%s`: %s", wf, line))
	}
	if total <= len(ids) {
		if len(lines) == 1 {
			return lines[0], nil
		}
		return "\n- " + strings.Join(lines, "\n- "), nil
	}
	return fmt.Sprintf("this comment reached %d of the %d sessions running on %s (a command reaches at most %d).\n- %s\n\n%s",
		len(ids), total, pr, MaxSessionsPerPR, strings.Join(lines, "\n- "), notReached(cmd, rest, total-len(ids))), nil
}

// notReached names the sessions a command left out (the first maxNamed) and how to reach them.
func notReached(cmd command, rest []string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Not reached: %s", textfmt.Count(int64(n), "session"))
	named := rest[:min(len(rest), maxNamed)]
	if len(named) > 0 {
		b.WriteString(", among them `" + strings.Join(named, "`, `") + "`")
	}
	how := "`starter answer <session> <escalation> " + cmd.verb + "`"
	switch cmd.verb {
	case VerbEdit:
		how = "`starter answer <session> <escalation> edit --text <text>`"
	case VerbApprove:
		how = "`starter approve <session>`"
	case VerbDeny:
		how = "`starter approve <session> --deny`"
	case VerbSay:
		how = "`starter say <session> <text>`"
	}
	fmt.Fprintf(&b, ". Reach them one by one with %s (each notice names its own), or stop some sessions so the rest fit.", how)
	return b.String()
}

// act carries the command to one session, as the terminal would: an answer to the escalation it
// waits on, a decision on the call it waits to run, or a message.
func (b *Bot) act(ctx context.Context, cmd command, wf, updateID, by string) (string, error) {
	s := b.cfg.Sessions
	if cmd.verb == VerbSay {
		res, err := s.Say(ctx, wf, updateID, contract.Say{Text: cmd.text, By: by, Via: Via})
		if err != nil {
			return "", err
		}
		if !res.Accepted {
			return "did not take the message: " + res.Message, nil
		}
		return "message taken. " + res.Message, nil
	}
	st, err := s.Status(ctx, wf)
	if err != nil {
		return "", err
	}
	if cmd.verb == VerbApprove || cmd.verb == VerbDeny {
		return b.decide(ctx, cmd, wf, updateID, by, st)
	}
	e := st.Escalation
	switch {
	case e != nil && e.Answer != nil:
		return fmt.Sprintf("escalation `%s` was answered already by %s: %s. Nothing changed.", e.ID, e.Answer.By, e.Answer.Action), nil
	case st.Approval != nil:
		return fmt.Sprintf("it waits for approval of a `%s` call, not for an answer: use `/keel approve` or `/keel deny`.", st.Approval.Tool), nil
	case e == nil || escalation.NoticeOnly(*e):
		return "nothing waits for an answer; nothing changed.", nil
	case !slices.Contains(escalation.Choices(*e), cmd.verb):
		return fmt.Sprintf("escalation `%s` takes %s, not %s; nothing changed.", e.ID, strings.Join(escalation.Choices(*e), ", "), cmd.verb), nil
	}
	res, err := s.Answer(ctx, wf, updateID, contract.Answer{EscalationID: e.ID, Action: cmd.verb, Text: cmd.text, By: by, Via: Via})
	if err != nil {
		return "", err
	}
	if !res.Accepted {
		return fmt.Sprintf("escalation `%s` did not take %s: %s", e.ID, cmd.verb, res.Message), nil
	}
	return fmt.Sprintf("escalation `%s` answered: %s.", e.ID, cmd.verb), nil
}

// decide approves or denies the tool call the session waits to run.
func (b *Bot) decide(ctx context.Context, cmd command, wf, updateID, by string, st contract.SessionStatus) (string, error) {
	a := st.Approval
	if a == nil {
		return "no tool call waits for approval; nothing changed.", nil
	}
	res, err := b.cfg.Sessions.Approve(ctx, wf, updateID, contract.ApprovalDecision{CallID: a.CallID, Digest: a.Digest, Approve: cmd.verb == VerbApprove, By: by})
	if err != nil {
		return "", err
	}
	if !res.Accepted {
		return fmt.Sprintf("the `%s` call did not take %s: %s", a.Tool, cmd.verb, res.Message), nil
	}
	verdict := "approved"
	if cmd.verb == VerbDeny {
		verdict = "denied"
	}
	return fmt.Sprintf("the `%s` call (%s) is %s.", a.Tool, a.CallID, verdict), nil
}
