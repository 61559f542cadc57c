package contract

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
)

// Source is where a session's files come from when it names no directory of its own: a git
// repository at one exact commit (or a ref the worker resolves to one). The worker that runs the
// session materializes a private workspace for it from its per-repository object cache
// (internal/workspace); the session's Workdir is then that workspace, wherever the worker keeps it.
type Source struct {
	// Repo is the repository: an http(s) URL, or owner/name for GitHub (RepoURL spells it out).
	Repo string `json:"repo"`
	// Commit is the exact commit, a full hex SHA; empty when Ref names it instead.
	Commit string `json:"commit,omitempty"`
	// Ref is a branch or tag the worker resolves to a commit when it first materializes the
	// workspace; empty when Commit is given.
	Ref string `json:"ref,omitempty"`
	// Workspace is the session whose workspace this one works in: a continued session keeps its
	// predecessor's files. Empty means the session's own.
	Workspace string `json:"workspace,omitempty"`
	// From, when set, is the recorded state a new workspace starts from instead of the commit's
	// checkout: another session's files after one of its turns (starter fork --turn N), restored
	// from Keel's store by whichever worker runs the session.
	From *WorkspaceAt `json:"from,omitempty"`
}

// WorkspaceAt names a session's recorded workspace after one of its turns.
type WorkspaceAt struct {
	Session string `json:"session"`
	Turn    int    `json:"turn"`
}

// WorkspaceOf is the session whose workspace the session sessionID works in.
func (s Source) WorkspaceOf(sessionID string) string {
	if s.Workspace != "" {
		return s.Workspace
	}
	return sessionID
}

// Check says what is wrong with a source, naming the field: a repository RepoURL accepts, and
// exactly one of a full commit SHA and a ref that git would accept as a branch or tag name.
func (s Source) Check() error {
	if _, err := RepoURL(s.Repo, ""); err != nil {
		return err
	}
	switch {
	case s.Commit == "" && s.Ref == "":
		return fmt.Errorf("repository %q needs a commit or a ref to check out", s.Repo)
	case s.Commit != "" && s.Ref != "":
		return fmt.Errorf("give a commit or a ref, not both (commit %q, ref %q)", s.Commit, s.Ref)
	case s.Commit != "" && !fullSHA.MatchString(s.Commit):
		return fmt.Errorf("commit %q is not a full hex commit SHA (40 or 64 digits): the workspace is checked out at exactly that commit", s.Commit)
	case s.Ref != "":
		return checkRef(s.Ref)
	}
	return nil
}

var fullSHA = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

// refText is what a branch or tag name may hold here: a subset of git's rules (git
// check-ref-format) that leaves out everything a shell, an option parser or a refspec reads.
var refText = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._/-]*$`)

func checkRef(ref string) error {
	bad := len(ref) > 255 || !refText.MatchString(ref) || strings.Contains(ref, "..") || strings.Contains(ref, "//") ||
		strings.HasSuffix(ref, "/") || strings.HasSuffix(ref, ".") || strings.HasSuffix(ref, ".lock") || strings.Contains(ref, "/.")
	if bad {
		return fmt.Errorf("ref %q is not a branch or tag name (letters, digits, '.', '_', '-' and '/' between parts)", ref)
	}
	return nil
}

// RepoURL is the URL a repository is fetched from: owner/name means a repository of the GitHub
// at github, a base URL GitHubURL accepts (github/owner/name.git; empty means DefaultGitHubURL);
// otherwise an http or https URL without credentials in it. Local paths and file:// URLs are
// refused: a session must not read the worker's own repositories. Whether a repository is
// acceptable does not depend on github, so the starter, the GitHub bot and the worker agree on it.
func RepoURL(repo, github string) (string, error) {
	if owner, name, ok := strings.Cut(repo, "/"); ok && !strings.Contains(repo, ":") && repoPart.MatchString(owner) &&
		repoPart.MatchString(name) && owner != "." && owner != ".." && name != "." && name != ".." {
		if github == "" {
			github = DefaultGitHubURL
		}
		return strings.TrimRight(github, "/") + "/" + owner + "/" + strings.TrimSuffix(name, ".git") + ".git", nil
	}
	u, err := url.Parse(repo)
	switch {
	case repo == "":
		return "", fmt.Errorf("the repository is empty: give an https URL or owner/name")
	case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		return "", fmt.Errorf("repository %q is neither owner/name nor an http(s) URL (local paths and file:// are refused)", repo)
	case u.User != nil:
		return "", fmt.Errorf("repository %q carries credentials in its URL: give the worker a token instead (workspaces.git_token)", u.Redacted())
	case u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(repo, " \t\r\n\\"):
		return "", fmt.Errorf("repository %q has a query, fragment or blank in it", repo)
	}
	return u.String(), nil
}

// GitHubURL checks the base URL of the GitHub that owner/name repositories are fetched from and
// pushed to (workspaces.github_url: https://github.com, a GitHub Enterprise Server's
// https://HOST) and returns it as NormalizeBaseURL writes it. Plain http is accepted on loopback
// only, where nothing between the worker and the server reads the token or the code.
func GitHubURL(raw string) (string, error) {
	if p, err := url.Parse(strings.TrimSpace(raw)); err == nil && p.User != nil {
		return "", fmt.Errorf("the base URL %q carries credentials: give the worker a token instead (workspaces.git_token)", p.Redacted())
	}
	u, err := NormalizeBaseURL(raw)
	if err != nil {
		return "", err
	}
	if strings.HasPrefix(u, "http:") && !Loopback(u) {
		return "", fmt.Errorf("the base URL %q is plain http on a host other than this machine: use https", u)
	}
	return u, nil
}

// Loopback says whether a URL's host is this machine (where plain http carries a token safely).
func Loopback(rawURL string) bool {
	u, err := url.Parse(rawURL)
	return err == nil && LoopbackHost(u.Hostname())
}

// LoopbackHost says whether a host name or IP address (without a port) is this machine:
// localhost, in any case, or a loopback address.
func LoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
