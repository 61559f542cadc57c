package fakegithub

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/go-github/v84/github"
)

// maxBody bounds a request body.
const maxBody = 1 << 20

// MaxCommentBody is the longest comment body GitHub takes, in characters; a longer one is refused
// with 422.
const MaxCommentBody = 65536

// Pagination as GitHub does it: per_page defaults to 30 and is capped at 100.
const (
	defaultPerPage = 30
	maxPerPage     = 100
)

// reactionContents are the reactions GitHub accepts.
var reactionContents = []string{"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"}

func (s *Server) routes() {
	m := s.mux
	m.HandleFunc("GET /user", s.getUser)
	m.HandleFunc("GET /repos/{owner}/{repo}/pulls/{number}", s.getPR)
	m.HandleFunc("GET /repos/{owner}/{repo}/pulls/{number}/files", s.listFiles)
	// "issues/{number}/comments" and "issues/comments/{id}" overlap as patterns (both match
	// issues/comments/comments), so one handler per method sorts the two shapes out.
	m.HandleFunc("GET /repos/{owner}/{repo}/issues/{a}/{b}", s.issueGet)
	m.HandleFunc("POST /repos/{owner}/{repo}/issues/{a}/{b}", s.issuePost)
	m.HandleFunc("PATCH /repos/{owner}/{repo}/issues/comments/{id}", s.editComment)
	m.HandleFunc("DELETE /repos/{owner}/{repo}/issues/comments/{id}", s.deleteComment)
	m.HandleFunc("GET /repos/{owner}/{repo}/issues/comments/{id}/reactions", s.listReactions)
	m.HandleFunc("POST /repos/{owner}/{repo}/issues/comments/{id}/reactions", s.addReaction)
	m.HandleFunc("GET /repos/{owner}/{repo}/collaborators/{user}/permission", s.permission)
	m.HandleFunc("GET /orgs/{org}/teams/{slug}/memberships/{user}", s.membership)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { writeError(w, http.StatusNotFound, "Not Found") })
}

func repoOf(r *http.Request) string { return r.PathValue("owner") + "/" + r.PathValue("repo") }

// getUser answers who the token acts as, as GitHub does for a user's token; with Options.NoUser
// it answers as for a GitHub App's installation token, which may not read it.
func (s *Server) getUser(w http.ResponseWriter, _ *http.Request) {
	if s.opts.NoUser {
		writeError(w, http.StatusForbidden, "Resource not accessible by integration")
		return
	}
	writeJSON(w, http.StatusOK, user(s.opts.Login))
}

// tooLong answers GitHub's 422 for a comment body over MaxCommentBody characters.
func tooLong(w http.ResponseWriter, body string) bool {
	if utf8.RuneCountInString(body) <= MaxCommentBody {
		return false
	}
	writeValidation(w, "IssueComment", "body", "custom")
	return true
}

// pr finds the pull request the path names, or answers 404.
func (s *Server) pr(w http.ResponseWriter, r *http.Request, number string) (PR, bool) {
	n, err := strconv.Atoi(number)
	if err != nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return PR{}, false
	}
	s.mu.Lock()
	p, ok := s.state.prs[prKey(repoOf(r), n)]
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
	}
	return p, ok
}

func (s *Server) getPR(w http.ResponseWriter, r *http.Request) {
	p, ok := s.pr(w, r, r.PathValue("number"))
	if ok {
		writeJSON(w, http.StatusOK, s.toPR(repoOf(r), p))
	}
}

func (s *Server) listFiles(w http.ResponseWriter, r *http.Request) {
	p, ok := s.pr(w, r, r.PathValue("number"))
	if !ok {
		return
	}
	lo, hi := s.paginate(w, r, len(p.Files))
	out := []*github.CommitFile{}
	for _, f := range p.Files[lo:hi] {
		status := f.Status
		if status == "" {
			status = "modified"
		}
		out = append(out, &github.CommitFile{
			Filename: github.Ptr(f.Name), Status: github.Ptr(status), Additions: github.Ptr(f.Additions),
			Deletions: github.Ptr(f.Deletions), Changes: github.Ptr(f.Additions + f.Deletions), Patch: github.Ptr(f.Patch),
		})
	}
	writeJSON(w, http.StatusOK, out)
}

