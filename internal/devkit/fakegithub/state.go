package fakegithub

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// PR is a pull request the server knows. Its number is also the issue number comments and labels
// go to, as on GitHub.
type PR struct {
	Number int
	// Author is the login of the user who opened it.
	Author  string
	Title   string
	Body    string
	HeadSHA string
	// State is "open" or "closed" (empty means "open"); Merged says a closed one was merged.
	State  string
	Merged bool
	// HeadRef and BaseRef are branch names; empty means "feature" and "main".
	HeadRef, BaseRef string
	// HeadRepo is "owner/name" of the repository the head branch lives in: a fork's, for a pull
	// request from a fork; empty means the pull request's own repository.
	HeadRepo string
	Files    []File
}

// File is one changed file of a pull request.
type File struct {
	// Name is the path in the repository.
	Name string
	// Status is "added", "modified", "removed" or "renamed"; empty means "modified".
	Status               string
	Additions, Deletions int
	Patch                string
}

// Comment is an issue comment on a pull request.
type Comment struct {
	ID int64
	// Repo is "owner/name"; Issue the pull request number.
	Repo   string
	Issue  int
	Author string
	Body   string
	// Created and Updated are when the server stored it and when it last changed.
	Created, Updated time.Time
}

// Reaction is an emoji reaction on an issue comment.
type Reaction struct {
	ID int64
	// User is the login who reacted; Content is GitHub's name ("+1", "eyes", "rocket", ...).
	User, Content string
}

// state is everything the server holds; guarded by Server.mu.
type state struct {
	nextID    int64
	prs       map[string]PR // by prKey
	comments  []Comment     // in creation order, IDs ascending
	labels    map[string][]string
	perms     map[string]string // by repo + "\x00" + login
	teams     map[string]string // by org + "\x00" + slug + "\x00" + login: the role
	reactions map[int64][]Reaction
}

func newState() state {
	return state{nextID: 1000, prs: map[string]PR{}, labels: map[string][]string{}, perms: map[string]string{},
		teams: map[string]string{}, reactions: map[int64][]Reaction{}}
}

// prKey names a pull request; GitHub's owner and repository names ignore case, so the key does.
func prKey(repo string, n int) string { return fmt.Sprintf("%s#%d", strings.ToLower(repo), n) }

func (st *state) id() int64 {
	st.nextID++
	return st.nextID
}

func (st *state) comment(id int64) (int, bool) {
	i, ok := slices.BinarySearchFunc(st.comments, id, func(c Comment, id int64) int {
		switch {
		case c.ID < id:
			return -1
		case c.ID > id:
			return 1
		}
		return 0
	})
	return i, ok
}

// AddPR makes a pull request of repo ("owner/name") known, replacing one with the same number.
func (s *Server) AddPR(repo string, pr PR) {
	if pr.HeadRef == "" {
		pr.HeadRef = "feature"
	}
	if pr.BaseRef == "" {
		pr.BaseRef = "main"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state.prs[prKey(repo, pr.Number)] = pr
}

// SetPermission sets login's permission on repo: "admin", "maintain", "write", "triage", "read"
// or "none". A user never set reads as "none".
func (s *Server) SetPermission(repo, login, permission string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state.perms[strings.ToLower(repo)+"\x00"+login] = permission
}

// AddTeamMember makes login an active member of the team org/slug with role "member" or
// "maintainer" (empty means "member").
func (s *Server) AddTeamMember(org, slug, login, role string) {
	if role == "" {
		role = "member"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state.teams[org+"\x00"+slug+"\x00"+login] = role
}

// AddComment stores a comment by author on the pull request, as if that person had written it,
// and returns it (its ID is what a webhook delivery and the reaction endpoints use). It fails when
// the pull request is unknown.
func (s *Server) AddComment(repo string, pr int, author, body string) (Comment, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addComment(repo, pr, author, body)
}

func (s *Server) addComment(repo string, pr int, author, body string) (Comment, error) {
	if _, ok := s.state.prs[prKey(repo, pr)]; !ok {
		return Comment{}, fmt.Errorf("no pull request %s#%d (add it with AddPR)", repo, pr)
	}
	now := time.Now().UTC().Truncate(time.Second)
	c := Comment{ID: s.state.id(), Repo: repo, Issue: pr, Author: author, Body: body, Created: now, Updated: now}
	s.state.comments = append(s.state.comments, c)
	return c, nil
}

// Comments returns the comments on the pull request, oldest first.
func (s *Server) Comments(repo string, pr int) []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Comment
	for _, c := range s.state.comments {
		if strings.EqualFold(c.Repo, repo) && c.Issue == pr {
			out = append(out, c)
		}
	}
	return out
}

// Labels returns the labels on the pull request, in the order they were first added.
func (s *Server) Labels(repo string, pr int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.state.labels[prKey(repo, pr)]...)
}

// Reactions returns the reactions on the issue comment with this ID, oldest first.
func (s *Server) Reactions(commentID int64) []Reaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Reaction(nil), s.state.reactions[commentID]...)
}
