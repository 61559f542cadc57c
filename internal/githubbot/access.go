package githubbot

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/google/go-github/v84/github"
)

// writeRoles are the repository roles that may use the commands: GitHub reports maintain as
// write in the permission field and names it in role_name.
var writeRoles = []string{"admin", "maintain", "write"}

// team is one "org/team-slug" entry of Config.Teams.
type team struct{ org, slug string }

func parseTeam(s string) (team, error) {
	org, slug, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok || org == "" || slug == "" || strings.Contains(slug, "/") {
		return team{}, fmt.Errorf("team %q is not org/team-slug", s)
	}
	return team{org, slug}, nil
}

// mayUse says whether login may steer the pull request's sessions: write access to the
// repository, or active membership of a configured team. A refusal comes with the reply that
// says why, and names the fork when the pull request's own author asks from one.
func (b *Bot) mayUse(ctx context.Context, pr pullRequest, login string) (ok bool, why string, err error) {
	lvl, _, err := b.cfg.GitHub.Repositories.GetPermissionLevel(ctx, pr.owner, pr.name, login)
	if err != nil {
		return false, "", fmt.Errorf("reading the permission of %s on %s: %w", login, pr.repo(), err)
	}
	if slices.Contains(writeRoles, lvl.GetPermission()) || slices.Contains(writeRoles, lvl.GetRoleName()) {
		return true, "", nil
	}
	var teams []string
	for _, s := range b.cfg.Teams {
		t, _ := parseTeam(s)
		m, resp, err := b.cfg.GitHub.Teams.GetTeamMembershipBySlug(ctx, t.org, t.slug, login)
		var gerr *github.ErrorResponse
		switch {
		case errors.As(err, &gerr) && resp != nil && resp.StatusCode == http.StatusNotFound:
		case err != nil:
			return false, "", fmt.Errorf("reading the membership of %s in %s/%s: %w", login, t.org, t.slug, err)
		case m.GetState() == "active":
			return true, "", nil
		}
		teams = append(teams, "@"+t.org+"/"+t.slug)
	}
	who := "people with write access to " + pr.repo()
	if len(teams) > 0 {
		who += " or in " + strings.Join(teams, ", ")
	}
	perm := lvl.GetRoleName()
	if perm == "" {
		perm = lvl.GetPermission()
	}
	why = fmt.Sprintf("only %s may steer Keel's sessions; your permission is %s. Nothing was sent to the session.", who, perm)
	if login == pr.author {
		fork, err := b.forkOf(ctx, pr)
		if err != nil {
			return false, "", err
		}
		if fork != "" {
			why = fmt.Sprintf("this pull request comes from a fork (%s), and its author may not steer Keel's sessions: %s", fork, why)
		}
	}
	return false, why, nil
}

// forkOf returns the head repository of a pull request from a fork, or "" for one from a branch
// of the repository itself.
func (b *Bot) forkOf(ctx context.Context, pr pullRequest) (string, error) {
	p, _, err := b.cfg.GitHub.PullRequests.Get(ctx, pr.owner, pr.name, pr.number)
	if err != nil {
		return "", fmt.Errorf("reading pull request %s: %w", pr, err)
	}
	if head := p.GetHead().GetRepo().GetFullName(); head != "" && !strings.EqualFold(head, pr.repo()) {
		return head, nil
	}
	return "", nil
}