// issueGet serves GET issues/{number}/comments (list) and GET issues/comments/{id} (one).
func (s *Server) issueGet(w http.ResponseWriter, r *http.Request) {
	a, b := r.PathValue("a"), r.PathValue("b")
	switch {
	case a == "comments":
		s.getComment(w, r, b)
	case b == "comments":
		s.listComments(w, r, a)
	default:
		writeError(w, http.StatusNotFound, "Not Found")
	}
}

// issuePost serves POST issues/{number}/comments and POST issues/{number}/labels.
func (s *Server) issuePost(w http.ResponseWriter, r *http.Request) {
	switch r.PathValue("b") {
	case "comments":
		s.createComment(w, r, r.PathValue("a"))
	case "labels":
		s.addLabels(w, r, r.PathValue("a"))
	default:
		writeError(w, http.StatusNotFound, "Not Found")
	}
}

func (s *Server) listComments(w http.ResponseWriter, r *http.Request, number string) {
	p, ok := s.pr(w, r, number)
	if !ok {
		return
	}
	all := s.Comments(repoOf(r), p.Number)
	lo, hi := s.paginate(w, r, len(all))
	out := []*github.IssueComment{}
	for _, c := range all[lo:hi] {
		out = append(out, s.toComment(c))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getComment(w http.ResponseWriter, r *http.Request, id string) {
	c, ok := s.findComment(w, r, id)
	if ok {
		writeJSON(w, http.StatusOK, s.toComment(c))
	}
}

func (s *Server) createComment(w http.ResponseWriter, r *http.Request, number string) {
	p, ok := s.pr(w, r, number)
	if !ok {
		return
	}
	var in struct {
		Body *string `json:"body"`
	}
	if !readJSON(w, r, &in) {
		return
	}
	if in.Body == nil || *in.Body == "" {
		writeValidation(w, "IssueComment", "body", "missing_field")
		return
	}
	if tooLong(w, *in.Body) {
		return
	}
	s.mu.Lock()
	c, err := s.addComment(repoOf(r), p.Number, s.opts.Login, *in.Body)
	s.mu.Unlock()
	if err != nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusCreated, s.toComment(c))
}

func (s *Server) editComment(w http.ResponseWriter, r *http.Request) {
	c, ok := s.findComment(w, r, r.PathValue("id"))
	if !ok {
		return
	}
	var in struct {
		Body *string `json:"body"`
	}
	if !readJSON(w, r, &in) {
		return
	}
	if in.Body == nil || *in.Body == "" {
		writeValidation(w, "IssueComment", "body", "missing_field")
		return
	}
	if tooLong(w, *in.Body) {
		return
	}
	s.mu.Lock()
	if i, ok := s.state.comment(c.ID); ok {
		s.state.comments[i].Body = *in.Body
		s.state.comments[i].Updated = time.Now().UTC().Truncate(time.Second)
		c = s.state.comments[i]
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, s.toComment(c))
}

func (s *Server) deleteComment(w http.ResponseWriter, r *http.Request) {
	c, ok := s.findComment(w, r, r.PathValue("id"))
	if !ok {
		return
	}
	s.mu.Lock()
	if i, ok := s.state.comment(c.ID); ok {
		s.state.comments = slices.Delete(s.state.comments, i, i+1)
		delete(s.state.reactions, c.ID)
	}
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// findComment finds the comment the path names in the path's repository, or answers 404.
func (s *Server) findComment(w http.ResponseWriter, r *http.Request, id string) (Comment, bool) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err == nil {
		s.mu.Lock()
		i, ok := s.state.comment(n)
		var c Comment
		if ok {
			c = s.state.comments[i]
		}
		s.mu.Unlock()
		if ok && strings.EqualFold(c.Repo, repoOf(r)) {
			return c, true
		}
	}
	writeError(w, http.StatusNotFound, "Not Found")
	return Comment{}, false
}

// addLabels takes GitHub's two body shapes, {"labels": [...]} and a bare array, and answers
// with every label the pull request now has.
func (s *Server) addLabels(w http.ResponseWriter, r *http.Request, number string) {
	p, ok := s.pr(w, r, number)
	if !ok {
		return
	}
	var raw json.RawMessage
	if !readJSON(w, r, &raw) {
		return
	}
	var names []string
	if json.Unmarshal(raw, &names) != nil {
		var in struct {
			Labels []string `json:"labels"`
		}
		if json.Unmarshal(raw, &in) != nil {
			writeError(w, http.StatusBadRequest, "Problems parsing JSON")
			return
		}
		names = in.Labels
	}
	key := prKey(repoOf(r), p.Number)
	s.mu.Lock()
	for _, n := range names {
		if n != "" && !slices.Contains(s.state.labels[key], n) {
			s.state.labels[key] = append(s.state.labels[key], n)
		}
	}
	all := append([]string(nil), s.state.labels[key]...)
	s.mu.Unlock()
	out := []*github.Label{}
	for i, n := range all {
		out = append(out, &github.Label{ID: github.Ptr(int64(i + 1)), Name: github.Ptr(n), Color: github.Ptr("ededed")})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) listReactions(w http.ResponseWriter, r *http.Request) {
	c, ok := s.findComment(w, r, r.PathValue("id"))
	if !ok {
		return
	}
	all := s.Reactions(c.ID)
	if want := r.URL.Query().Get("content"); want != "" {
		all = slices.DeleteFunc(all, func(x Reaction) bool { return x.Content != want })
	}
	lo, hi := s.paginate(w, r, len(all))
	out := []*github.Reaction{}
	for _, x := range all[lo:hi] {
		out = append(out, toReaction(x))
	}
	writeJSON(w, http.StatusOK, out)
}

// addReaction answers 201 with a new reaction, or 200 with the one the user already gave.
func (s *Server) addReaction(w http.ResponseWriter, r *http.Request) {
	c, ok := s.findComment(w, r, r.PathValue("id"))
	if !ok {
		return
	}
	var in struct {
		Content string `json:"content"`
	}
	if !readJSON(w, r, &in) {
		return
	}
	if !slices.Contains(reactionContents, in.Content) {
		writeValidation(w, "Reaction", "content", "invalid")
		return
	}
	s.mu.Lock()
	for _, x := range s.state.reactions[c.ID] {
		if x.User == s.opts.Login && x.Content == in.Content {
			s.mu.Unlock()
			writeJSON(w, http.StatusOK, toReaction(x))
			return
		}
	}
	x := Reaction{ID: s.state.id(), User: s.opts.Login, Content: in.Content}
	s.state.reactions[c.ID] = append(s.state.reactions[c.ID], x)
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, toReaction(x))
}

func (s *Server) permission(w http.ResponseWriter, r *http.Request) {
	login := r.PathValue("user")
	s.mu.Lock()
	perm, ok := s.state.perms[strings.ToLower(repoOf(r))+"\x00"+login]
	s.mu.Unlock()
	if !ok {
		perm = "none"
	}
	writeJSON(w, http.StatusOK, &github.RepositoryPermissionLevel{
		Permission: github.Ptr(perm), RoleName: github.Ptr(perm), User: user(login),
	})
}

// membership answers 404 for someone not in the team, as GitHub does.
func (s *Server) membership(w http.ResponseWriter, r *http.Request) {
	org, slug, login := r.PathValue("org"), r.PathValue("slug"), r.PathValue("user")
	s.mu.Lock()
	role, ok := s.state.teams[org+"\x00"+slug+"\x00"+login]
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusOK, &github.Membership{
		URL:   github.Ptr(fmt.Sprintf("%s/orgs/%s/teams/%s/memberships/%s", s.BaseURL(), org, slug, login)),
		State: github.Ptr("active"), Role: github.Ptr(role),
	})
}

