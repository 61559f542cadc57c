package githubbot

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-github/v84/github"

	"github.com/keelrun/keel/escalation"
)

// replied reports whether the bot's reply to the comment is on the pull request already: a
// comment by self with the reply's marker. The marker in anybody else's comment counts for
// nothing, or anyone who can comment could answer for the bot and so veto a command.
func (b *Bot) replied(ctx context.Context, pr pullRequest, self string, commentID int64) (bool, error) {
	marker := ReplyMarker(commentID)
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	for c, err := range b.cfg.GitHub.Issues.ListCommentsIter(ctx, pr.owner, pr.name, pr.number, opts) {
		if err != nil {
			return false, fmt.Errorf("listing the comments of %s: %w", pr, err)
		}
		if strings.Contains(c.GetBody(), marker) {
			if escalation.OwnComment(c, self) {
				return true, nil
			}
			b.cfg.Logger.Warn("github comment holds the bot's reply marker but is not the bot's; ignored",
				"pr", pr.String(), "comment", c.GetID(), "author", c.GetUser().GetLogin(), "for", commentID)
		}
	}
	return false, nil
}

// reply claims the comment with the bot's reaction and, when this delivery created the
// reaction, posts the reply. A reaction that was there already means another delivery or
// replica is replying, and nothing more is posted.
func (b *Bot) reply(ctx context.Context, pr pullRequest, commentID int64, body string) error {
	_, resp, err := b.cfg.GitHub.Reactions.CreateIssueCommentReaction(ctx, pr.owner, pr.name, commentID, claimReaction)
	if err != nil {
		return fmt.Errorf("reacting to comment %d on %s: %w", commentID, pr, err)
	}
	if resp.StatusCode != http.StatusCreated {
		b.cfg.Logger.Info("github comment claimed already, no second reply", "pr", pr.String(), "comment", commentID)
		return nil
	}
	if _, _, err := b.cfg.GitHub.Issues.CreateComment(ctx, pr.owner, pr.name, pr.number, &github.IssueComment{Body: github.Ptr(body)}); err != nil {
		return fmt.Errorf("replying on %s: %w", pr, err)
	}
	return nil
}