// paginate reads page and per_page, sets GitHub's Link header, and returns the slice bounds of
// the page within n items.
func (s *Server) paginate(w http.ResponseWriter, r *http.Request, n int) (lo, hi int) {
	q := r.URL.Query()
	per, err := strconv.Atoi(q.Get("per_page"))
	if err != nil || per <= 0 {
		per = defaultPerPage
	}
	per = min(per, maxPerPage)
	page, err := strconv.Atoi(q.Get("page"))
	if err != nil || page <= 0 {
		page = 1
	}
	last := max(1, (n+per-1)/per)
	link := func(p int, rel string) string {
		v := url.Values{}
		for k, vs := range q {
			v[k] = vs
		}
		v.Set("page", strconv.Itoa(p))
		v.Set("per_page", strconv.Itoa(per))
		return fmt.Sprintf(`<%s%s?%s>; rel="%s"`, s.BaseURL(), r.URL.Path, v.Encode(), rel)
	}
	var links []string
	if page < last {
		links = append(links, link(page+1, "next"), link(last, "last"))
	}
	if page > 1 {
		links = append(links, link(1, "first"), link(min(page-1, last), "prev"))
	}
	if len(links) > 0 {
		h := links[0]
		for _, l := range links[1:] {
			h += ", " + l
		}
		w.Header().Set("Link", h)
	}
	lo = min((page-1)*per, n)
	return lo, min(lo+per, n)
}

func user(login string) *github.User {
	return &github.User{Login: github.Ptr(login), Type: github.Ptr("User")}
}

func (s *Server) toComment(c Comment) *github.IssueComment {
	return &github.IssueComment{
		ID: github.Ptr(c.ID), Body: github.Ptr(c.Body), User: user(c.Author),
		CreatedAt: &github.Timestamp{Time: c.Created}, UpdatedAt: &github.Timestamp{Time: c.Updated},
		HTMLURL:  github.Ptr(fmt.Sprintf("%s/%s/pull/%d#issuecomment-%d", s.BaseURL(), c.Repo, c.Issue, c.ID)),
		IssueURL: github.Ptr(fmt.Sprintf("%s/repos/%s/issues/%d", s.BaseURL(), c.Repo, c.Issue)),
		URL:      github.Ptr(fmt.Sprintf("%s/repos/%s/issues/comments/%d", s.BaseURL(), c.Repo, c.ID)),
	}
}

func (s *Server) toPR(repo string, p PR) *github.PullRequest {
	return &github.PullRequest{
		Number: github.Ptr(p.Number), Title: github.Ptr(p.Title), Body: github.Ptr(p.Body), State: github.Ptr(cmp.Or(p.State, "open")),
		Merged: github.Ptr(p.Merged), User: user(p.Author),
		HTMLURL: github.Ptr(fmt.Sprintf("%s/%s/pull/%d", s.BaseURL(), repo, p.Number)),
		URL:     github.Ptr(fmt.Sprintf("%s/repos/%s/pulls/%d", s.BaseURL(), repo, p.Number)),
		Head:    &github.PullRequestBranch{SHA: github.Ptr(p.HeadSHA), Ref: github.Ptr(p.HeadRef), Repo: repository(cmp.Or(p.HeadRepo, repo))},
		Base:    &github.PullRequestBranch{Ref: github.Ptr(p.BaseRef), Repo: repository(repo)},
	}
}

func toReaction(x Reaction) *github.Reaction {
	return &github.Reaction{ID: github.Ptr(x.ID), User: user(x.User), Content: github.Ptr(x.Content)}
}

// readJSON decodes a request body, answering GitHub's 400 when it does not parse.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "Problems parsing JSON")
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError writes GitHub's error body: {"message": ..., "documentation_url": ...}.
func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"message": msg, "documentation_url": "https://docs.github.com/rest"})
}

// writeValidation writes GitHub's 422 body naming the resource and field that are wrong.
func writeValidation(w http.ResponseWriter, resource, field, code string) {
	writeJSON(w, http.StatusUnprocessableEntity, map[string]any{
		"message": "Validation Failed", "documentation_url": "https://docs.github.com/rest",
		"errors": []map[string]string{{"resource": resource, "field": field, "code": code}},
	})
}
